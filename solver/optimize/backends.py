"""Solve a :class:`LinearProgram` with HiGHS (through MathOpt) or CP-SAT, deterministically.

Both run with a fixed seed; CP-SAT on one worker, HiGHS with its own sequential, deterministic
branch and bound (its thread count is a process-wide setting MathOpt does not pass). Their
limits are deterministic: HiGHS stops at a branch-and-bound node limit, CP-SAT at a
deterministic-time limit (its work counter, not the clock).

CP-SAT needs integer rows: each continuous variable becomes an integer count of its ``step``,
and each row is scaled by a power of ten until its coefficients are integers (to
within 1e-9), or else until the smallest is at least 1e6 and then rounded; lower bounds are
rounded up and upper bounds down. The objective stays in floating point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from ortools.math_opt import model_pb2
from ortools.math_opt.python import mathopt
from ortools.sat.python import cp_model

from solver.optimize.linear import LinearProgram

Backend = Literal["highs", "cp-sat"]
BACKENDS: tuple[Backend, ...] = ("highs", "cp-sat")


@dataclass(frozen=True, slots=True)
class SolverLimits:
    """Deterministic search limits and the accepted optimality gap."""

    node_limit: int = 100_000
    deterministic_seconds: float = 60.0
    relative_gap: float = 1e-6
    seed: int = 0

    def __post_init__(self) -> None:
        if self.node_limit < 1:
            raise ValueError(f"node_limit={self.node_limit}: expected at least 1 node")
        if not self.deterministic_seconds > 0:
            raise ValueError(
                f"deterministic_seconds={self.deterministic_seconds!r}: expected a positive "
                "amount of deterministic time"
            )
        if not 0 <= self.relative_gap < 1:
            raise ValueError(f"relative_gap={self.relative_gap!r}: expected 0 <= gap < 1")


@dataclass(frozen=True)
class Solution:
    """Variable values, the objective they reach, whether optimality was proven, and the
    solver's proven upper bound on the objective (``inf`` when it proved none)."""

    values: np.ndarray
    objective: float
    optimal: bool
    bound: float = math.inf


DEFAULT_LIMITS = SolverLimits()


class NoSolutionError(RuntimeError):
    """The backend found no feasible solution within its limits."""


def solve_program(
    program: LinearProgram,
    backend: Backend = "highs",
    limits: SolverLimits = DEFAULT_LIMITS,
    hint: dict[int, float] | None = None,
    steps: dict[int, float] | None = None,
) -> Solution:
    """Maximise ``program``; ``hint`` suggests a starting solution (variable index → value);
    ``steps`` gives the resolution of continuous variables for CP-SAT (default 1e-4)."""
    if backend == "highs":
        return _solve_highs(program, limits, hint or {})
    if backend == "cp-sat":
        return _solve_cp_sat(program, limits, hint or {}, steps or {})
    raise ValueError(f"backend={backend!r}: expected one of {', '.join(BACKENDS)}")


def relaxation_bound(program: LinearProgram) -> float:
    """The optimum of ``program`` with integrality dropped (HiGHS's simplex): an upper bound on
    the optimum of ``program``."""
    relaxed = replace(program, integer=[False] * program.n_vars)
    return _solve_highs(relaxed, DEFAULT_LIMITS, {}).objective


