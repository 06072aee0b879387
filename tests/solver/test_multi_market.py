"""The risk-aware planner for a job allowed in several markets: moves priced, plans repeatable."""

import numpy as np
import pytest

from solver.market import Market, MarketData
from solver.migration import DEFAULT_MIGRATION
from solver.policies import make_policy
from solver.simulator import simulate
from tests.solver.helpers import HOUR, job


def _market_data(seed: int, slots: int = 48) -> MarketData:
    """Three zones in three regions, each with spot that comes and goes."""
    rng = np.random.default_rng(seed)
    zones = [Market("aws", region, f"{region}a", "p3.2xlarge", 3.0)
             for region in ("us-east-1", "us-east-2", "us-west-2")]
    price = rng.uniform(0.6, 1.6, (3, slots))
    availability = (rng.random((3, slots)) < rng.uniform(0.4, 0.9, (3, 1))).astype(int)
    return MarketData.from_slots(zones, 0.0, HOUR, price, availability)


def _job(data: MarketData, gb: float):
    return job(id="free", workload=14.0, release=8 * HOUR, soft=34 * HOUR,
               restart_overhead=720.0, checkpoint_gb=gb,
               allowed_markets=tuple(m.key for m in data.markets))


def _priced(usd_per_gb: float):
    return DEFAULT_MIGRATION.overridden_by(
        {"egress_usd_per_gb": [{"from": "*", "locality": "cross-region",
                                "usd_per_gb": usd_per_gb}]})


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_dearer_migration_never_gives_more_moves(seed):
    data = _market_data(seed)
    moves = []
    for usd in (0.0, 0.02, 0.2, 2.0):
        result = simulate(data, [_job(data, 50.0)], make_policy("risk-aware"),
                          migration=_priced(usd)).jobs[0]
        assert result.hard_deadline_met
        moves.append(result.migrations)
    assert moves == sorted(moves, reverse=True)


def test_moves_are_priced_a_free_move_is_taken_a_dear_one_is_not():
    """Two regions: the job's home has no spot, the other has cheap spot throughout. With moves
    free it moves there; at 10 USD/GB the egress outweighs what spot saves, and it runs
    on-demand in its home region."""
    slots = 40
    zones = [Market("aws", r, f"{r}a", "p3.2xlarge", 3.0) for r in ("us-east-1", "us-west-2")]
    data = MarketData.from_slots(zones, 0.0, HOUR, np.full((2, slots), 0.9),
                                 np.vstack([np.zeros(slots, int), np.ones(slots, int)]))
    home = job(id="free", workload=6.0, release=8 * HOUR, soft=20 * HOUR,
               restart_overhead=720.0, checkpoint_gb=50.0, home_region="aws/us-east-1",
               allowed_markets=tuple(m.key for m in data.markets))
    free = simulate(data, [home], make_policy("risk-aware"), migration=_priced(0.0)).jobs[0]
    dear = simulate(data, [home], make_policy("risk-aware"), migration=_priced(10.0)).jobs[0]
    assert free.spot_instance_hours > 0
    assert dear.egress_usd == 0 and dear.spot_instance_hours == 0  # a move within its region
    assert free.cost < dear.cost


def test_the_same_seed_gives_the_same_plan():
    data = _market_data(5)
    runs = [simulate(data, [_job(data, 50.0)], make_policy("risk-aware"),
                     migration=_priced(0.02)) for _ in range(2)]
    assert runs[0].decisions == runs[1].decisions

