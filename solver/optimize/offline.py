"""The offline optimum: the best plan in hindsight for jobs on known market data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from solver.job import Job
from solver.market import MarketData
from solver.migration import DEFAULT_MIGRATION, MigrationTable
from solver.observation import JobView
from solver.optimize.backends import DEFAULT_LIMITS, Backend, SolverLimits, solve_program
from solver.optimize.dp import exact_dp_applies, solve_single_job
from solver.optimize.plan import Plan
from solver.optimize.program import build_program
from solver.simulator import validate_jobs

Method = Literal["auto", "dp", "program"]
METHODS: tuple[Method, ...] = ("auto", "dp", "program")


def solve_offline(
    data: MarketData,
    jobs: Sequence[Job],
    method: Method = "auto",
    backend: Backend = "highs",
    limits: SolverLimits = DEFAULT_LIMITS,
    migration: MigrationTable = DEFAULT_MIGRATION,
) -> Plan:
    """The utility-maximising plan with the true prices and availability.

    ``auto`` takes the exact dynamic program (:mod:`solver.optimize.dp`) where it applies —
    one job with ``n_min == n_max``, over every market it may use, moves of its checkpoint
    priced by ``migration`` — and the integer program (:mod:`solver.optimize.program`)
    otherwise; ``dp`` and ``program`` force one of them. The integer program does not price
    moves: for jobs with a checkpoint its plan is not proven best (the replay bills them).
    """
    if method not in METHODS:
        raise ValueError(f"method={method!r}: expected one of {', '.join(METHODS)}")
    validate_jobs(jobs, data)
    jobs = [j.resolved(list(data.index)) for j in jobs]
    if method == "dp" or (method == "auto" and exact_dp_applies(jobs, data, migration)):
        if len(jobs) != 1:
            raise ValueError(f"method='dp' with {len(jobs)} jobs: expected exactly one job")
        return solve_single_job(data, jobs[0], migration)
    built = build_program(data, [JobView(j, j.workload, 0.0, None) for j in jobs])
    solution = solve_program(built.program, backend, limits, steps=built.steps)
    return built.plan(solution.values, backend, solution.optimal)
