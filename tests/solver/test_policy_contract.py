"""The contract every registered policy keeps, generated over the registry (a policy added
later is checked too), under each of its quick settings: answers within the model, the same
seed gives the same plan, a policy pickled mid-run carries on exactly, observations are not
mutated, and its spec parameters, ``repr`` and copies come from its ``__init__``."""

import inspect
import pickle
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.policies import check_spec, make_policy, policy_class, policy_classes
from solver.policies.protocol import PlannerNamer, Policy, SettlementObserver
from solver.policies.spec import PolicySpec
from solver.simulator import simulate
from tests.properties import examples
from tests.scenarios import scenarios
from tests.solver.helpers import HOUR, flat_data, job

VARIANTS = [str(PolicySpec.of(name, **params))
            for name, cls in policy_classes().items() for params in cls.quick]
"""Every registered policy under each of its quick settings."""


class Recorder:
    """Passes a policy's answers through and records them with a copy of what it saw."""

    def __init__(self, policy, stop_after=None):
        self.policy = policy
        self.name = policy.name
        self.seen = []
        self.stop_after = stop_after
        self.snapshot = None
        self.settled = []

    def decide(self, obs):
        before = (obs.price_now.copy(), obs.availability_now.copy(),
                  obs.price_history.copy(), obs.availability_history.copy(), obs.jobs)
        answer = self.policy.decide(obs)
        after = (obs.price_now, obs.availability_now, obs.price_history,
                 obs.availability_history, obs.jobs)
        for a, b in zip(before, after[:4], strict=False):
            np.testing.assert_array_equal(a, b)
        assert before[4] == after[4]
        self.seen.append((obs, dict(answer)))
        if self.stop_after is not None and len(self.seen) == self.stop_after:
            self.snapshot = pickle.dumps(self.policy)
        return answer

    def observe_settled(self, price, availability):
        self.settled.append((price.copy(), availability.copy()))
        if isinstance(self.policy, SettlementObserver):
            self.policy.observe_settled(price, availability)


def context_for(cls, data, jobs):
    """What a policy of ``cls`` is handed besides its spec: the realised market and the
    workload for a hindsight plan, the registry's builder for policy selection's members."""
    given = {"data": data, "jobs": jobs, "build": make_policy}
    return {k: v for k, v in given.items() if k in cls.context}


def policy_for(spec, data, jobs):
    return make_policy(spec, **context_for(policy_class(PolicySpec.parse(spec).name), data, jobs))


def answers(recorder):
    return [(obs.slot, sorted(answer.items())) for obs, answer in recorder.seen]


def runs(recorder):
    """``(observation, job view, allocation)`` of every answer that runs something."""
    for obs, answer in recorder.seen:
        for view in obs.jobs:
            a = answer.get(view.id)
            if a is not None and a.total > 0:
                yield obs, view, a


@st.composite
def constrained(draw):
    """Scenarios whose jobs may carry spend caps, market patterns and checkpoints."""
    data, jobs = draw(scenarios())
    return data, [replace(j, max_hourly_usd=draw(st.sampled_from([None, 1.0, 2.0, 4.0, 7.0])),
                          market_patterns=draw(st.sampled_from([None, ("*/us-east-1a/*",)])),
                          checkpoint_gb=draw(st.sampled_from([0.0, 50.0]))) for j in jobs]


@pytest.mark.parametrize("name", VARIANTS)
def test_every_policy_meets_the_protocol_under_its_name(name):
    data = flat_data(np.array([[1.0, 1.5, 0.8]]), np.array([[2, 0, 3]]))
    policy = policy_for(name, data, [job("j", workload=1.0, release=0.0, soft=3 * HOUR)])
    assert isinstance(policy, Policy)
    assert policy.name == PolicySpec.parse(name).name
    for hook, protocol in (("observe_settled", SettlementObserver), ("planner", PlannerNamer)):
        if hasattr(type(policy), hook):
            assert isinstance(policy, protocol)
            declared = inspect.signature(getattr(protocol, hook)).parameters
            assert list(inspect.signature(getattr(type(policy), hook)).parameters) == \
                list(declared)


