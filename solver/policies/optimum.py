"""The offline optimum as a policy: it plans once in hindsight and replays that plan.

It is the yardstick, not an online policy: it is built with the full market data and the
job list, and its reported cost and utility come from replaying the plan through the
simulator, so they obey the simulator's rules exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

from solver.job import Allocation, Allocations, Job
from solver.market import MarketData
from solver.migration import DEFAULT_MIGRATION, MigrationTable
from solver.observation import Observation
from solver.optimize.backends import DEFAULT_LIMITS, Backend, SolverLimits
from solver.optimize.offline import DEFAULT_TIME_LIMIT, Method, solve_offline
from solver.optimize.plan import Plan
from solver.policies.base import PolicyBase


class Optimum(PolicyBase):
    """Replays :func:`~solver.optimize.offline.solve_offline`'s plan for ``jobs`` on ``data``
    (moves priced by ``migration``: replay it with the same table); ``time_limit`` is the
    deterministic seconds of search each group of competing jobs gets (``plan.gap`` says how
    far from the best its plan may be).

    A job still active after its last planned slot (a sliver of work left by floating-point
    rounding) keeps its last planned allocation.
    """

    name = "optimum"
    tags = frozenset({"hindsight"})
    context = ("data", "jobs", "method", "backend", "limits", "migration")

    def __init__(
        self,
        data: MarketData,
        jobs: Sequence[Job],
        method: Method = "auto",
        backend: Backend = "highs",
        limits: SolverLimits = DEFAULT_LIMITS,
        migration: MigrationTable = DEFAULT_MIGRATION,
        time_limit: float = DEFAULT_TIME_LIMIT,
    ) -> None:
        self.data = data
        self.time_limit = time_limit
        self.plan: Plan = solve_offline(data, jobs, method, backend, limits, migration,
                                        time_limit)
        self._last: dict[str, tuple[int, Allocation]] = {}
        for t, allocations in self.plan.slots.items():
            for job_id, allocation in allocations.items():
                self._last[job_id] = (t, allocation)

    def decide(self, obs: Observation) -> Allocations:
        if obs.time != self.data.slot_start(obs.slot):
            raise ValueError(
                f"observation slot={obs.slot} time={obs.time!r}: expected the slot grid of the "
                f"data the optimum planned on (slot start {self.data.slot_start(obs.slot)!r})"
            )
        planned = self.plan.at(obs.slot)
        out: dict[str, Allocation] = {}
        for view in obs.jobs:
            allocation = planned.get(view.id)
            if allocation is None and view.id in self._last:
                last_slot, last = self._last[view.id]
                allocation = last if obs.slot > last_slot else None
            if allocation is not None:
                out[view.id] = allocation
        return out
