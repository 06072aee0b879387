"""The hindsight plan of a group of jobs that compete for spot capacity, found within a
deterministic budget and with a proven bound.

Three steps, each deterministic (no clock):

1. *Bound*: the linear relaxation of the group's integer program
   (:mod:`solver.optimize.integer_program`) bounds the utility any plan can reach.
2. *Sequential plan*: the jobs in the simulator's priority order (earliest hard deadline, then
   id), each given its own best plan on the spot capacity the jobs before it leave; together
   they keep to every market-slot's availability.
3. *Search*: unless the sequential plan is already within the limits' relative gap of the
   bound, the group's integer program, started from the sequential plan, solved by CP-SAT
   within ``time_limit`` deterministic seconds (its work counter, not the clock).

Both plans are valued by the integer program (the sequential plan with its configurations
fixed); the better is returned with ``gap`` the relaxation's bound less its utility, and is
optimal when that gap is within the limits' relative tolerance.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from solver.job import Allocation, Job
from solver.market import MarketData
from solver.observation import JobView
from solver.optimize.backends import (
    Backend,
    NoSolutionError,
    SolverLimits,
    relaxation_bound,
    solve_program,
)
from solver.optimize.dp import exact_dp_applies, solve_single_job
from solver.optimize.integer_program import IntegerProgram, build_integer_program
from solver.optimize.plan import Plan

SEARCH_METHOD: Backend = "cp-sat"
"""The backend of the search step (the one whose limit is deterministic time)."""


def solve_shared(data: MarketData, jobs: Sequence[Job], limits: SolverLimits,
                 time_limit: float) -> Plan:
    """The plan of ``jobs`` (that compete for spot capacity) and its proven gap (module doc)."""
    built = build_integer_program(data, [JobView(j, j.workload, 0.0, None) for j in jobs])
    bound = relaxation_bound(built.program)
    plan = _valued(built, sequential_plan(data, jobs, limits), limits)
    if time_limit > 0 and not _proven(plan.expected_utility, bound, limits):
        search = dataclasses.replace(limits, deterministic_seconds=time_limit)
        try:
            found = solve_program(built.program, SEARCH_METHOD, search, hint=built.hint(plan),
                                  steps=built.steps)
        except NoSolutionError:
            found = None
        if found is not None and found.objective > plan.expected_utility:
            plan = built.plan(found.values, SEARCH_METHOD, False)
    optimal = _proven(plan.expected_utility, bound, limits)
    return dataclasses.replace(plan, optimal=optimal,
                               gap=0.0 if optimal else max(0.0, bound - plan.expected_utility))


def _proven(utility: float, bound: float, limits: SolverLimits) -> bool:
    """True when ``bound`` is within the limits' relative gap of ``utility``."""
    return bound - utility <= limits.relative_gap * max(1.0, abs(bound))


def _valued(built: IntegerProgram, plan: Plan, limits: SolverLimits) -> Plan:
    """``plan`` as the program values it: its configurations fixed, the rest solved."""
    lower, upper = list(built.program.lower), list(built.program.upper)
    for jv in built.jobs:
        for t in jv.slots:
            chosen = plan.at(t).get(jv.view.id)
            if chosen is not None and chosen not in jv.run[t]:
                raise ValueError(f"job {jv.view.id!r} slot {t}: {chosen} is not a configuration "
                                 "of its program")
            for config, y in jv.run[t].items():
                lower[y] = upper[y] = 1.0 if config == chosen else 0.0
    fixed = dataclasses.replace(built.program, lower=lower, upper=upper)
    solution = solve_program(fixed, "highs", limits)
    return built.plan(solution.values, plan.method, False)


def sequential_plan(data: MarketData, jobs: Sequence[Job], limits: SolverLimits) -> Plan:
    """Each job's plan alone, in priority order, on the spot capacity left by the jobs before
    it: the exact dynamic program's at each instance count the job may run (the best of them),
    or the job's integer program (HiGHS within ``limits``) where the dynamic program does not
    apply. ``expected_utility`` is the sum of the parts' own valuations."""
    left = data.availability.astype(np.int64)
    slots: dict[int, dict[str, Allocation]] = {}
    utility = 0.0
    for job in sorted(jobs, key=lambda j: (j.hard_deadline, j.id)):
        residual = dataclasses.replace(data, availability=left.copy())
        part = _alone(residual, job, limits)
        utility += part.expected_utility
        for t, allocations in part.slots.items():
            for job_id, allocation in allocations.items():
                left[allocation.market, t] -= allocation.spot
                slots.setdefault(t, {})[job_id] = allocation
    return Plan({t: slots[t] for t in sorted(slots)}, utility, "sequential")


def _alone(data: MarketData, job: Job, limits: SolverLimits) -> Plan:
    """``job``'s best plan at one instance count throughout, or its integer program's plan."""
    fixed = [dataclasses.replace(job, n_min=n, n_max=n) for n in range(job.n_min, job.n_max + 1)]
    if all(exact_dp_applies([f], data) for f in fixed):
        plans = [solve_single_job(data, f) for f in fixed]
        return max(plans, key=lambda p: p.expected_utility)
    built = build_integer_program(data, [JobView(job, job.workload, 0.0, None)])
    solution = solve_program(built.program, "highs", limits, steps=built.steps)
    return built.plan(solution.values, "highs", solution.optimal)
