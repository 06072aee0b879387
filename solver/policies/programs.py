"""Stochastic programs for fixed-count jobs, solved per job and market and followed.

A job at a fixed instance count (``N_min = N_max``) that may use spot follows a stochastic
dynamic program (:mod:`solver.optimize.stochastic`) per spot market it is planned in: it
minimises the expected bill minus the value of finishing over (slack, mode, capacity, age of
the capacity run), with capacity following the market's run hazards by age and time of day.
Restart overhead is priced as a risk: entering spot pays it, and the program knows how likely
the run is to end before the overhead pays off. With a ``window``, the program ends there and
values the work left at on-demand to the end (Committed Horizon Control's terminal
condition); without one it runs to the hard deadline.

A program is a rule for every state, so it is solved once and followed, and solved again every
``resolve_hours`` of the job's life on the newest outlook (sooner when its window runs out or
the job's state leaves what it covers). A job allowed in several markets is planned in the one
it holds and the ``markets`` most promising others (by the expected spot saving over the next
day: chance of capacity times the discount on on-demand), and takes the cheapest action over
them. Spot goes first to the jobs that would buy on-demand for want of it (those the
prediction-free rule sees behind, its margin below 0), then to the others; in each group first
to the jobs already running on it, so that a job released later does not displace one mid-run
(the displaced job would pay a restart, and often a move to another market), then in the
simulator's priority order. A job seeing fewer than its instances left in its market reads that
as a slot without capacity. A program is solved on the chance that the market offers at least
the job's instances plus those of every job before it (in that order) planned in that market
(:meth:`~solver.forecast.outlook.MarketOutlook.transitions`): they take spot first, and each of
them may want it there.

A program models one job against the market, the jobs before it as a fixed claim; where the
scheduler's own jobs come, go and overtake one another it misjudges what will be left. So a job
that shares every market it is planned in with another fixed-count job planned there follows
the prediction-free rule (:class:`~solver.policies.prediction_free.PredictionFree`, its
defaults) on the spot the jobs before it leave, and no program is solved for it; a job with a
market to itself follows its programs.

At most ``solves`` programs are solved per slot, so a burst of new jobs does not stretch an
epoch: first those of jobs with no program that covers their state (in the same order; a job
whose programs must wait is left to the caller's other planner meanwhile), then the stalest of
those due for a re-solve. A job whose re-solve must wait follows the program it has, so that
every job, once it has a program, keeps to one planner however many jobs share the budget.

Before an allocation runs, :func:`~solver.policies.common.finishable` checks that on-demand
could still meet the hard deadline should this slot's spot be lost; where it could not, the
job runs on-demand at ``N_max`` (the soft deadline is the value function's business).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from solver.forecast.hazards import age_bucket
from solver.job import Allocation
from solver.market import SECONDS_PER_HOUR
from solver.observation import JobView, Observation
from solver.optimize import stochastic
from solver.optimize.stochastic import IDLE, ON_DEMAND, SPOT, SingleJob, Solution, SpotModel
from solver.policies.common import claim, finishable, on_demand, on_demand_market
from solver.policies.forecast_sources import ForecastSource
from solver.policies.prediction_free import PredictionFree

SOLVE_WORK = 80_000
"""The work one of the ``solves`` per slot stands for, in (slot, slack, state) cells of a program
(:func:`~solver.optimize.stochastic.work`; 100 hourly slots at the full slack grid without a
spot overhead phase, about 40 ms here): a bigger program counts as several."""


@dataclass
class _Program:
    """A solved program for one job in one market, and the slot it was solved at."""

    solved_at: int
    solution: Solution


class SingleJobPrograms:
    """The programs of the fixed-count jobs a planner hands over (module doc)."""

    def __init__(self, source: ForecastSource, resolve_hours: float,
                 window_hours: float | None, markets: int, solves: int) -> None:
        if not (math.isfinite(resolve_hours) and resolve_hours > 0):
            raise ValueError(f"resolve_hours={resolve_hours!r}: expected a positive duration")
        if markets < 1:
            raise ValueError(f"markets={markets!r}: expected at least 1 market to plan in")
        if solves < 1:
            raise ValueError(f"solves={solves!r}: expected at least 1 program per slot")
        self.forecast = source
        self.resolve_hours = resolve_hours
        self.window_hours = window_hours
        self.markets = markets
        self.solves = solves
        self._programs: dict[tuple[str, int], _Program] = {}
        self._rule = PredictionFree()

    def decide(self, obs: Observation) -> tuple[dict[str, Allocation | None], np.ndarray]:
        """Allocations (``None``: idle) of the jobs a program or the rule decides, and the spot
        they left per market; the other jobs are the caller's."""
        obs = replace(obs, jobs=spot_order(obs, self._rule))
        left = np.array(obs.availability_now, dtype=np.int64)
        out: dict[str, Allocation | None] = {}
        markets = {v.id: m for v in obs.jobs if (m := self._plannable(obs, v))}
        contested = _contested(markets)
        planned, due = self._schedule(obs, {k: m for k, m in markets.items()
                                            if k not in contested})
        ahead = np.zeros(len(obs.markets), dtype=np.int64)
        for view in obs.jobs:
            if view.id not in planned and view.id not in contested:
                continue
            for m in markets[view.id]:
                if (view.id, m) in due:
                    self._solve(obs, view, m, int(ahead[m]))
                ahead[m] += view.job.n_min
            if view.id in contested:
                choice = self._rule.decide_job(obs, view, left)
            else:
                choice = self._follow(obs, view, left, markets[view.id])
                if not finishable(obs, view, choice, credit_spot=self.forecast.exact,
                                  by=view.job.hard_deadline):
                    choice = on_demand(obs, view)
            claim(left, choice)
            out[view.id] = choice
        live = {v.id for v in obs.jobs}
        self._programs = {k: p for k, p in self._programs.items() if k[0] in live}
        return out, left

    def _schedule(self, obs: Observation, markets: dict[str, list[int]]
                  ) -> tuple[set[str], set[tuple[str, int]]]:
        """The jobs of ``markets`` (job id to the markets it is planned in) that follow their
        programs at this slot, and the (job, market) programs to solve first: those of the
        jobs without one that covers their state, in the order of ``obs.jobs`` (a job whose
        programs do not all fit in what is left of the budget is the caller's), then, while
        the budget lasts, the stalest of those due for a re-solve (the others follow the
        program they have). The budget is ``solves`` programs of :data:`SOLVE_WORK`; the
        first job's programs of a slot are solved whatever their size."""
        budget = self.solves
        planned: set[str] = set()
        due: set[tuple[str, int]] = set()
        stale: list[tuple[int, int, str, int, int]] = []
        for order, view in enumerate(obs.jobs):
            if view.id not in markets:
                continue
            missing = [m for m in markets[view.id] if not self._covers(obs, view, m)]
            units = self._units(obs, view)
            if missing and units * len(missing) > budget and budget < self.solves:
                continue
            budget -= units * len(missing)
            due.update((view.id, m) for m in missing)
            planned.add(view.id)
            stale.extend((self._programs[view.id, m].solved_at, order, view.id, m, units)
                         for m in markets[view.id]
                         if m not in missing and self._stale(obs, view, m))
        for _, _, job_id, m, units in sorted(stale):
            if units <= budget or budget == self.solves:
                budget -= units
                due.add((job_id, m))
        return planned, due

    def _units(self, obs: Observation, view: JobView) -> int:
        """Of the ``solves`` per slot, how many one program of the job takes."""
        work = stochastic.work(_single_job(obs, view), _slack(obs, view), self._window(obs))
        return max(1, math.ceil(work / SOLVE_WORK))

    def _plannable(self, obs: Observation, view: JobView) -> list[int]:
        """The markets the job would be planned in, or none when it is not a program's."""
        job = view.job
        if job.n_min != job.n_max or not job.allow_spot:
            return []
        markets = self._candidates(obs, view)
        if not self.forecast.exact and any(obs.outlooks[m].hazards is None for m in markets):
            return []
        if not stochastic.fits(_single_job(obs, view), _slack(obs, view), self._window(obs)):
            return []
        return markets

    def _follow(self, obs: Observation, view: JobView, left: np.ndarray, markets: list[int]
                ) -> Allocation | None:
        """The cheapest action over the job's spot ``markets``, by their programs."""
        job = view.job
        n = job.n_min
        od_market = on_demand_market(obs, view)
        current = view.current
        best: tuple[float, int, int] | None = None
        for m in markets:
            program = self._programs[view.id, m]
            held = _held(current, m, od_market, n)
            pending = view.pending_overhead / obs.slot_seconds if held != IDLE else 0.0
            slack = _slack(obs, view) - (pending if held == ON_DEMAND else 0.0)
            available = int(obs.availability_now[m])
            run = (obs.outlooks[m].run.at_boundary(available > 0).age
                   if obs.outlooks[m].run is not None else 1)
            q = program.solution.action_values(
                obs.slot - program.solved_at, held, int(left[m]) >= n, age_bucket(run), slack,
                pending if held == SPOT else 0.0)
            for action in (IDLE, SPOT, ON_DEMAND):
                if math.isfinite(q[action]) and (best is None or q[action] < best[0] - 1e-9):
                    best = (float(q[action]), action, m)
        if best is None or best[1] == ON_DEMAND:
            return on_demand(obs, view)
        if best[1] == SPOT:
            return Allocation(best[2], spot=n)
        return None

    def _candidates(self, obs: Observation, view: JobView) -> list[int]:
        """The market the job holds and the ``markets`` most promising others."""
        allowed = _spot_markets(obs, view)
        if len(allowed) <= self.markets:
            return allowed
        held = view.current.market if view.current is not None else -1
        day = max(1, round(24 * SECONDS_PER_HOUR / obs.slot_seconds))

        def saving(m: int) -> float:
            outlook = obs.outlooks[m]
            chance = float(np.mean(outlook.capacity.at_least(view.job.n_min)[:day]))
            discount = obs.markets[m].on_demand_price - float(obs.price_now[m])
            return chance * discount

        ranked = sorted(allowed, key=lambda m: (m != held, -saving(m), m))
        return sorted(ranked[: self.markets + (held in allowed)])

    def _covers(self, obs: Observation, view: JobView, market: int) -> bool:
        """True when the job has a program for ``market`` that covers this slot and its
        state."""
        program = self._programs.get((view.id, market))
        return (program is not None
                and obs.slot - program.solved_at < program.solution.slots
                and _slack(obs, view) <= program.solution.max_slack + 1e-6
                and program.solution.job == _single_job(obs, view, obs.slot - program.solved_at))

    def _stale(self, obs: Observation, view: JobView, market: int) -> bool:
        """True when the job's program for ``market`` is ``resolve_hours`` old."""
        resolve = max(1, round(self.resolve_hours * SECONDS_PER_HOUR / obs.slot_seconds))
        return obs.slot - self._programs[view.id, market].solved_at >= resolve

    def _solve(self, obs: Observation, view: JobView, market: int, ahead: int) -> None:
        """Solve the job's program for ``market``, whose spot the jobs before it, planned
        there for ``ahead`` instances, take first."""
        job = _single_job(obs, view)
        slots = stochastic.horizon(job, self._window(obs))
        on, price = self.forecast.transitions(obs, market, slots, view.job.n_min + ahead)
        solution = stochastic.solve(job, SpotModel(on, price), _slack(obs, view),
                                    window=self._window(obs))
        self._programs[view.id, market] = _Program(obs.slot, solution)

    def _window(self, obs: Observation) -> int | None:
        if self.window_hours is None:
            return None
        return max(1, round(self.window_hours * SECONDS_PER_HOUR / obs.slot_seconds))


