from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.job import Allocation
from solver.observation import JobView, Observation
from solver.policies import make_policy
from solver.policies.prediction_free import PredictionFree, ThresholdRule
from solver.simulator import simulate
from tests.properties import examples
from tests.scenarios import LARGER, scenarios
from tests.solver.helpers import HOUR, cold_outlooks, job, markets


def observe(views, price=(1.0,), available=(1,), time=0.0, on_demand=3.0):
    n = len(price)
    return Observation(
        slot=int(time // HOUR), time=time, slot_seconds=HOUR,
        markets=tuple(markets(n, on_demand)),
        price_history=np.zeros((n, 0)), availability_history=np.zeros((n, 0), dtype=int),
        price_now=np.array(price, float), availability_now=np.array(available),
        jobs=tuple(views), outlooks=cold_outlooks(n),
    )


def view(j, remaining=None, current=None):
    return JobView(j, j.workload if remaining is None else remaining, 0.0, current)


OD = Allocation(0, 0, 1)
SPOT = Allocation(0, 1, 0)


def test_too_little_slack_forces_on_demand_even_with_spot():
    j = job(workload=9.5, soft=10 * HOUR)
    assert PredictionFree().decide(observe([view(j)]))["j"] == OD


def test_ahead_without_spot_idles_and_behind_without_spot_goes_on_demand():
    j = job(workload=4.0, soft=10 * HOUR)
    policy = PredictionFree(sigma=1.0)
    assert policy.decide(observe([view(j)], available=(0,))) == {}
    # Three idle hours later nothing is done: the job is behind its reserve.
    assert policy.decide(observe([view(j)], available=(0,), time=3 * HOUR))["j"] == OD
    # sigma = 0 spends the slack greedily and still waits.
    assert PredictionFree(sigma=0.0).decide(observe([view(j)], available=(0,),
                                                    time=3 * HOUR)) == {}


def test_on_demand_returns_to_spot_only_within_the_catch_up_tolerance():
    j = job(workload=20.0, soft=30 * HOUR, restart_overhead=1800.0)
    # Slack at release is 30 - 20 - 0.5 = 9.5 h; after 5 h with 2 h done the reserve is
    # 9.5 * 18 / 20 = 8.55 h, the slack 30 - 5 - 18.5 = 6.5 h: 2.05 h behind.
    behind = observe([view(j, remaining=18.0, current=OD)], time=5 * HOUR)
    assert PredictionFree(tolerance=3.0).decide(behind)["j"] == OD
    assert PredictionFree(tolerance=5.0).decide(behind)["j"] == SPOT
    # Off on-demand, spot is taken however far behind.
    idle = observe([view(j, remaining=18.0)], time=5 * HOUR)
    assert PredictionFree(tolerance=0.0).decide(idle)["j"].spot == 1


def test_behind_on_partial_spot_tops_up_with_on_demand():
    j = job(workload=20.0, soft=12 * HOUR, n_min=2, n_max=4)
    obs = observe([view(j, current=Allocation(0, 2, 0))], available=(2,), time=2 * HOUR)
    assert PredictionFree().decide(obs)["j"] == Allocation(0, 2, 2)


def test_price_threshold_hides_expensive_spot_and_picks_a_cheap_market():
    j = job(workload=2.0, soft=10 * HOUR)
    obs = observe([view(j)], price=(2.0, 1.0), available=(1, 1))
    assert PredictionFree(theta=0.5).decide(obs)["j"] == Allocation(1, 1, 0)
    assert PredictionFree(theta=0.2).decide(obs) == {}


def test_a_market_that_denied_spot_is_asked_only_where_no_other_offers_it():
    j = job(workload=2.0, soft=10 * HOUR)
    cheap_denied = replace(observe([view(j)], price=(1.0, 1.5), available=(1, 1)),
                           denied=frozenset({0}))
    assert PredictionFree().decide(cheap_denied)["j"] == Allocation(1, 1, 0)
    alone = replace(cheap_denied, availability_now=np.array([1, 0]))
    assert PredictionFree().decide(alone)["j"] == Allocation(0, 1, 0)
    holding = replace(cheap_denied, jobs=(view(j, current=Allocation(0, 1, 0)),))
    assert PredictionFree().decide(holding)["j"] == Allocation(0, 1, 0)


def test_jobs_do_not_ask_for_spot_an_earlier_job_already_claimed():
    a, b = job("a", workload=2.0, soft=10 * HOUR), job("b", workload=2.0, soft=12 * HOUR)
    out = PredictionFree().decide(observe([view(a), view(b)], available=(1,)))
    assert out == {"a": SPOT}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"theta": 0.0}, "theta=0.0: expected a share > 0"),
        ({"sigma": -1.0}, "sigma=-1.0"),
        ({"sigma": float("inf")}, "sigma=inf"),
        ({"tolerance": float("nan")}, "tolerance=nan"),
    ],
)
def test_bad_parameters_are_rejected_naming_the_field(params, message):
    with pytest.raises(ValueError, match=message):
        make_policy("prediction-free", **params)


PARAMETERS = st.fixed_dictionaries({"theta": st.sampled_from([1.0, 0.5]),
                                     "sigma": st.sampled_from([0.0, 0.5, 1.0]),
                                     "tolerance": st.sampled_from([0.0, 3.0])})