@pytest.mark.parametrize("name", VARIANTS)
def test_parameters_repr_and_clones_come_from_the_init_signature(name):
    data = flat_data(np.array([[1.0, 1.5, 0.8, 0.9]]), np.array([[2, 0, 3, 1]]))
    jobs = [job("j", workload=2.0, release=0.0, soft=4 * HOUR)]
    policy = policy_for(name, data, jobs)
    cls = type(policy)
    assert policy.params() == cls.defaults() | check_spec(name).kwargs
    assert set(cls.defaults()) == set(inspect.signature(cls).parameters) - set(cls.context)
    shown = repr(policy)
    assert shown.startswith(f"{cls.__name__}(")
    assert all(f"{k}={v!r}" in shown for k, v in policy.params().items())
    twin = policy.clone(**context_for(cls, data, jobs))
    assert type(twin) is cls and twin is not policy and repr(twin) == shown
    first, second = Recorder(policy), Recorder(twin)
    simulate(data, jobs, first)
    simulate(data, jobs, second)
    assert answers(first) == answers(second)


def test_a_clone_takes_overrides_and_keeps_the_rest():
    policy = make_policy("prediction-free:sigma=0.5")
    twin = policy.clone(tolerance=1.0)
    assert twin.params() == {"theta": 1.0, "sigma": 0.5, "tolerance": 1.0}
    assert repr(twin) == "PredictionFree(theta=1.0, sigma=0.5, tolerance=1.0)"


def test_the_protocols_refuse_what_lacks_their_methods():
    class Nameless:
        def decide(self, obs):
            return {}

    assert not isinstance(Nameless(), Policy)
    assert not isinstance(Nameless(), SettlementObserver)
    assert not isinstance(Nameless(), PlannerNamer)


@settings(max_examples=examples(6), deadline=None)
@given(scenario=scenarios())
def test_the_engine_hands_each_closed_slot_to_a_settlement_observer(scenario):
    data, jobs = scenario
    recorder = Recorder(make_policy("greedy"))
    simulate(data, jobs, recorder)
    assert len(recorder.settled) == len(recorder.seen)
    for (obs, _), (price, availability) in zip(recorder.seen, recorder.settled, strict=True):
        np.testing.assert_array_equal(price, data.price[:, obs.slot])
        np.testing.assert_array_equal(availability, data.availability[:, obs.slot])


@pytest.mark.parametrize("name", VARIANTS)
@settings(max_examples=examples(16), deadline=None)
@given(scenario=constrained())
def test_answers_keep_counts_allowed_markets_caps_and_the_spot_the_boundary_shows(
        name, scenario):
    data, jobs = scenario
    recorder = Recorder(policy_for(name, data, jobs))
    simulate(data, jobs, recorder)  # the engine refuses an answer over a cap or off the patterns
    assert recorder.seen
    asked: dict[int, list[int]] = {}
    for obs, view, a in runs(recorder):
        assert view.job.n_min <= a.total <= view.job.n_max
        assert view.job.may_use(obs.markets[a.market].key)
        assert a.spot == 0 or view.job.allow_spot
        assert view.job.within_cap(a.hourly_usd(obs.price_now[a.market],
                                                obs.markets[a.market].on_demand_price))
        asked.setdefault(obs.slot, [0] * len(obs.markets))[a.market] += a.spot
    for obs, _ in recorder.seen:
        spot = asked.get(obs.slot, [0] * len(obs.markets))
        assert all(spot[m] <= obs.availability_now[m] for m in range(len(obs.markets)))


@pytest.mark.parametrize("name", VARIANTS)
@settings(max_examples=examples(6), deadline=None)
@given(scenario=scenarios())
def test_same_inputs_give_the_same_plan(name, scenario):
    data, jobs = scenario
    first, second = (Recorder(policy_for(name, data, jobs)) for _ in range(2))
    simulate(data, jobs, first)
    simulate(data, jobs, second)
    assert answers(first) == answers(second)


@pytest.mark.parametrize("name", VARIANTS)
@settings(max_examples=examples(6), deadline=None)
@given(scenario=scenarios())
def test_a_policy_pickled_mid_run_carries_on_exactly(name, scenario):
    data, jobs = scenario
    whole = Recorder(policy_for(name, data, jobs), stop_after=2)
    simulate(data, jobs, whole, until_end=True)  # every slot of the data: at least four
    assert whole.snapshot is not None and len(whole.seen) > 2
    restored = pickle.loads(whole.snapshot)
    # The restored policy, fed the rest of the run, answers as the uninterrupted one did.
    for obs, answer in whole.seen[2:]:
        if isinstance(restored, SettlementObserver):
            restored.observe_settled(obs.price_history[:, -1], obs.availability_history[:, -1])
        assert dict(restored.decide(obs)) == answer
