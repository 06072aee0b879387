"""Small market data, jobs and policies for solver tests."""

from __future__ import annotations

import numpy as np

from solver.forecast.models import MarketModels, Outlooks
from solver.job import Allocation, Job
from solver.market import Market, MarketData
from solver.observation import Decision, Observation

HOUR = 3600.0


def markets(n: int = 2, on_demand: float = 3.0) -> list[Market]:
    return [Market("aws", "us-east-1", f"us-east-1{'abcdef'[i]}", "p3.2xlarge", on_demand)
            for i in range(n)]


def flat_data(price, availability, on_demand: float = 3.0, slot: float = HOUR) -> MarketData:
    """Market data whose values change only at slot boundaries."""
    price = np.atleast_2d(np.asarray(price, float))
    availability = np.atleast_2d(np.asarray(availability, int))
    return MarketData.from_slots(markets(price.shape[0], on_demand), 0.0, slot, price,
                                 availability)


def cold_outlooks(n_markets: int, origin: float = 0.0, slot: float = HOUR) -> Outlooks:
    """The outlooks of forecasters that have seen nothing yet."""
    empty = np.zeros((n_markets, 0))
    return MarketModels(n_markets, origin, slot).outlooks(empty, empty, origin)


def job(id="j", workload=4.0, release=0.0, soft=10 * HOUR, hard=None, **kw) -> Job:
    return Job(id=id, workload=workload, release=release, soft_deadline=soft,
               hard_deadline=soft if hard is None else hard, **kw)


def crowded():
    """``first`` goes first in priority order (earlier hard deadline) and alone would take the
    cheapest spot, in market 0, that ``second`` (market 0 only) needs; the best plan puts
    ``first`` on market 1."""
    data = flat_data([[0.5, 0.6, 0.5], [0.55, 2.0, 2.0]], [[1, 1, 0], [1, 0, 0]])
    first = job("first", workload=1.0, soft=2 * HOUR, value=10.0, miss_penalty=10.0)
    second = job("second", workload=2.0, soft=3 * HOUR, value=20.0, miss_penalty=20.0,
                 allowed_markets=(data.markets[0].key,))
    return data, [first, second]


class Scripted:
    """Answers from a fixed table ``{slot: {job_id: Allocation}}`` and records what it saw."""

    name = "scripted"

    def __init__(self, table: dict[int, dict[str, Allocation]]) -> None:
        self.table = table
        self.seen: list[Observation] = []

    def decide(self, obs: Observation) -> Decision:
        self.seen.append(obs)
        active = {v.id for v in obs.jobs}
        return {k: a for k, a in self.table.get(obs.slot, {}).items() if k in active}


class RandomPolicy:
    """Seeded random allocations within each job's bounds; for property tests."""

    name = "random"

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def decide(self, obs: Observation) -> Decision:
        out = {}
        for view in obs.jobs:
            if self.rng.random() < 0.2:
                continue
            n = int(self.rng.integers(view.job.n_min, view.job.n_max + 1))
            spot = int(self.rng.integers(0, n + 1))
            out[view.id] = Allocation(int(self.rng.integers(len(obs.markets))), spot, n - spot)
        return out
