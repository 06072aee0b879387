"""Which jobs compete for spot capacity, decided from the workload and the market data.

Jobs interact only through spot availability: on-demand capacity is unlimited. In a market
and slot, the jobs that may hold spot there (active in the slot, allowed the market, spot
allowed) ask for at most ``min(N_max, availability)`` instances each; where two or more of them
could together ask for more than the slot's availability, they compete. Jobs competing in some
market-slot, directly or through others, form one group; no plan of one group can take
capacity another group's plan needs, so each group's best plan is found on its own.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from solver.job import Job
from solver.market import MarketData
from solver.optimize.horizon import active_slots


def competing_groups(jobs: Sequence[Job], data: MarketData) -> list[list[Job]]:
    """``jobs`` split into the smallest groups between which no market-slot's spot capacity
    can bind; groups in order of their first job, members in their given order."""
    parent = list(range(len(jobs)))

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    available = data.availability.astype(np.int64)
    demand = np.zeros((len(jobs), *available.shape), dtype=np.int32)
    for k, job in enumerate(jobs):
        if not job.allow_spot:
            continue
        slots = active_slots(job, data.origin, data.slot_seconds, data.n_slots)
        allowed = [m for m, market in enumerate(data.markets) if job.may_use(market.key)]
        cut = (np.array(allowed, dtype=np.int64)[:, None], np.arange(slots.start, slots.stop))
        demand[k][cut] = np.minimum(job.n_max, available[cut])
    asking = (demand > 0).sum(axis=0)
    binding = (asking >= 2) & (demand.sum(axis=0) > available)
    for m, t in zip(*np.nonzero(binding), strict=True):
        members = np.flatnonzero(demand[:, m, t])
        first = root(int(members[0]))
        for k in members[1:]:
            parent[root(int(k))] = first
    groups: dict[int, list[Job]] = {}
    for k, job in enumerate(jobs):
        groups.setdefault(root(k), []).append(job)
    return list(groups.values())