@settings(max_examples=examples(150), deadline=None)
@given(scenarios(**LARGER, soft_before_hard=True, overheads=(0.0, 300.0, 1800.0)), PARAMETERS)
def test_every_hard_deadline_feasible_on_on_demand_is_met_within_bounds(scenario, params):
    data, jobs = scenario
    result = simulate(data, jobs, PredictionFree(**params))
    assert np.all(result.spot_used <= data.availability)
    assert result.jobs and all(r.refusals == 0 for r in result.jobs)
    for r, j in zip(result.jobs, jobs, strict=True):
        fastest = j.release + j.restart_overhead + HOUR * j.workload / j.throughput(j.n_max)
        if fastest <= j.hard_deadline:
            assert r.hard_deadline_met, (j, r)


def test_the_rule_as_a_planner_hands_spot_out_behind_first_or_in_priority_order():
    """Spot for one job: behind first, the rule gives it to the job it sees behind (later in
    priority order, holding spot); in priority order, to the first job, which keeps its place."""
    first = job(id="first", workload=4.0, soft=20 * HOUR, n_min=1, n_max=2)
    behind = job(id="behind", workload=16.0, soft=10 * HOUR, n_min=1, n_max=2)
    obs = observe([view(first, remaining=3.0), view(behind, current=Allocation(0, 2, 0))],
                  available=(2,), time=HOUR)
    assert PredictionFree().margin(obs, obs.jobs[1]) < 0 <= PredictionFree().margin(
        obs, obs.jobs[0])
    plans = {order: ThresholdRule(behind_first=order).plan(obs)[0] for order in (True, False)}
    assert plans[True]["behind"] == Allocation(0, 2, 0) and plans[True]["first"] is None
    assert plans[False]["first"] == Allocation(0, 2, 0)
    assert plans[False]["behind"] == Allocation(0, 0, 2)


def test_the_rules_safety_share_as_a_planner():
    """A smaller safety share spends more of the slack before on-demand: a job a little
    behind Uniform Progress goes on-demand at sigma 1 and waits for spot at sigma 0.5."""
    j = job(workload=6.0, soft=10 * HOUR)
    obs = observe([view(j, remaining=4.0)], available=(0,), time=4 * HOUR)
    assert ThresholdRule(sigma=1.0).plan(obs)[0]["j"] == OD
    assert ThresholdRule(sigma=0.5).plan(obs)[0]["j"] is None


def test_the_rule_as_a_planner_gives_a_fixed_count_job_its_own_safety_share():
    """Both a fixed-count and a ranged job a little behind Uniform Progress: each goes
    on-demand under safety share 1 and waits for spot under 0.5, whichever of the two shares
    (``sigma`` for a range, ``fixed_sigma`` for a fixed count) is 1."""
    fixed = job(id="fixed", workload=6.0, soft=10 * HOUR)
    ranged = job(id="ranged", workload=12.0, soft=10 * HOUR, n_min=1, n_max=2)
    obs = observe([view(fixed, remaining=4.0), view(ranged, remaining=8.0)], available=(0,),
                  time=4 * HOUR)
    for v in obs.jobs:
        assert PredictionFree(sigma=1.0).margin(obs, v) < 0 <= PredictionFree(
            sigma=0.5).margin(obs, v)
    fixed_first = ThresholdRule(sigma=0.5, fixed_sigma=1.0).plan(obs)[0]
    assert fixed_first["fixed"] == OD and fixed_first["ranged"] is None
    ranged_first = ThresholdRule(sigma=1.0, fixed_sigma=0.5).plan(obs)[0]
    assert ranged_first["fixed"] is None and ranged_first["ranged"] == Allocation(0, 0, 2)
    alike = ThresholdRule(sigma=0.5).plan(obs)[0]
    assert alike["fixed"] is None and alike["ranged"] is None


def test_a_job_of_an_instance_range_goes_where_spot_holds_the_most_of_it():
    """On a market still offering its N_min, the job moves to a dearer one offering all of
    it; where its market offers as much as any, it stays; the cheapest of equals otherwise."""
    j = job(workload=4.0, soft=20 * HOUR, n_min=1, n_max=4)
    on_first = view(j, remaining=3.0, current=Allocation(0, 4, 0))
    rule = PredictionFree()
    assert rule.decide(observe([on_first], price=(1.0, 1.2), available=(1, 4),
                               time=HOUR))["j"] == Allocation(1, 4, 0)
    assert rule.decide(observe([on_first], price=(1.2, 1.0), available=(4, 4),
                               time=HOUR))["j"] == Allocation(0, 4, 0)
    assert rule.decide(observe([view(j)], price=(1.2, 1.0, 1.1), available=(3, 3, 1)
                               ))["j"] == Allocation(1, 3, 0)


@pytest.mark.parametrize("field", ["sigma", "fixed_sigma"])
def test_risk_aware_refuses_a_negative_safety_share_by_its_name(field):
    with pytest.raises(ValueError, match=rf"policy risk-aware: {field}=-0\.5: expected a "
                                         "finite share >= 0 of the initial slack"):
        make_policy(f"risk-aware:{field}=-0.5")
