"""Mathematical programs of the scheduler: the offline optimum (an exact dynamic program for
one job at a fixed instance count, an integer program otherwise) and the window program that
Committed Horizon Control re-solves at every slot."""

from solver.optimize.backends import BACKENDS, Backend, NoSolutionError, SolverLimits
from solver.optimize.dp import exact_dp_applies, solve_single_job
from solver.optimize.integer_program import build_integer_program
from solver.optimize.offline import METHODS, Method, solve_offline
from solver.optimize.plan import Plan

__all__ = [
    "BACKENDS",
    "METHODS",
    "Backend",
    "Method",
    "NoSolutionError",
    "Plan",
    "SolverLimits",
    "build_integer_program",
    "exact_dp_applies",
    "solve_offline",
    "solve_single_job",
]
