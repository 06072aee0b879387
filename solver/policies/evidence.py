"""The planner chosen on the market's own evidence: a backtest of each planner on the recent
history of the market being served.

A job falls in a class (:func:`job_class`: fixed count or instance range, one market or
several, a market shared with another active job or not). When a job of a class arrives and
the class has no choice yet, or its choice is older than ``cadence_hours`` of market time, the
chooser replays the class's active jobs (:func:`replayed`: what is left of each, its deadlines
shrunk onto the replay when they reach further) over the last ``history_hours`` of closed
slots the policy can see (the observation's past before its first slot included; at least
:data:`MIN_HISTORY_SHARE` of them), once under each candidate planner (every job of the replay
routed to it) and once under the routing table (each job of the replay routed as the table
routes it), with the project's simulator, the forecasters first learning up to
``warmup_hours`` of closed slots before the replay. The option of the highest total utility is
chosen, but the class keeps its incumbent (its last choice, else the routing table) unless the
winner beats it by more than ``margin`` of the replayed jobs' on-demand bill: a class whose
evidence names no planner clearly better keeps the table, which routes each of its jobs on its
own (the ``fallback`` the caller passes). Only closed slots are read, so a choice never depends
on a later price; the simulator is deterministic, so the same history gives the same choice.
With too little history a job gets the routing table's route, and says so.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from solver.forecast.models import MarketModels
from solver.job import Job
from solver.market import MarketData, hours_to_slots
from solver.observation import JobView, Observation
from solver.policies.protocol import Policy
from solver.policies.routing import PlannerName, fixed_count
from solver.policies.selection import on_demand_bill
from solver.simulator import simulate

MIN_HISTORY_SHARE = 0.25
"""The share of ``history_hours`` that must be closed before a backtest is trusted."""

JobClass = tuple[bool, bool, bool]
"""``(fixed count, several markets, shares a market)``."""

Option = PlannerName | None
"""What a class's jobs follow: one planner, or ``None``, the routing table (each job its own
route)."""


def job_class(obs: Observation, view: JobView) -> JobClass:
    """The class of ``view``'s job among the active jobs of ``obs`` (module doc)."""
    mine = [m.key for m in obs.markets if view.job.may_use(m.key)]
    shared = any(other.job.may_use(key) for other in obs.jobs if other.id != view.id
                 for key in mine)
    return (fixed_count(view), len(mine) > 1, shared)


def describe(cls: JobClass) -> str:
    """A class in words."""
    fixed, several, shared = cls
    return (f"{'fixed-count' if fixed else 'ranged'} "
            f"{'multi-market' if several else 'single-market'} "
            f"{'shared' if shared else 'unshared'}")


@dataclass(frozen=True, slots=True)
class Choice:
    """A class's option (a planner, or ``None``: the routing table), why, and the slot of the
    backtest it came from."""

    planner: Option
    reason: str
    slot: int


def replayed(view: JobView, start: float, end: float, now: float) -> Job:
    """What is left of ``view``'s job at ``now``, released at ``start``: its deadlines and work
    shrunk by the same factor (and its values with them) when its hard deadline lies further
    from ``now`` than ``end`` from ``start`` (a job due after ``now``, with work left)."""
    job = view.job
    span = job.hard_deadline - now
    factor = min(1.0, (end - start) / span)
    return replace(
        job, workload=view.remaining * factor, release=start,
        soft_deadline=start + max(job.soft_deadline - now, span / 2) * factor,
        hard_deadline=min(start + span * factor, end),
        value=job.value * factor, value_at_hard_deadline=job.value_at_hard_deadline * factor,
        miss_penalty=job.miss_penalty * factor)