def _solve_highs(program: LinearProgram, limits: SolverLimits, hint: dict[int, float]) -> Solution:
    proto = model_pb2.ModelProto()
    n = program.n_vars
    proto.variables.ids.extend(range(n))
    proto.variables.lower_bounds.extend(program.lower)
    proto.variables.upper_bounds.extend(program.upper)
    proto.variables.integers.extend(program.integer)
    proto.objective.maximize = True
    proto.objective.offset = program.offset
    gains = sorted(program.objective.items())
    proto.objective.linear_coefficients.ids.extend(v for v, _ in gains)
    proto.objective.linear_coefficients.values.extend(c for _, c in gains)
    proto.linear_constraints.ids.extend(range(program.n_rows))
    proto.linear_constraints.lower_bounds.extend(program.row_lower)
    proto.linear_constraints.upper_bounds.extend(program.row_upper)
    matrix = proto.linear_constraint_matrix
    for r, (cols, coefs) in enumerate(zip(program.row_vars, program.row_coefs, strict=True)):
        order = sorted(range(len(cols)), key=cols.__getitem__)
        matrix.row_ids.extend([r] * len(cols))
        matrix.column_ids.extend(cols[i] for i in order)
        matrix.coefficients.extend(coefs[i] for i in order)
    model = mathopt.Model.from_model_proto(proto)
    variables = [model.get_variable(i) for i in range(n)]
    params = mathopt.SolveParameters(
        random_seed=limits.seed,
        node_limit=limits.node_limit,
        relative_gap_tolerance=limits.relative_gap,
    )
    model_params = None
    if hint:
        model_params = mathopt.ModelSolveParameters(
            solution_hints=[mathopt.SolutionHint(
                variable_values={variables[v]: x for v, x in hint.items()})]
        )
    result = mathopt.solve(model, mathopt.SolverType.HIGHS, params=params,
                           model_params=model_params)
    if not result.has_primal_feasible_solution():
        raise NoSolutionError(f"HiGHS found no solution: {result.termination}")
    values = np.array(result.variable_values(variables), dtype=float)
    optimal = result.termination.reason == mathopt.TerminationReason.OPTIMAL
    objective = program.value(values)
    bound = result.termination.objective_bounds.dual_bound
    return Solution(values, objective, optimal, _proven(bound, objective))


def _solve_cp_sat(
    program: LinearProgram, limits: SolverLimits, hint: dict[int, float],
    steps: dict[int, float],
) -> Solution:
    model = cp_model.CpModel()
    scale = np.array([1.0 if program.integer[v] else steps.get(v, 1e-4)
                      for v in range(program.n_vars)])
    variables = []
    for v in range(program.n_vars):
        lo = math.ceil(program.lower[v] / scale[v] - 1e-9)
        hi_raw = program.upper[v] / scale[v] if math.isfinite(program.upper[v]) else 2**40
        variables.append(model.new_int_var(lo, math.floor(min(hi_raw, 2**40) + 1e-9), f"v{v}"))
    for cols, coefs, lo, hi in zip(program.row_vars, program.row_coefs, program.row_lower,
                                   program.row_upper, strict=True):
        scaled = np.array(coefs) * scale[cols]
        factor = _integer_factor(scaled)
        ints = np.round(scaled * factor).astype(np.int64)
        lower = math.ceil(lo * factor - 1e-6) if math.isfinite(lo) else cp_model.INT_MIN
        upper = math.floor(hi * factor + 1e-6) if math.isfinite(hi) else cp_model.INT_MAX
        expr = cp_model.LinearExpr.weighted_sum([variables[c] for c in cols], ints.tolist())
        model.add_linear_constraint(expr, lower, upper)
    gains = sorted(program.objective.items())
    model.maximize(cp_model.LinearExpr.weighted_sum(
        [variables[v] for v, _ in gains], [c * scale[v] for v, c in gains]))
    for v, x in sorted(hint.items()):
        model.add_hint(variables[v], round(x / scale[v]))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = limits.seed
    solver.parameters.max_deterministic_time = limits.deterministic_seconds
    solver.parameters.relative_gap_limit = limits.relative_gap
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise NoSolutionError(f"CP-SAT found no solution: {solver.status_name(status)}")
    values = np.array([solver.value(x) for x in variables], dtype=float) * scale
    objective = program.value(values)
    bound = solver.best_objective_bound + program.offset
    return Solution(values, objective, status == cp_model.OPTIMAL, _proven(bound, objective))


def _proven(bound: float, objective: float) -> float:
    """The solver's bound, no lower than the objective it reached (a bound within the
    solver's tolerances of it may fall a rounding error short)."""
    return max(bound, objective) if math.isfinite(bound) else math.inf


def _integer_factor(coefs: np.ndarray) -> float:
    """A power of ten that makes ``coefs`` integers: the smallest one, up to 1e6, that does so
    to within 1e-9, else one that leaves every coefficient at least 1e6 after scaling (so
    rounding moves none by more than one part in two million)."""
    factor = 1.0
    while factor <= 1e6:
        scaled = coefs * factor
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-9 * np.maximum(1.0, np.abs(scaled))):
            return factor
        factor *= 10.0
    smallest = float(np.min(np.abs(coefs)))
    return 10.0 ** math.ceil(math.log10(1e6 / smallest))
