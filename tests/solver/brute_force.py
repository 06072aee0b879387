"""Best plan by enumerating every allocation sequence through the simulator (tiny cases only)."""

from __future__ import annotations

import itertools

from solver.job import Allocation, Job
from solver.market import MarketData
from solver.migration import DEFAULT_MIGRATION, MigrationTable
from solver.optimize.horizon import active_slots
from solver.simulator import SimulationResult, simulate
from tests.solver.helpers import Scripted


def job_options(job: Job, data: MarketData, t: int) -> list[Allocation | None]:
    """Idle, and every allocation the job may request in slot ``t`` that spot can grant
    (asking for more spot than is available is granted as asking for what is) and its cap
    allows."""
    out: list[Allocation | None] = [None]
    for m, market in enumerate(data.markets):
        if not job.may_use(market.key):
            continue
        for n in range(job.n_min, job.n_max + 1):
            for s in range(n + 1 if job.allow_spot else 1):
                a = Allocation(m, s, n - s)
                bill = a.hourly_usd(data.boundary_price[m, t], market.on_demand_price)
                if s <= data.availability[m, t] and job.within_cap(bill):
                    out.append(a)
    return out


def slot_choices(data: MarketData, jobs: list[Job]) -> list[list[tuple[Allocation | None, ...]]]:
    """Per slot, every combination of the jobs' options that fits spot capacity."""
    per_slot = []
    for t in range(data.n_slots):
        choices = [job_options(j, data, t)
                   if t in active_slots(j, data.origin, data.slot_seconds, data.n_slots)
                   else [None] for j in jobs]
        per_slot.append([c for c in itertools.product(*choices) if _fits(c, data, t)])
    return per_slot


def enumerate_best(data: MarketData, jobs: list[Job],
                   migration: MigrationTable = DEFAULT_MIGRATION) -> SimulationResult:
    """The simulation of highest total utility over all plans."""
    best: SimulationResult | None = None
    for plan in itertools.product(*slot_choices(data, jobs)):
        table = {t: {j.id: a for j, a in zip(jobs, combo, strict=True) if a is not None}
                 for t, combo in enumerate(plan)}
        result = simulate(data, jobs, Scripted(table), migration=migration)
        if best is None or result.total_utility > best.total_utility:
            best = result
    if best is None:
        raise ValueError("no plan to enumerate")
    return best


def plan_count(data: MarketData, jobs: list[Job]) -> int:
    count = 1
    for combos in slot_choices(data, jobs):
        count *= len(combos)
    return count


def _fits(combo: tuple[Allocation | None, ...], data: MarketData, t: int) -> bool:
    used = [0] * len(data.markets)
    for a in combo:
        if a is not None:
            used[a.market] += a.spot
    return all(u <= data.availability[m, t] for m, u in enumerate(used))
