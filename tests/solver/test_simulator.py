import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.engine import PolicyError
from solver.job import Allocation
from solver.policies.baselines import OnDemandOnly
from solver.simulator import simulate
from tests.properties import examples
from tests.scenarios import LARGER, scenarios
from tests.solver.helpers import HOUR, RandomPolicy, Scripted, flat_data, job


def test_on_demand_run_is_billed_per_slot_including_the_partial_one():
    data = flat_data([[1.0] * 10], [[0] * 10], on_demand=3.0)
    j = job(workload=2.5, restart_overhead=360.0)
    result = simulate(data, [j], Scripted({t: {"j": Allocation(0, 0, 1)} for t in range(10)}))
    r = result.jobs[0]
    # 360 s overhead + 2.5 h of work end 2.6 h in: three slots billed at 3 USD/h.
    assert r.completion == pytest.approx(360 + 2.5 * HOUR)
    assert r.cost == pytest.approx(9.0)
    assert r.soft_deadline_met and r.restarts == 1 and r.preemptions == 0


def test_spot_beyond_availability_is_preempted_and_restart_costs_overhead():
    data = flat_data([[1.0] * 6], [[2, 2, 1, 1, 2, 2]])
    j = job(workload=20.0, n_min=1, n_max=2, restart_overhead=1800.0, soft=6 * HOUR)
    table = {t: {"j": Allocation(0, 2, 0)} for t in range(6)}
    r = simulate(data, [j], Scripted(table)).jobs[0]
    # Slots 2-3 hold one instance: one preemption at slot 2, then one refusal at slot 3
    # (the job no longer held two); each configuration change costs 0.5 h.
    assert r.preemptions == 1 and r.refusals == 1
    assert r.restarts == 3  # start, shrink to 1, grow back to 2
    productive = 2 * (0.5 + 1) + 1 * (0.5 + 1) + 2 * (0.5 + 1)
    assert r.work_done == pytest.approx(productive)
    assert r.cost == pytest.approx(1.0 * (2 + 2 + 1 + 1 + 2 + 2))
    assert not r.hard_deadline_met and r.utility == pytest.approx(-r.cost)


def test_overhead_longer_than_a_slot_carries_over():
    data = flat_data([[1.0] * 30], [[0] * 30], slot=195.0)
    j = job(workload=0.05, restart_overhead=720.0, soft=4000, hard=4000)
    table = {t: {"j": Allocation(0, 0, 1)} for t in range(30)}
    r = simulate(data, [j], Scripted(table)).jobs[0]
    # 720 s of overhead spans 3.7 ticks; 180 s of work follow; 5 ticks are billed.
    assert r.completion == pytest.approx(720 + 180)
    assert r.cost == pytest.approx(3.0 * 195 / HOUR * 5)


def test_jobs_beyond_the_data_are_rejected_naming_the_field():
    data = flat_data([[1.0] * 4], [[0] * 4], slot=195.0)
    with pytest.raises(ValueError, match=r"job 'j' hard_deadline=1970-01-01T01:06:40Z: "
                       r"expected at or before the market data's end 1970-01-01T00:13:00Z"):
        simulate(data, [job(workload=0.05, soft=4000)], Scripted({}))
    with pytest.raises(ValueError, match="duplicate"):
        simulate(data, [job(workload=0.05, soft=700)] * 2, Scripted({}))


def test_unreleased_jobs_are_invisible_and_stray_answers_rejected():
    data = flat_data([[1.0] * 6], [[1] * 6])
    early = job("a", workload=1.0, soft=6 * HOUR)
    late = job("b", workload=1.0, release=2.5 * HOUR, soft=6 * HOUR)
    policy = Scripted({0: {"a": Allocation(0, 1)}, 3: {"b": Allocation(0, 1)}})
    simulate(data, [early, late], policy)
    # The policy is called at every boundary, with the jobs active there.
    assert [[v.id for v in o.jobs] for o in policy.seen] == [["a"], [], [], ["b"]]
    with pytest.raises(PolicyError, match=r"allocated jobs \['b'\] that are not active"):
        simulate(data, [early, late], Stray())


@pytest.mark.parametrize(
    ("allocation", "message"),
    [
        (Allocation(0, 0, 3), "3 instances; expected 0 or between n_min=1 and n_max=2"),
        (Allocation(5, 1, 0), "market=5 is not a market index"),
        (Allocation(1, 1, 0), "is not among the job's allowed markets"),
    ],
)
def test_policy_answers_outside_the_model_are_rejected(allocation, message):
    data = flat_data([[1.0] * 4, [1.0] * 4], [[1] * 4, [1] * 4])
    j = job(n_max=2, soft=4 * HOUR, allowed_markets=(data.markets[0].key,))
    with pytest.raises(PolicyError, match=message):
        simulate(data, [j], _Always({"j": allocation}))


class _Always:
    name = "always"

    def __init__(self, answer):
        self.answer = answer

    def decide(self, obs):
        return {v.id: self.answer[v.id] for v in obs.jobs if v.id in self.answer}


class Stray:
    name = "stray"

    def decide(self, obs):
        return {"a": Allocation(0, 1), "b": Allocation(0, 1)}


