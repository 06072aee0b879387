"""The offline optimum: the best plan in hindsight for jobs on known market data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from solver.job import Allocation, Job
from solver.market import MarketData
from solver.migration import DEFAULT_MIGRATION, MigrationTable
from solver.observation import JobView
from solver.optimize.backends import DEFAULT_LIMITS, Backend, SolverLimits, solve_program
from solver.optimize.competition import competing_groups
from solver.optimize.dp import exact_dp_applies, solve_single_job
from solver.optimize.integer_program import build_integer_program
from solver.optimize.plan import Plan
from solver.optimize.shared_capacity import solve_shared
from solver.simulator import validate_jobs

Method = Literal["auto", "dp", "program"]
METHODS: tuple[Method, ...] = ("auto", "dp", "program")

DEFAULT_TIME_LIMIT = 0.5
"""Deterministic seconds (CP-SAT's work counter, not the clock) of search for each group of
competing jobs, past their sequential plan."""


def solve_offline(
    data: MarketData,
    jobs: Sequence[Job],
    method: Method = "auto",
    backend: Backend = "highs",
    limits: SolverLimits = DEFAULT_LIMITS,
    migration: MigrationTable = DEFAULT_MIGRATION,
    time_limit: float = DEFAULT_TIME_LIMIT,
) -> Plan:
    """The utility-maximising plan with the true prices and availability.

    ``auto`` splits the jobs into groups that do not compete for spot capacity
    (:func:`~solver.optimize.competition.competing_groups`) and plans each group on its own:
    a job alone at ``n_min == n_max`` with the exact dynamic program
    (:mod:`solver.optimize.dp`, moves of its checkpoint priced by ``migration``), another job
    alone with the integer program (:mod:`solver.optimize.integer_program`) within ``limits``, jobs
    that compete with :func:`~solver.optimize.shared_capacity.solve_shared` (a plan within
    ``time_limit`` of deterministic search time, and the bound it is proven against). ``dp``
    takes the dynamic program for every job (an error when jobs compete or a job's count may
    vary); ``program`` takes one integer program for all jobs together. The integer program
    does not price moves: for jobs with a checkpoint its plan is not proven best (the replay
    bills them). The plan's ``gap`` sums what each group's solver left unproven.
    """
    if method not in METHODS:
        raise ValueError(f"method={method!r}: expected one of {', '.join(METHODS)}")
    if not time_limit >= 0:
        raise ValueError(f"time_limit={time_limit!r}: expected deterministic seconds >= 0")
    validate_jobs(jobs, data)
    jobs = [j.resolved(list(data.index)) for j in jobs]
    if method == "program":
        return _program(data, jobs, backend, limits)
    groups = competing_groups(jobs, data)
    if method == "dp":
        shared = [j.id for g in groups if len(g) > 1 for j in g]
        if shared:
            raise ValueError(f"method='dp' with jobs {shared} competing for spot capacity: "
                             "expected jobs that do not compete (the dynamic program plans one "
                             "job at a time)")
        return _joined([solve_single_job(data, g[0], migration) for g in groups])
    return _joined([_group(data, g, backend, limits, migration, time_limit) for g in groups])


def _group(data: MarketData, jobs: Sequence[Job], backend: Backend, limits: SolverLimits,
           migration: MigrationTable, time_limit: float) -> Plan:
    """The plan of one group of jobs that share no capacity with other groups."""
    if exact_dp_applies(list(jobs), data, migration):
        return solve_single_job(data, jobs[0], migration)
    if len(jobs) == 1:
        return _program(data, jobs, backend, limits)
    return solve_shared(data, jobs, limits, time_limit)


def _program(data: MarketData, jobs: Sequence[Job], backend: Backend,
             limits: SolverLimits) -> Plan:
    """The integer program's plan for ``jobs`` together, with the gap its solver proved."""
    built = build_integer_program(data, [JobView(j, j.workload, 0.0, None) for j in jobs])
    solution = solve_program(built.program, backend, limits, steps=built.steps)
    return built.plan(solution.values, backend, solution.optimal,
                      solution.bound - solution.objective)


def _joined(parts: Sequence[Plan]) -> Plan:
    """One plan of the plans of groups of jobs that share no capacity."""
    slots: dict[int, dict[str, Allocation]] = {}
    for part in parts:
        for t, allocations in part.slots.items():
            slots.setdefault(t, {}).update(allocations)
    methods = dict.fromkeys(p.method for p in parts) or {"dp": None}
    return Plan({t: slots[t] for t in sorted(slots)},
                sum(p.expected_utility for p in parts), "+".join(methods),
                all(p.optimal for p in parts), sum(p.gap for p in parts))
