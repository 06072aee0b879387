"""Stochastic programs for fixed-count jobs, one per job and market, solved and followed.

A job at a fixed instance count (``N_min = N_max``) routed here (:mod:`solver.policies.routing`)
follows stochastic dynamic programs (:mod:`solver.optimize.stochastic`): each minimises the
expected bill minus the value of finishing over (slack, mode, capacity, age of the capacity
run) in one market, with capacity following that market's run hazards by age and time of day
and on-demand at that market's price. Restart overhead is priced as a risk: entering spot pays
it, and the program knows how likely the run is to end before the overhead pays off. With a
``window``, a program ends there and values the work left at on-demand to the end (Committed
Horizon Control's terminal condition); without one it runs to the hard deadline. A program is
solved on the chance that the market offers at least the job's instances
(:meth:`~solver.forecast.outlook.MarketOutlook.transitions`); a job seeing fewer left in a
market reads that as a slot without capacity there.

**Several markets: a rollout over per-market programs.** A job allowed in several markets is
planned in at most ``max_markets`` of them: where it runs, where its checkpoint is, then the
cheapest to run in (:func:`running_hourly` plus :func:`moving_hourly`), each program on
capacity transitions shrunk towards their mean over the job's markets (:data:`POOLED_SHARE`).
At each boundary every action in every planned market is valued by that market's program at
the job's state as seen from there (the mode it holds there, idle if it runs elsewhere; a
launch away from the checkpoint has the move's transfer time taken from its slack and its
egress added to its value, :mod:`solver.migration`), and the job takes the cheapest, staying
where it is on ties. Each program values a future that stays in its market, so the job moves
only when continuing elsewhere, move included, is expected to cost less than continuing here;
a dearer move can only lose that comparison. With one market this is that market's program,
followed.

A program is a rule for every state, so it is solved once and followed: a job's programs are
solved when it is admitted (and when its state leaves what they cover), then again every
``resolve_hours`` of its life on the newest outlooks, at most ``solves`` programs of
:data:`SOLVE_WORK` re-solved per slot, the stalest first; a job whose re-solve must wait
follows the programs it has.

Spot goes first to the jobs that would buy on-demand for want of it (those the prediction-free
rule sees behind, its margin below 0), then to the others; in each group first to the jobs
already running on it, so that a job released later does not displace one mid-run, then in the
simulator's priority order (:func:`~solver.policies.prediction_free.spot_order`).

Before an allocation runs, :func:`~solver.policies.common.finishable` checks that on-demand
could still meet the hard deadline should this slot's spot be lost; where it could not, the
job runs on-demand at ``N_max`` (the soft deadline is the value function's business).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from solver.forecast.hazards import age_bucket
from solver.job import Allocation
from solver.market import hours_to_slots
from solver.migration import STAY, Place
from solver.observation import JobView, Observation
from solver.optimize import stochastic
from solver.optimize.stochastic import IDLE, ON_DEMAND, SPOT, SingleJob, Solution, SpotModel
from solver.policies.common import claim, finishable, fit_cap, on_demand, on_demand_market
from solver.policies.forecast_sources import ForecastSource
from solver.policies.prediction_free import PredictionFree, spot_order
from solver.policies.routing import PROGRAM

SOLVE_WORK = 80_000
"""The work one of the ``solves`` per slot stands for, in (slot, slack, state) cells of a program
(:func:`~solver.optimize.stochastic.work`; 100 hourly slots at the full slack grid without a
spot overhead phase, about 40 ms here): a bigger program counts as several."""

POOLED_SHARE = 0.5
"""The weight of the capacity transitions pooled over a job's markets in each market's program
(the rest: the market's own): markets' learned run hazards differ by more than their runs in the
coming days do, and a planner choosing the market that looks best on its own hazards enters
the one whose hazards were learned too optimistic."""


@dataclass
class _JobSolutions:
    """A job's solved programs, one per market it is planned in, and the slot they were solved
    at."""

    solved_at: int
    solutions: dict[int, Solution]


class _Boundary:
    """One boundary as the planner reads it: the observation, and what more than one job, or
    one job more than once, reads of it, computed once: per job its slack, its program's job
    and the markets it can be planned in; per market the age bucket of its capacity run, its
    capacity transitions and price path, and its expected hourly price."""

    def __init__(self, obs: Observation, source: ForecastSource, window: int | None) -> None:
        self.obs = obs
        self.source = source
        self.window = window
        self._slack: dict[str, float] = {}
        self._job: dict[str, SingleJob] = {}
        self._usable: dict[str, list[int]] = {}
        self._keys = [market.key for market in obs.markets]
        self._hazards: dict[int, bool] = {}
        self._buckets: dict[int, int] = {}
        self._transitions: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._pooled: dict[tuple[tuple[int, ...], int, int], np.ndarray] = {}
        self._hourly: dict[tuple[int, int, int], float] = {}

    def slack(self, view: JobView) -> float:
        """:func:`_slack` of the job."""
        if view.id not in self._slack:
            self._slack[view.id] = _slack(self.obs, view)
        return self._slack[view.id]

    def single_job(self, view: JobView) -> SingleJob:
        """:func:`_single_job` of the job from this boundary, on-demand where it is cheapest."""
        if view.id not in self._job:
            self._job[view.id] = _single_job(self.obs, view)
        return self._job[view.id]

    def usable(self, view: JobView) -> list[int]:
        """The markets a program can plan the job in: those it may use with run hazards (all,
        with an exact source), none when the program would not fit."""
        if view.id not in self._usable:
            usable: list[int] = []
            if stochastic.fits(self.single_job(view), self.slack(view), self.window):
                usable = [m for m, key in enumerate(self._keys)
                          if view.job.may_use(key) and self._has_hazards(m)]
            self._usable[view.id] = usable
        return self._usable[view.id]

    def _has_hazards(self, market: int) -> bool:
        """True when ``market``'s outlook has run hazards (always, with an exact source)."""
        if market not in self._hazards:
            self._hazards[market] = (self.source.exact
                                     or self.obs.outlooks[market].hazards is not None)
        return self._hazards[market]

    def run_bucket(self, market: int) -> int:
        """The age bucket of ``market``'s capacity run at this boundary (the first without
        run hazards)."""
        if market not in self._buckets:
            run = self.obs.outlooks[market].run
            age = run.at_boundary(int(self.obs.availability_now[market]) > 0).age \
                if run is not None else 1
            self._buckets[market] = age_bucket(age)
        return self._buckets[market]

    def transitions(self, market: int, slots: int, instances: int
                    ) -> tuple[np.ndarray, np.ndarray]:
        """The source's capacity transitions and price path of ``market`` over ``slots`` slots
        for ``instances`` (shared by the jobs that ask: not to be written to)."""
        key = (market, slots, instances)
        if key not in self._transitions:
            self._transitions[key] = self.source.transitions(self.obs, market, slots, instances)
        return self._transitions[key]

    def pooled(self, markets: tuple[int, ...], slots: int, instances: int) -> np.ndarray:
        """The capacity transitions of :meth:`transitions` averaged over ``markets``."""
        key = (markets, slots, instances)
        if key not in self._pooled:
            self._pooled[key] = np.mean(
                [self.transitions(m, slots, instances)[0] for m in markets], axis=0)
        return self._pooled[key]

    def hourly(self, market: int, instances: int, horizon: int) -> float:
        """:func:`running_hourly` of ``market``."""
        key = (market, instances, horizon)
        if key not in self._hourly:
            self._hourly[key] = running_hourly(self.obs, market, instances, horizon)
        return self._hourly[key]


class StochasticPlanner:
    """The programs of the fixed-count jobs routed to them (module doc); a job allowed in
    several markets is planned in at most ``max_markets`` of them at a time."""

    name = PROGRAM

    def __init__(self, source: ForecastSource, resolve_hours: float,
                 window_hours: float | None, solves: int, max_markets: int = 3) -> None:
        if not (math.isfinite(resolve_hours) and resolve_hours > 0):
            raise ValueError(f"resolve_hours={resolve_hours!r}: expected a positive duration")
        if solves < 1:
            raise ValueError(f"solves={solves!r}: expected at least 1 program per slot")
        if max_markets < 1:
            raise ValueError(f"markets={max_markets!r}: expected at least 1 market to plan in")
        self.source = source
        self.resolve_hours = resolve_hours
        self.window_hours = window_hours
        self.solves = solves
        self.max_markets = max_markets
        self._programs: dict[str, _JobSolutions] = {}
        self._order = PredictionFree()

    def plannable(self, obs: Observation, view: JobView) -> bool:
        """True when programs can plan the job: some market it may use has run hazards (any,
        with an exact source), and the program fits."""
        return bool(_Boundary(obs, self.source, self._window(obs)).usable(view))

    def plan(self, obs: Observation) -> tuple[dict[str, Allocation | None], np.ndarray]:
        """Allocations (``None``: idle) of the jobs of ``obs`` by their programs, and the spot
        they left per market."""
        obs = replace(obs, jobs=spot_order(obs, lambda view: self._order))
        at = _Boundary(obs, self.source, self._window(obs))
        left = np.array(obs.availability_now, dtype=np.int64)
        out: dict[str, Allocation | None] = {}
        due = self._due(at)
        for view in obs.jobs:
            if view.id in due:
                self._solve(at, view, at.usable(view))
            choice = self._follow(at, view, left)
            if not finishable(obs, view, choice, credit_spot=self.source.exact,
                              by=view.job.hard_deadline):
                choice = on_demand(obs, view)
            choice = fit_cap(obs, view, choice)
            claim(left, choice)
            out[view.id] = choice
        live = {v.id for v in obs.jobs}
        self._programs = {k: p for k, p in self._programs.items() if k in live}
        return out, left

    def _due(self, at: _Boundary) -> set[str]:
        """The jobs whose programs to solve at this slot: every job without programs that
        cover its state (a job is planned from the slot it is admitted), then, while the budget
        of ``solves`` programs of :data:`SOLVE_WORK` lasts, the stalest of those due for a
        re-solve (at least one a slot); the others follow the programs they have."""
        obs = at.obs
        budget = self.solves
        due: set[str] = set()
        stale: list[tuple[int, int, JobView]] = []
        for order, view in enumerate(obs.jobs):
            if not self._covers(at, view):
                due.add(view.id)
            elif self._stale(obs, view):
                stale.append((self._programs[view.id].solved_at, order, view))
        stale.sort(key=lambda entry: entry[:2])
        for _, _, view in stale:
            if budget <= 0:  # every job takes at least one of the solves
                break
            units = self._units(at, view, len(at.usable(view)))
            if units <= budget or budget == self.solves:
                budget -= units
                due.add(view.id)
        return due

    def _units(self, at: _Boundary, view: JobView, usable: int) -> int:
        """Of the ``solves`` per slot, how many the job's programs take when ``usable`` of its
        markets can be planned in."""
        work = stochastic.work(at.single_job(view), at.slack(view), at.window)
        return max(1, math.ceil(work * min(usable, self.max_markets) / SOLVE_WORK))

    def _follow(self, at: _Boundary, view: JobView, left: np.ndarray) -> Allocation | None:
        """The cheapest action over the markets the job is planned in, each valued by that
        market's program at the job's state as seen from there, a launch away from the
        checkpoint paying its move (transfer time out of the slack, egress in USD); staying
        where the job is wins ties."""
        obs = at.obs
        job = view.job
        n = job.n_min
        current = view.current
        program = self._programs[view.id]
        slack_now = at.slack(view)
        here = current.market if current is not None else -1
        best: tuple[float, bool, int, int] | None = None
        for market, solution in program.solutions.items():
            held = _held(current, market, n)
            pending = view.pending_overhead / obs.slot_seconds if held != IDLE else 0.0
            move = obs.move(view, market) if held == IDLE else STAY
            slack = (slack_now - (pending if held == ON_DEMAND else 0.0)
                     - move.transfer_seconds / obs.slot_seconds)
            q = solution.action_values(
                obs.slot - program.solved_at, held, int(left[market]) >= n,
                at.run_bucket(market), slack, pending if held == SPOT else 0.0)
            for action in (IDLE, SPOT, ON_DEMAND):
                if not math.isfinite(q[action]):
                    continue
                key = (float(q[action]) + move.egress_usd, market != here, market, action)
                if best is None or key[0] < best[0] - 1e-9 or (
                        key[0] <= best[0] + 1e-9 and key[1:] < best[1:]):
                    best = key
        if best is None:
            return on_demand(obs, view)
        _, _, market, action = best
        if action == ON_DEMAND:
            if market == on_demand_market(obs, view):
                return on_demand(obs, view)
            return Allocation(market, on_demand=n)
        if action == SPOT:
            return Allocation(market, spot=n)
        return None

    def _covers(self, at: _Boundary, view: JobView) -> bool:
        """True when the job has programs that cover this slot and its state."""
        program = self._programs.get(view.id)
        if program is None:
            return False
        obs = at.obs
        since = obs.slot - program.solved_at
        return all(since < solution.slots
                   and at.slack(view) <= solution.max_slack + 1e-6
                   and solution.job == _single_job(obs, view, since, market)
                   for market, solution in program.solutions.items())

    def _stale(self, obs: Observation, view: JobView) -> bool:
        """True when the job's programs are ``resolve_hours`` old."""
        resolve = hours_to_slots(self.resolve_hours, obs.slot_seconds)
        return obs.slot - self._programs[view.id].solved_at >= resolve

    def _solve(self, at: _Boundary, view: JobView, markets: list[int]) -> None:
        """Solve the job's programs in the markets worth planning it in, of ``markets``, each
        on its market's capacity transitions shrunk towards those pooled over ``markets``
        (:data:`POOLED_SHARE`; not with an exact source, nor in one market)."""
        obs = at.obs
        slots = stochastic.horizon(at.single_job(view), at.window)
        n = view.job.n_min
        pooled = at.pooled(tuple(markets), slots, n)
        share = 0.0 if self.source.exact or len(markets) == 1 else POOLED_SHARE
        solutions = {}
        for market in self._candidates(at, view, markets):
            on, price = at.transitions(market, slots, n)
            spot = (1.0 - share) * on + share * pooled
            solutions[market] = stochastic.solve(
                _single_job(obs, view, market=market), SpotModel(spot, price), at.slack(view),
                window=at.window)
        self._programs[view.id] = _JobSolutions(obs.slot, solutions)

    def _candidates(self, at: _Boundary, view: JobView, markets: list[int]) -> list[int]:
        """The ``max_markets`` of ``markets`` worth planning the job in: where it runs and where
        its checkpoint is, then the cheapest to run in over the next ``resolve_hours``
        (:func:`running_hourly` plus :func:`moving_hourly`), in market order."""
        if len(markets) <= self.max_markets:
            return markets
        obs = at.obs
        kept = {m for m in markets
                if (view.current is not None and view.current.market == m)
                or (view.checkpoint is not None and Place.of(obs.markets[m]) == view.checkpoint)}
        horizon = hours_to_slots(self.resolve_hours, obs.slot_seconds)
        ranked = sorted(markets, key=lambda m: (
            at.hourly(m, view.job.n_min, horizon) + moving_hourly(obs, view, m), m))
        for m in ranked:
            if len(kept) >= self.max_markets:
                break
            kept.add(m)
        return sorted(kept)

    def _window(self, obs: Observation) -> int | None:
        if self.window_hours is None:
            return None
        return hours_to_slots(self.window_hours, obs.slot_seconds)


def running_hourly(obs: Observation, market: int, instances: int, horizon: int) -> float:
    """USD per hour of ``instances`` in ``market`` over the next ``horizon`` slots, as its
    outlook expects: the median spot price over the chance of capacity (at most the market's
    on-demand price)."""
    outlook = obs.outlooks[market]
    on_demand_price = obs.markets[market].on_demand_price
    if outlook.horizon:
        ahead = min(horizon, outlook.horizon)
        price = float(np.nanmean(outlook.price_median[:ahead]))
        chance = float(np.mean(outlook.capacity.probability[:ahead]))
    else:
        price = float(obs.price_now[market])
        chance = float(obs.availability_now[market] >= instances)
    spot_price = price / chance if chance > 0 and math.isfinite(price) else math.inf
    return instances * min(spot_price, on_demand_price)


def moving_hourly(obs: Observation, view: JobView, market: int) -> float:
    """The egress of moving the job's checkpoint to ``market``, spread over the run its work
    needs (USD per hour)."""
    hours = view.job.hours_to_finish(view.remaining, view.job.n_min)
    return obs.move(view, market).egress_usd / max(hours, obs.slot_hours)


def _single_job(obs: Observation, view: JobView, since: int = 0, market: int | None = None
                ) -> SingleJob:
    """The job in slots from the boundary ``since`` slots ago (its program's origin), falling
    back on on-demand in ``market`` (default: :func:`~solver.policies.common.on_demand_market`)."""
    job = view.job
    slot = obs.slot_seconds
    start = obs.time - since * slot
    place = obs.markets[on_demand_market(obs, view) if market is None else market]
    return SingleJob(
        deadline=(job.hard_deadline - start) / slot,
        soft=(job.soft_deadline - start) / slot,
        overhead=job.restart_overhead / slot,
        instances=job.n_min,
        on_demand_price=place.on_demand_price,
        slot_hours=obs.slot_hours,
        value=job.value,
        value_at_hard_deadline=job.value_at_hard_deadline,
        miss_penalty=job.miss_penalty,
    )


def _slack(obs: Observation, view: JobView) -> float:
    """Slots to spare now: time to the hard deadline less the running the remaining work
    needs."""
    job = view.job
    work = job.seconds_needed(view.remaining, job.n_min, overhead=0.0)
    return (job.hard_deadline - obs.time - work) / obs.slot_seconds


def _held(current: Allocation | None, market: int, n: int) -> int:
    """The mode the job holds as seen from ``market``'s program (idle when any action there
    is a switch)."""
    if current is not None and current.total == n and current.market == market:
        if current.spot == n:
            return SPOT
        if current.on_demand == n:
            return ON_DEMAND
    return IDLE