def test_spot_goes_to_the_earliest_hard_deadline_first():
    data = flat_data([[1.0] * 10], [[1] * 10])
    a = job("a", workload=3.0, soft=9 * HOUR)
    b = job("b", workload=3.0, soft=5 * HOUR)
    r = simulate(data, [a, b], _Always({"a": Allocation(0, 1), "b": Allocation(0, 1)}))
    first, second = r.jobs
    assert second.job_id == "b" and second.completion == pytest.approx(3 * HOUR)
    assert first.refusals == 3 and first.completion == pytest.approx(6 * HOUR)


# --- properties --------------------------------------------------------------------------

SCENARIOS = scenarios(**LARGER, release_offsets=(0.0, 900.0))
"""Scenarios with jobs released mid-slot too."""
SEEDS = st.integers(0, 2**16)


@settings(max_examples=examples(150), deadline=None)
@given(SCENARIOS, SEEDS)
def test_cost_equals_price_times_instances_and_spot_never_exceeds_availability(scenario, seed):
    data, jobs = scenario
    result = simulate(data, jobs, RandomPolicy(seed))
    od = data.on_demand_prices[:, None]
    expected = ((result.spot_used * data.price + result.on_demand_used * od)
                * data.slot_hours).sum()
    assert result.total_cost == pytest.approx(expected)
    assert result.cost_per_slot.sum() == pytest.approx(expected)
    assert np.all(result.spot_used <= data.availability)
    for r, j in zip(result.jobs, jobs, strict=True):
        assert r.work_done <= j.workload + 1e-9
        assert (r.completion is not None) == (r.work_done >= j.workload - 1e-9)


@settings(max_examples=examples(100), deadline=None)
@given(SCENARIOS, SEEDS)
def test_no_work_is_credited_on_spot_that_was_not_available(scenario, seed):
    data, jobs = scenario
    dark = flat_data(data.price, np.zeros_like(data.availability))
    class SpotAsk(RandomPolicy):
        def decide(self, obs):
            return {k: Allocation(a.market, a.total, 0) for k, a in super().decide(obs).items()}

    result = simulate(dark, jobs, SpotAsk(seed))
    assert all(r.work_done == 0 and r.cost == 0 and r.completion is None for r in result.jobs)
    assert result.spot_used.sum() == 0


@settings(max_examples=examples(150), deadline=None)
@given(SCENARIOS)
def test_on_demand_only_meets_every_deadline_feasible_at_n_max(scenario):
    data, jobs = scenario
    result = simulate(data, jobs, OnDemandOnly())
    for r, j in zip(result.jobs, jobs, strict=True):
        first_slot = np.ceil(j.release / HOUR) * HOUR
        fastest = first_slot + j.restart_overhead + 3600 * j.workload / j.throughput(j.n_max)
        if fastest <= j.hard_deadline:
            assert r.hard_deadline_met, (j, r)


@settings(max_examples=examples(60), deadline=None)
@given(SCENARIOS, SEEDS, st.data())
def test_a_policy_cannot_see_future_slots(scenario, seed, draw):
    data, jobs = scenario
    cut = draw.draw(st.integers(1, data.n_slots - 1))
    future = np.random.default_rng(seed)
    price, avail = data.price.copy(), data.availability.copy()
    price[:, cut:] = future.uniform(0.1, 3.0, price[:, cut:].shape)
    avail[:, cut:] = future.integers(0, 5, avail[:, cut:].shape)
    changed = flat_data(price, avail)
    seen_a, seen_b = Recorder(seed, data), Recorder(seed, changed)
    simulate(data, jobs, seen_a)
    simulate(changed, jobs, seen_b)
    # Everything observed before the cut is identical whatever the future holds.
    before_a = [o for o in seen_a.log if o[0] < cut]
    before_b = [o for o in seen_b.log if o[0] < cut]
    assert before_a == before_b
    assert seen_a.reachable_future == []


def _reachable_future(obs, data):
    """Slots >= obs.slot whose values the observation's arrays could reach."""
    leaks = []
    if obs.price_history.shape[1] != obs.slot:
        leaks.append("history length")
    for now, full in ((obs.price_now, data.boundary_price), (obs.price_now, data.price),
                      (obs.availability_now, data.boundary_availability)):
        if np.shares_memory(now, full):
            leaks.append("current values share memory with the data")
    base = obs.price_history.base
    if base is not None and not np.all(np.isnan(np.asarray(base)[:, obs.slot:])):
        leaks.append("history buffer holds future slots")
    return leaks


class Recorder(RandomPolicy):
    def __init__(self, seed, data):
        super().__init__(seed)
        self.data = data
        self.log = []
        self.reachable_future = []

    def decide(self, obs):
        answer = super().decide(obs)
        self.reachable_future += _reachable_future(obs, self.data)
        self.log.append((obs.slot, obs.price_history.tobytes(), obs.price_now.tobytes(),
                         obs.availability_now.tobytes(), tuple(sorted(answer.items()))))
        return answer


def test_trained_forecasters_reach_the_policy_from_the_first_slot():
    from solver.forecast.models import MarketModels

    data = flat_data([[1.0] * 6], [[1] * 6])
    models = MarketModels(1, -10 * HOUR, HOUR)
    for _ in range(10):
        models.learn(np.array([1.0]), np.array([1]))
    seen = []

    class Reads:
        name = "reads"

        def decide(self, obs):
            seen.append(obs.outlooks[0].run)
            return {}

    simulate(data, [job(workload=1.0, soft=5 * HOUR)], Reads(), models=models)
    assert seen[0] is not None and seen[0].age == 10