def spot_order(obs: Observation, rule: PredictionFree) -> tuple[JobView, ...]:
    """The jobs in the order spot goes to them: first those ``rule`` sees behind (they would
    buy on-demand for want of spot), then the others; in each group the jobs running on spot,
    then the others, in the given (priority) order."""
    def key(view: JobView) -> tuple[bool, bool]:
        holds = view.current is not None and view.current.spot > 0
        return rule.margin(obs, view) >= 0, not holds

    return tuple(sorted(obs.jobs, key=key))


def _contested(markets: dict[str, list[int]]) -> set[str]:
    """The jobs of ``markets`` (job id to the markets it is planned in) that share every
    market they are planned in with another of them."""
    users = Counter(m for planned in markets.values() for m in planned)
    return {job_id for job_id, planned in markets.items() if all(users[m] > 1 for m in planned)}


def _spot_markets(obs: Observation, view: JobView) -> list[int]:
    return [m for m, market in enumerate(obs.markets) if view.job.may_use(market.key)]


def _single_job(obs: Observation, view: JobView, since: int = 0) -> SingleJob:
    """The job in slots from the boundary ``since`` slots ago (its program's origin)."""
    job = view.job
    slot = obs.slot_seconds
    start = obs.time - since * slot
    market = obs.markets[on_demand_market(obs, view)]
    return SingleJob(
        deadline=(job.hard_deadline - start) / slot,
        soft=(job.soft_deadline - start) / slot,
        overhead=job.restart_overhead / slot,
        instances=job.n_min,
        on_demand_price=market.on_demand_price,
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


def _held(current: Allocation | None, market: int, od_market: int, n: int) -> int:
    """The mode the job holds as seen from ``market``'s program (idle when any action there
    is a switch)."""
    if current is not None and current.total == n:
        if current.spot == n and current.market == market:
            return SPOT
        if current.on_demand == n and current.market == od_market:
            return ON_DEMAND
    return IDLE
