"""An engine that isolates policy failures fails only the jobs the policy cannot decide."""

import numpy as np
import pytest

from solver.engine import Engine, PolicyError
from solver.job import Allocation
from tests.solver.helpers import HOUR, job, markets


class Picky:
    """One on-demand instance per job; fails on ``bad`` jobs (raising, or answering what the
    model forbids), or on any call with ``together`` or more jobs."""

    name = "picky"

    def __init__(self, bad=(), forbidden=(), together=None):
        self.bad, self.forbidden, self.together = set(bad), set(forbidden), together
        self.calls: list[list[str]] = []

    def decide(self, obs):
        ids = [v.id for v in obs.jobs]
        self.calls.append(ids)
        if self.bad & set(ids) or (self.together and len(ids) >= self.together):
            raise ArithmeticError("no plan")
        return {i: Allocation(0, 0, 5 if i in self.forbidden else 1) for i in ids}


def engine(policy, isolate=True) -> Engine:
    e = Engine(markets(1), 0.0, HOUR, policy, isolate_failures=isolate)
    for name in ("a", "b", "c"):
        e.add_job(job(name, workload=3.0))
    return e


NOW = (np.array([1.0]), np.array([4]))


def test_without_isolation_a_failing_policy_stops_the_slot():
    with pytest.raises(ArithmeticError):
        engine(Picky(bad={"b"}), isolate=False).decide(*NOW)


@pytest.mark.parametrize("policy", [Picky(bad={"b"}), Picky(forbidden={"b"})])
def test_the_culprit_is_failed_and_the_others_are_decided_together(policy):
    e = engine(policy)
    decided = e.decide(*NOW)
    assert decided.allocations == {"a": Allocation(0, 0, 1), "c": Allocation(0, 0, 1)}
    (failed,) = decided.departures.values()
    assert list(decided.departures) == ["b"] and failed.outcome == "failed"
    assert "failed on it" in failed.reason
    (together,) = decided.policy_errors  # what it raised on the three jobs together
    assert isinstance(together, ArithmeticError if policy.bad else PolicyError)
    state = e.job_state("b")
    assert state.finished and state.failure == failed.reason and state.held is None
    assert state.outcome == "failed"
    assert policy.calls[-1] == ["a", "c"]
    assert [v.id for v in decided.observation.jobs] == ["a", "c"]
    e.settle(np.array([1.0]), np.array([4]))
    assert e.job_state("b").cost == 0.0 and e.job_state("a").cost > 0
    assert [s.job.id for s in e.active()] == ["a", "c"]


def test_when_only_the_whole_fails_each_job_runs_what_it_was_answered_alone():
    policy = Picky(together=2)
    e = engine(policy)
    decided = e.decide(*NOW)
    assert decided.allocations == {k: Allocation(0, 0, 1) for k in "abc"}
    assert decided.departures == {}
    assert [str(e) for e in decided.policy_errors] == ["no plan", "no plan"]  # twice together


def test_a_policy_that_decides_every_job_together_raised_nothing():
    assert engine(Picky()).decide(*NOW).policy_errors == ()


def test_a_failed_job_can_be_failed_only_once_and_a_finished_one_not_at_all():
    e = engine(Picky())
    e.finish_job("a", 10.0)
    e.fail_job("a", "too late")
    assert e.job_state("a").failure is None
    e.fail_job("b", "first")
    e.fail_job("b", "second")
    assert e.job_state("b").failure == "first"
    with pytest.raises(PolicyError):
        engine(Picky(forbidden={"b"}), isolate=False).decide(*NOW)
