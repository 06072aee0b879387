import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.job import Allocation
from solver.policies import make_policy
from solver.policies.chc import CommittedHorizonControl
from solver.policies.forecast_sources import (
    DistributionForecast,
    NoisyOracleForecast,
    OracleForecast,
)
from solver.simulator import simulate
from tests.properties import examples
from tests.scenarios import scenarios, synthetic
from tests.solver.helpers import HOUR, flat_data, job


def _within_capacity(result, data):
    asked = np.zeros_like(data.availability)
    for t, _, a in result.decisions:
        asked[a.market, t] += a.spot
    return bool(np.all(asked <= data.availability))


@settings(max_examples=examples(25), deadline=None)
@given(scenarios(), st.integers(1, 3), st.sampled_from([1, 2]))
def test_oracle_chc_respects_counts_and_availability(scenario, window, commitment):
    data, jobs = scenario
    commitment = min(commitment, window)
    policy = make_policy("chc", forecast="oracle", data=data, window_hours=window,
                         commitment=commitment)
    result = simulate(data, jobs, policy)  # a count outside N_min..N_max raises PolicyError
    assert _within_capacity(result, data)
    assert all(r.refusals == 0 and r.preemptions == 0 for r in result.jobs)


@settings(max_examples=examples(6), deadline=None)
@given(scenarios())
def test_the_integer_window_program_respects_counts_and_availability(scenario):
    data, jobs = scenario
    result = simulate(data, jobs, make_policy("chc", forecast="oracle", data=data, window_hours=3,
                                             solver="program"))
    assert _within_capacity(result, data)
    assert all(r.refusals == 0 and r.preemptions == 0 for r in result.jobs)


def _generated(seed, n_jobs=1, n_max=(1,)):
    _, data, jobs = synthetic(seed, n_markets=2, days=2.0, n_jobs=n_jobs,
                              workload_range=(4, 12), n_max_choices=n_max)
    return data, jobs


def test_with_perfect_forecasts_chc_costs_within_a_few_percent_of_the_optimum():
    optimum, chc = 0.0, 0.0
    for seed in range(8):
        data, jobs = _generated(seed)
        best = simulate(data, jobs, make_policy("optimum", data=data, jobs=jobs))
        ours = simulate(data, jobs, make_policy("chc", forecast="oracle", data=data,
                                                window_hours=12))
        assert all(r.hard_deadline_met for r in ours.jobs)
        assert ours.total_cost >= best.total_cost - 1e-9
        optimum += best.total_cost
        chc += ours.total_cost
    assert chc <= 1.05 * optimum


def test_same_seed_gives_the_same_plan_and_another_seed_other_forecasts():
    data, jobs = _generated(1, n_jobs=2, n_max=(1, 2))

    def run(seed):
        forecast = NoisyOracleForecast(data, error=0.3, flip=0.2, seed=seed)
        return simulate(data, jobs, make_policy("chc", source=forecast, commitment=3))

    assert run(5).decisions == run(5).decisions
    recorder = _Recorder()
    simulate(data, jobs, recorder)
    first = recorder.first
    a = NoisyOracleForecast(data, error=0.3, flip=0.2, seed=5).window(first, 12)
    b = NoisyOracleForecast(data, error=0.3, flip=0.2, seed=6).window(first, 12)
    assert not np.array_equal(a[0], b[0])


class _Recorder:
    name = "recorder"

    def __init__(self):
        self.first = None

    def decide(self, obs):
        self.first = self.first or obs
        return {}


class _Alternating:
    """No spot at all at even slots, plenty at odd ones: controllers disagree."""

    exact = False

    def __init__(self, data):
        self.oracle = OracleForecast(data)

    def window(self, obs, horizon):
        price, availability = self.oracle.window(obs, horizon)
        return price, np.full_like(availability, 0 if obs.slot % 2 == 0 else 2)


def test_receding_horizon_follows_each_plan_while_averaging_blends_them():
    data = flat_data([[0.5] * 8], [[2] * 8])
    j = job(workload=13.0, soft=8 * HOUR, n_min=1, n_max=2, value=50.0, miss_penalty=50.0)
    forecast = _Alternating(data)
    rhc = simulate(data, [j], CommittedHorizonControl(2, commitment=1, source=forecast))
    averaged = simulate(data, [j], CommittedHorizonControl(2, commitment=2, source=forecast))
    # v = 1 takes each slot's newest plan: on-demand after a no-spot forecast, spot after a
    # full one. v = 2 averages the two controllers: one spot and one on-demand instance.
    assert [a for t, _, a in rhc.decisions[:4]] == [
        Allocation(0, 0, 2), Allocation(0, 2, 0), Allocation(0, 0, 2), Allocation(0, 2, 0)]
    assert averaged.decisions[0][2] == Allocation(0, 0, 2)
    assert [a for t, _, a in averaged.decisions[1:4]] == [Allocation(0, 1, 1)] * 3
    assert rhc.jobs[0].restarts > averaged.jobs[0].restarts


@pytest.mark.parametrize("kind", ["distribution", "point"])
def test_on_learned_forecasts_chc_meets_the_deadlines_for_less_than_on_demand(kind):
    data, jobs = _generated(2, n_jobs=2, n_max=(1, 2))
    result = simulate(data, jobs, make_policy("chc", forecast=kind, window_hours=6))
    on_demand = simulate(data, jobs, make_policy("on-demand"))
    assert all(r.hard_deadline_met for r in result.jobs)
    assert result.total_cost < on_demand.total_cost


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"window_hours": 0.0}, "window_hours=0.0: expected a positive duration"),
        ({"commitment": 0}, "commitment=0: expected a whole number of slots >= 1"),
        ({"solver": "exact"}, "solver='exact': expected one of decomposed, program"),
        ({"forecast": "perfect"}, "forecast='perfect': expected one of distribution, point, "
                                  "oracle"),
        ({"forecast": "oracle"}, "forecast='oracle': expected the realised market data"),
    ],
)
def test_bad_parameters_are_rejected(params, message):
    with pytest.raises(ValueError, match=message):
        make_policy("chc", **params)


def test_by_default_chc_plans_on_the_distribution_forecast():
    assert isinstance(CommittedHorizonControl().source, DistributionForecast)


def test_a_noisy_oracle_refuses_a_flip_probability_above_one():
    with pytest.raises(ValueError, match="flip=2"):
        NoisyOracleForecast(flat_data([[1.0] * 4], [[1] * 4]), flip=2)


def test_a_commitment_longer_than_the_window_is_rejected_at_the_first_slot():
    data = flat_data([[1.0] * 4], [[1] * 4])
    policy = make_policy("chc", forecast="oracle", data=data, window_hours=4, commitment=5)
    with pytest.raises(ValueError, match="commitment=5: expected at most the window of 4"):
        simulate(data, [job(soft=4 * HOUR, workload=1.0)], policy)