class EvidenceChooser:
    """Chooses each job class's planner by backtest (module doc); ``build`` makes a policy
    that routes every job to one planner, or by the routing table (``None``)."""

    def __init__(self, build: Callable[[Option], Policy], history_hours: float,
                 cadence_hours: float, margin: float, warmup_hours: float = 120.0) -> None:
        for name, value in (("history_hours", history_hours), ("cadence_hours", cadence_hours),
                            ("warmup_hours", warmup_hours), ("margin", margin)):
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name}={value!r}: expected a non-negative number")
        if history_hours <= 0:
            raise ValueError(f"history_hours={history_hours!r}: expected a positive number")
        self.build = build
        self.history_hours = history_hours
        self.cadence_hours = cadence_hours
        self.warmup_hours = warmup_hours
        self.margin = margin
        self.choices: dict[JobClass, Choice] = {}

    def choose(self, obs: Observation, view: JobView, candidates: Sequence[PlannerName],
               fallback: PlannerName) -> tuple[PlannerName, str]:
        """The planner of ``view``'s job, newly admitted, among ``candidates``, and why:
        ``fallback`` (the routing table's route) while too little history is closed or while
        the evidence keeps the table for the job's class."""
        cls = job_class(obs, view)
        if obs.closed < _slots(self.history_hours * MIN_HISTORY_SHARE, obs.slot_seconds):
            return fallback, (f"routes: {obs.closed * obs.slot_hours:g} h of history, a "
                              f"backtest needs {self.history_hours * MIN_HISTORY_SHARE:g} h")
        held = self.choices.get(cls)
        fresh = held is not None and (
            obs.slot - held.slot < _slots(self.cadence_hours, obs.slot_seconds))
        if (held is None or not fresh
                or (held.planner is not None and held.planner not in candidates)):
            held = self.choices[cls] = self._backtest(obs, view, cls, candidates,
                                                        held.planner if held else None)
        return (fallback if held.planner is None else held.planner), held.reason

    def _backtest(self, obs: Observation, view: JobView, cls: JobClass,
                  candidates: Sequence[PlannerName], incumbent: Option) -> Choice:
        jobs = [v for v in obs.jobs if (v.id == view.id or job_class(obs, v) == cls)
                and v.job.hard_deadline > obs.time and v.remaining > 0]
        data, models = _recent(obs, min(obs.closed, _slots(self.history_hours, obs.slot_seconds)),
                               _slots(self.warmup_hours, obs.slot_seconds))
        end = data.slot_start(data.n_slots)
        replays = [replayed(v, data.origin, end, obs.time) for v in jobs]
        options: list[Option] = [None, *candidates]
        utilities: dict[Option, float] = {}
        for option in options:
            run = simulate(data, replays, self.build(option), models=copy.deepcopy(models),
                           migration=obs.migration)
            utilities[option] = run.total_utility
        best = max(options, key=lambda o: (utilities[o], -options.index(o)))
        if incumbent not in options:
            incumbent = None
        bill = sum(on_demand_bill(j, obs.markets) for j in replays)
        if utilities[best] - utilities[incumbent] <= self.margin * bill:
            best = incumbent
        scores = ", ".join(f"{_named(o)} {utilities[o]:.2f}" for o in options)
        return Choice(best, f"evidence: {describe(cls)} jobs, backtest utility USD over the "
                      f"last {data.n_slots * obs.slot_hours:g} h: {scores}; chosen: "
                      f"{_named(best)}", obs.slot)


def _named(option: Option) -> str:
    return "routes" if option is None else option


def _slots(hours: float, slot_seconds: float) -> int:
    return hours_to_slots(hours, slot_seconds, lambda slots: math.ceil(slots - 1e-9))


def _recent(obs: Observation, history: int, warmup: int) -> tuple[MarketData, MarketModels]:
    """The last ``history`` closed slots as market data, and forecasters that learned the up to
    ``warmup`` closed slots before them (the observation's past included)."""
    price, availability = obs.closed_slots(history + warmup)
    first = price.shape[1] - history
    origin = obs.time - history * obs.slot_seconds
    data = MarketData.from_slots(obs.markets, origin, obs.slot_seconds,
                                 price[:, first:], availability[:, first:])
    models = MarketModels(len(obs.markets), origin - first * obs.slot_seconds, obs.slot_seconds)
    for s in range(first):
        models.learn(price[:, s], availability[:, s])
    return data, models
