"""Uniform Progress with SkyPilot's eager failover across markets."""

import numpy as np
import pytest

from solver.job import Allocation
from solver.market import Market, MarketData
from solver.policies import make_policy
from solver.simulator import simulate
from tests.solver.helpers import HOUR, job

ZONES = (("us-east-1", "us-east-1a"), ("us-east-1", "us-east-1c"), ("us-west-2", "us-west-2a"))


def zones(price, availability, on_demand=3.0) -> MarketData:
    price = np.asarray(price, float)
    markets = [Market("aws", r, z, "p3.2xlarge", on_demand) for r, z in ZONES[:len(price)]]
    return MarketData.from_slots(markets, 0.0, HOUR, price, np.asarray(availability, int))


def runs(result) -> list[tuple[int, Allocation]]:
    return [(t, a) for t, _, a in result.decisions if a.total]


def test_spot_goes_to_the_cheapest_market_and_after_a_preemption_leaves_its_region():
    # us-east-1a is cheapest and lost at slot 2; us-east-1c is cheaper than us-west-2a but in
    # the region just preempted, so the job fails over to us-west-2a.
    data = zones([[0.5] * 6, [0.6] * 6, [0.9] * 6],
                 [[1, 1, 0, 0, 0, 0], [1] * 6, [1] * 6])
    result = simulate(data, [job(workload=3.0, soft=6 * HOUR)], make_policy("eager-failover"))
    assert runs(result) == [(0, Allocation(0, 1)), (1, Allocation(0, 1)),
                            (2, Allocation(2, 1))]


def test_the_safety_net_buys_on_demand_for_good_once_only_its_time_is_left():
    # 5.5 h of work due in 6 h: ⌈5.5 h⌉ = 6 h of slots is all that is left, from the start.
    data = zones([[0.5] * 6, [0.6] * 6], [[1] * 6, [1] * 6])
    result = simulate(data, [job(workload=5.5, soft=6 * HOUR)], make_policy("eager-failover"))
    assert {a for _, a in runs(result)} == {Allocation(0, 0, 1)}
    assert result.jobs[0].hard_deadline_met


def test_behind_the_uniform_line_without_spot_it_buys_on_demand_and_leaves_it_once_ahead():
    # No spot in slots 1-3: idle at first, then on-demand while behind the line; with spot
    # back and the job two overheads ahead of the line, it returns to spot.
    data = zones([[0.5] * 12], [[1, 0, 0, 0] + [1] * 8])
    result = simulate(data, [job(workload=4.0, soft=12 * HOUR, restart_overhead=60.0)],
                      make_policy("eager-failover"))
    kinds = ["spot" if a.spot else "on-demand" for _, a in runs(result)]
    assert kinds[0] == "spot" and "on-demand" in kinds and kinds[-1] == "spot"
    assert result.jobs[0].hard_deadline_met


def test_a_job_free_to_move_pays_egress_when_it_fails_over_to_another_region():
    data = zones([[0.5] * 6, [0.6] * 6, [0.9] * 6],
                 [[1, 1, 0, 0, 0, 0], [1] * 6, [1] * 6])
    result = simulate(data, [job(workload=3.0, soft=6 * HOUR, checkpoint_gb=50.0)],
                      make_policy("eager-failover"))
    assert result.jobs[0].migrations == 1
    assert result.jobs[0].egress_usd == pytest.approx(50 * 0.02)
