"""Per-job constraints: a spend cap, allowed markets by pattern, a home region."""

import numpy as np
import pytest

from solver.engine import Engine, PolicyError
from solver.job import Allocation
from solver.market import Market, MarketData
from solver.policies import make_policy
from solver.simulator import simulate
from tests.solver.helpers import HOUR, Scripted, job

MARKETS = [Market("gcp", "us-central1", "us-central1-a", "a3-highgpu-8g", 88.0),
           Market("gcp", "us-east4", "us-east4-a", "a3-highgpu-8g", 90.0),
           Market("gcp", "europe-west4", "europe-west4-a", "a3-highgpu-8g", 95.0),
           Market("aws", "us-east-1", "us-east-1a", "p5.48xlarge", 98.0)]


def market_data(price, availability) -> MarketData:
    price = np.atleast_2d(np.asarray(price, float))
    return MarketData.from_slots(MARKETS[:price.shape[0]], 0.0, HOUR, price,
                                 np.atleast_2d(np.asarray(availability, int)))


@pytest.mark.parametrize(("fields", "message"), [
    ({"checkpoint_gb": -1.0}, "checkpoint_gb=-1.0"),
    ({"checkpoint_gb": float("nan")}, "checkpoint_gb=nan"),
    ({"max_hourly_usd": 0.0}, "max_hourly_usd=0.0"),
    ({"home_region": "us-east-1"}, "home_region='us-east-1'"),
    ({"home_region": "aws/us-east-1/us-east-1a"}, "a region, not a zone"),
    ({"market_patterns": ()}, "market_patterns=()"),
])
def test_bad_constraints_are_one_line_errors_naming_the_field(fields, message):
    with pytest.raises(ValueError, match=message):
        job(soft=4 * HOUR, **fields)


def test_patterns_resolve_to_the_markets_they_match_when_the_job_is_admitted():
    j = job(soft=4 * HOUR, market_patterns=("gcp/us-*", "*/p5.48xlarge"))
    assert j.resolved([m.key for m in MARKETS]).allowed_markets == (
        MARKETS[0].key, MARKETS[1].key, MARKETS[3].key)
    both = job(soft=4 * HOUR, market_patterns=("gcp/*",), allowed_markets=(MARKETS[2].key,))
    assert both.resolved([m.key for m in MARKETS]).allowed_markets == (MARKETS[2].key,)
    engine = Engine(MARKETS, 0.0, HOUR, Scripted({}))
    engine.add_job(j)
    assert engine.job_state("j").job.allowed_markets == (MARKETS[0].key, MARKETS[1].key,
                                                         MARKETS[3].key)


def test_a_pattern_matching_no_market_is_an_error_naming_it():
    engine = Engine(MARKETS, 0.0, HOUR, Scripted({}))
    with pytest.raises(ValueError, match=r"market_patterns: 'azure/\*' matches none"):
        engine.add_job(job(soft=4 * HOUR, market_patterns=("gcp/*", "azure/*")))


def test_the_engine_refuses_an_allocation_over_the_cap_or_outside_the_patterns():
    data = market_data([[40.0] * 3, [30.0] * 3], [[1] * 3] * 2)
    capped = job(workload=2.0, soft=3 * HOUR, max_hourly_usd=50.0)
    with pytest.raises(PolicyError, match=r"hourly bill of 88\.0000 USD; expected at most "
                                          r"max_hourly_usd=50\.0"):
        simulate(data, [capped], Scripted({0: {"j": Allocation(0, 0, 1)}}))
    assert simulate(data, [capped], Scripted({0: {"j": Allocation(0, 1)}})).jobs[0].cost == 40
    confined = job(workload=2.0, soft=3 * HOUR, market_patterns=("*/us-east4/*",))
    with pytest.raises(PolicyError, match="is not among the job's allowed markets"):
        simulate(data, [confined], Scripted({0: {"j": Allocation(0, 1)}}))


@pytest.mark.parametrize("name", ["greedy", "uniform-progress", "prediction-free", "chc",
                                  "risk-aware", "on-demand"])
def test_where_the_cap_forbids_on_demand_a_job_runs_spot_that_fits_or_idles(name):
    # On-demand (88 or 90 USD/h) is over the 50 USD cap; spot (40 USD/h) fits it but comes
    # only in slots 3-5, too late for the deadline: the cap wins, the job misses it.
    avail = [[0, 0, 0, 1, 1, 1], [0] * 6]
    data = market_data([[40.0] * 6, [60.0] * 6], avail)
    j = job(workload=4.0, soft=5 * HOUR, hard=6 * HOUR, max_hourly_usd=50.0, value=500.0,
            miss_penalty=100.0)
    result = simulate(data, [j], make_policy(name)).jobs[0]
    assert result.on_demand_instance_hours == 0
    assert result.spot_instance_hours <= 3
    assert not result.hard_deadline_met


def test_under_a_cap_on_demand_runs_at_the_count_it_allows_in_the_cheapest_market():
    data = market_data([[40.0] * 4, [30.0] * 4], [[0] * 4] * 2)
    j = job(workload=4.0, soft=4 * HOUR, n_min=1, n_max=4, max_hourly_usd=200.0)
    result = simulate(data, [j], make_policy("greedy"))
    assert {a for _, _, a in result.decisions if a.total} == {Allocation(0, 0, 2)}


def test_the_optimum_keeps_the_cap():
    data = market_data([[40.0, 70.0, 40.0, 40.0], [45.0] * 4], [[1, 1, 1, 1], [1, 1, 1, 1]])
    j = job(workload=3.0, soft=4 * HOUR, max_hourly_usd=50.0, value=500.0, miss_penalty=10.0)
    policy = make_policy("optimum", data=data, jobs=[j])
    result = simulate(data, [j], policy).jobs[0]
    assert result.hard_deadline_met and result.on_demand_instance_hours == 0
    assert all(a.market == 1 for t, a in ((t, p["j"]) for t, p in policy.plan.slots.items())
               if t == 1)
