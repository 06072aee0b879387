"""Committed Horizon Control (Chen, Comden, Liu, Gandhi, Wierman, SIGMETRICS 2016).

**Planning on distributions.** With the learned distributions (the default forecast), CHC is
a composition of planners (:mod:`solver.policies.routing`): a fixed-count job follows the
stochastic window programs of :mod:`solver.policies.stochastic_planner` (over the ``w`` slots of the
window, the work left after it valued at on-demand to the end: the terminal condition below),
in one market or several, or the prediction-free rule when it shares a market with another
fixed-count job or its markets' slots keep too little of the spot their boundaries show; every
other job, or every job with point or perfect forecasts, is planned by the deterministic window
programs below (:class:`WindowPlanner`).

``v`` fixed-horizon controllers run staggered: controller ``k`` re-solves at the slots ``t``
with ``t mod v = k``, on the forecast of the next ``w`` slots, and commits to the first ``v``
slots of its plan. The allocation of a slot averages the commitments of every controller that
covers it (``v = 1``: receding-horizon control; ``v = w``: averaging fixed-horizon control).

The window program is that of :mod:`solver.optimize.integer_program` with its terminal condition
(leftover work priced at on-demand and kept finishable by the deadline), solved either per job
with capacity coordination (``solver="decomposed"``, :mod:`solver.optimize.decomposed`, fast
enough for thousands of jobs) or as one integer program (``solver="program"``, warm-started
from the same controller's previous plan shifted by ``v`` slots).

**Rounding rule.** For each job, over the controllers that planned it (a controller that
solved before the job arrived has no say; one that planned it idle counts as 0 instances):

1. ``S`` and ``O`` are the mean spot and on-demand counts; the job idles if
   ``S + O < N_min / 2``;
2. the market is the one holding the most instances summed over the commitments (ties: the
   job's current market, then the lowest index);
3. ``n = clamp(round_half_up(S + O), N_min, N_max)``, spot ``= min(round_half_up(S), n)``,
   the rest on-demand.

**Repair**, in the simulator's spot-priority order: a job whose rounded allocation would
leave work that on-demand at ``N_max`` can no longer finish by the target deadline, or by the
hard deadline should the slot's spot be lost, runs on-demand at ``N_max`` (with an exact
forecast source, as the oracle is, spot is never lost: the job runs ``N_max`` instances, its
rounded allocation, else spot, else on-demand, topped up with on-demand) — Greedy's safety net,
:func:`~solver.policies.common.must_use_on_demand`, applied to the allocation chosen rather
than to idling. Spot is then capped by the availability the boundary shows less what jobs
before took, the shortfall moving to on-demand. A job on on-demand alone whose plan takes no
spot over the whole window runs the count on-demand only would
(:func:`~solver.policies.common.cheapest_on_demand`): the program prices work linearly and
never sees that fewer instances finish in as many whole slots for less; a job planned to take
spot later keeps its count, and the slack it leaves for that spot.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Set
from dataclasses import dataclass

import numpy as np

from solver.job import Allocation
from solver.market import MarketData, hours_to_slots
from solver.observation import JobView, Observation
from solver.optimize.backends import Backend, SolverLimits, solve_program
from solver.optimize.decomposed import solve_decomposed
from solver.optimize.integer_program import build_integer_program
from solver.optimize.plan import Plan
from solver.policies.base import PolicyBase
from solver.policies.common import cheapest_on_demand, fit_cap, keeps_deadline, on_demand, spot
from solver.policies.forecast_sources import DistributionForecast, ForecastSource, make_source
from solver.policies.prediction_free import ThresholdRule
from solver.policies.routing import WINDOW, Composition
from solver.policies.stochastic_planner import StochasticPlanner

WINDOW_SOLVERS = ("decomposed", "program")

WINDOW_LIMITS = SolverLimits(node_limit=2_000, deterministic_seconds=5.0, relative_gap=1e-4)
"""Search limits of the integer window program: it is re-solved every slot."""


@dataclass
class _Controller:
    """One fixed-horizon controller: when it last solved, its commitments and its plan."""

    solved_at: int
    committed: dict[int, dict[str, Allocation | None]]
    plan: Plan | None


class CommittedHorizonControl(Composition, PolicyBase):
    """CHC with a window of ``window_hours`` (rounded to whole slots, at least one), a
    commitment of ``commitment`` slots (``1 <= v <= w``), planning on the ``forecast`` kind
    (:data:`~solver.policies.forecast_sources.FORECAST_KINDS`; the oracle needs the realised
    market ``data``) or on a given ``source``: the stochastic window programs on the learned
    distributions, and the deterministic window programs (:class:`WindowPlanner`), routed by
    :mod:`solver.policies.routing`."""

    name = "chc"
    tags = frozenset({"needs_forecasts"})
    context = ("data", "source", "backend", "limits")
    quick = ({"window_hours": 3.0},)

    def __init__(
        self,
        window_hours: float = 24.0,
        commitment: int = 1,
        solver: str = "decomposed",
        forecast: str = "distribution",
        resolve_hours: float = 6.0,
        data: MarketData | None = None,
        source: ForecastSource | None = None,
        backend: Backend = "highs",
        limits: SolverLimits = WINDOW_LIMITS,
    ) -> None:
        windows = WindowPlanner(window_hours, commitment, solver,
                                 source if source is not None else make_source(forecast, data),
                                 backend, limits)
        self.source = windows.source
        self.forecast = forecast
        self.window_hours = window_hours
        self.commitment = commitment
        self.solver = solver
        self.resolve_hours = resolve_hours
        programs = (StochasticPlanner(self.source, resolve_hours, window_hours, solves=12)
                    if isinstance(self.source, DistributionForecast) else None)
        super().__init__(programs, windows, ThresholdRule())


class WindowPlanner:
    """The deterministic window programs of the module doc: ``v`` staggered fixed-horizon
    controllers, their commitments averaged, rounded and repaired."""

    name = WINDOW

    def __init__(self, window_hours: float, commitment: int, solver: str,
                 source: ForecastSource, backend: Backend, limits: SolverLimits) -> None:
        if not (math.isfinite(window_hours) and window_hours > 0):
            raise ValueError(f"window_hours={window_hours!r}: expected a positive duration")
        if isinstance(commitment, bool) or not isinstance(commitment, int) or commitment < 1:
            raise ValueError(f"commitment={commitment!r}: expected a whole number of slots >= 1")
        if solver not in WINDOW_SOLVERS:
            raise ValueError(f"solver={solver!r}: expected one of {', '.join(WINDOW_SOLVERS)}")
        self.source = source
        self.window_hours = window_hours
        self.commitment = commitment
        self.solver = solver
        self.backend = backend
        self.limits = limits
        self.window = 0
        self._controllers: dict[int, _Controller] = {}

    def plan(self, obs: Observation) -> tuple[dict[str, Allocation | None], np.ndarray]:
        """The allocations of the jobs of ``obs`` and the spot they left."""
        if not self.window:
            self.window = hours_to_slots(self.window_hours, obs.slot_seconds)
            if self.commitment > self.window:
                raise ValueError(
                    f"commitment={self.commitment}: expected at most the window of "
                    f"{self.window} slots ({self.window_hours:g} h)")
        k = obs.slot % self.commitment
        previous = self._controllers.get(k)
        plans, plan = self._solve(obs, previous)
        self._controllers[k] = _Controller(
            obs.slot,
            {obs.slot + i: {job_id: steps[i] for job_id, steps in plans.items()}
             for i in range(self.commitment)},
            plan,
        )
        covering = [c.committed[obs.slot] for c in self._controllers.values()
                    if obs.slot in c.committed]
        no_spot = {job_id for job_id, steps in plans.items()
                   if all(a is None or a.spot == 0 for a in steps)}
        return _repair(obs, {v.id: _average([c[v.id] for c in covering if v.id in c], v)
                             for v in obs.jobs}, self.source.exact, no_spot)

    def _solve(
        self, obs: Observation, previous: _Controller | None
    ) -> tuple[dict[str, list[Allocation | None]], Plan | None]:
        price, availability = self.source.window(obs, self.window)
        window = MarketData.from_slots(obs.markets, obs.time, obs.slot_seconds,
                                       np.asarray(price, dtype=float),
                                       np.asarray(availability, dtype=np.int64))
        if self.solver == "decomposed":
            return solve_decomposed(obs, window), None
        built = build_integer_program(window, obs.jobs, terminal=True)
        hint = {}
        if previous is not None and previous.plan is not None:
            hint = built.hint(previous.plan, shift=obs.slot - previous.solved_at)
        solution = solve_program(built.program, self.backend, self.limits, hint, built.steps)
        plan = built.plan(solution.values, self.backend, solution.optimal)
        steps = {v.id: [plan.at(i).get(v.id) for i in range(self.window)] for v in obs.jobs}
        return steps, plan


def _round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


def _average(opinions: list[Allocation | None], view: JobView) -> Allocation | None:
    """The rounding rule of the module doc."""
    if not opinions:
        return None
    job = view.job
    mean_spot = sum(a.spot for a in opinions if a is not None) / len(opinions)
    mean_on_demand = sum(a.on_demand for a in opinions if a is not None) / len(opinions)
    if mean_spot + mean_on_demand < job.n_min / 2:
        return None
    votes: dict[int, int] = {}
    for a in opinions:
        if a is not None:
            votes[a.market] = votes.get(a.market, 0) + a.total
    current = view.current.market if view.current is not None else -1
    market = max(votes, key=lambda m: (votes[m], m == current, -m))
    n = min(max(_round_half_up(mean_spot + mean_on_demand), job.n_min), job.n_max)
    s = min(_round_half_up(mean_spot), n)
    return Allocation(market, s, n - s)


def _repair(obs: Observation, wanted: Mapping[str, Allocation | None], spot_is_safe: bool,
            no_spot: Set[str]) -> tuple[dict[str, Allocation | None], np.ndarray]:
    """Cap spot by the boundary's availability in priority order; apply the safety net; the
    jobs of ``no_spot`` (planned without spot over the window) on on-demand alone at the
    cheapest count."""
    left = np.array(obs.availability_now, dtype=np.int64)
    out: dict[str, Allocation | None] = {}
    for view in obs.jobs:
        choice = wanted.get(view.id)
        if not keeps_deadline(obs, view, choice, spot_is_safe):
            choice = _safe_allocation(obs, view, choice, left) if spot_is_safe \
                else on_demand(obs, view)
        if choice is None:
            continue
        kept = min(choice.spot, int(left[choice.market])) if view.job.allow_spot else 0
        choice = Allocation(choice.market, kept, choice.total - kept)
        if choice.spot == 0 and view.id in no_spot:
            choice = cheapest_on_demand(obs, view)
        choice = fit_cap(obs, view, choice)
        if choice is None:
            continue
        left[choice.market] -= choice.spot
        out[view.id] = choice
    return out, left


def _safe_allocation(obs: Observation, view: JobView, choice: Allocation | None,
                     left: np.ndarray) -> Allocation | None:
    """``N_max`` instances when spot cannot be lost: the chosen allocation (else spot where
    the boundary offers it, else on-demand) topped up with on-demand (within the job's cap)."""
    choice = choice or spot(obs, view, left) or on_demand(obs, view)
    if choice is None:
        return None
    return fit_cap(obs, view, Allocation(choice.market, choice.spot,
                                         view.job.n_max - choice.spot))
