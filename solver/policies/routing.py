"""Which planner a job gets: the routing table, declared here and nowhere else.

A planning policy (``risk-aware``, ``chc``) is a composition of planners behind one interface
(:class:`Planner`): the stochastic programs
(:class:`~solver.policies.stochastic_planner.StochasticPlanner`, :data:`PROGRAM`), the window
program of Committed Horizon Control (:data:`WINDOW`) and the prediction-free threshold rule
(:data:`RULE`). :func:`route` is the table; a :class:`Router` applies it (or, with a
:class:`Chooser`, chooses on evidence among the planners that can plan the job, the table its
fallback) to each job when the job is first seen (admitted) and keeps the answer for the job's life,
so a job never changes planner from slot to slot (a job whose re-solve must wait for the per-slot
solve budget follows the plan it has), and every decision names the planner that made it
(:meth:`Router.planner`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Literal, Protocol

import numpy as np

from solver.forecast.keep import KEEP_HOURS, kept_share
from solver.job import Allocation, Allocations
from solver.market import hours_to_slots
from solver.observation import JobView, Observation

PlannerName = Literal["program", "window", "rule"]
PROGRAM: PlannerName = "program"
WINDOW: PlannerName = "window"
RULE: PlannerName = "rule"
PLANNERS: tuple[PlannerName, ...] = (PROGRAM, WINDOW, RULE)
"""The planners: the stochastic program over (slack, mode, capacity, run age) per market, the
committed-horizon window program, the prediction-free threshold rule."""


class Planner(Protocol):
    """One planner: given the jobs routed to it (``obs.jobs``, in spot-priority order) and the
    spot the planners before it left (``obs.availability_now``), an allocation per job
    (``None``: idle) and the spot left after them."""

    name: PlannerName

    def plan(self, obs: Observation) -> tuple[dict[str, Allocation | None], np.ndarray]: ...


def route(view: JobView, programs: bool, plannable: Callable[[JobView], bool], shared: bool,
          roomy: Callable[[JobView], bool], kept: Callable[[JobView], bool]) -> PlannerName:
    """The routing table. In a composition with stochastic programs (``programs``), a job at a
    fixed instance count that may use spot (:func:`fixed_count`) goes to the threshold rule when
    a market it may use is ``shared`` with another such job (a program knows the market, not the
    jobs that will come and take its spot) or when its markets' slots do not keep the spot their
    boundaries show (not ``kept``, :func:`boundaries_kept`: a program reads the boundary as the
    slot's capacity, the rule's memory of spot just denied does not), else to the program when
    ``plannable`` (a market it may use has learned run hazards, or forecasts are exact, and the
    program fits), in one market or several; a job that may use spot at a range of instance
    counts goes to the threshold rule when ``roomy`` (:func:`roomy`, in a composition that
    routes such jobs by it), else to the window program, as does every other job. A composition
    without programs sends every job to the window program."""
    if not programs:
        return WINDOW
    if not fixed_count(view):
        return RULE if view.job.allow_spot and roomy(view) else WINDOW
    if shared or not kept(view):
        return RULE
    return PROGRAM if plannable(view) else WINDOW


def fixed_count(view: JobView) -> bool:
    """A job at a fixed instance count that may use spot: what a program plans."""
    return view.job.n_min == view.job.n_max and view.job.allow_spot


ROOMY_SHARE = 0.5
"""How often a market must offer a job's ``n_max`` spot instances, among its slots with spot at
all, for :func:`roomy`."""


def roomy(obs: Observation, view: JobView) -> bool:
    """True when a market the job may use offers its ``n_max`` instances in at least
    :data:`ROOMY_SHARE` of its slots with spot (the outlook's learned capacity levels): spot,
    when there, is usually enough for the whole job, and the rule's spot-when-there with a
    reserve of slack beats a window plan betting on a path of capacity the job shares with
    others (docs/solver.md). A market whose spot is a few instances (a one-node availability
    trace) is not: there the window program's mixes of spot and on-demand and its cheapest
    on-demand count win."""
    return any(obs.outlooks[m].levels.share_at_least(view.job.n_max) >= ROOMY_SHARE
               for m, market in enumerate(obs.markets) if view.job.may_use(market.key))


KEPT_SHARE = 0.9
"""The share of the spot shown at their boundaries that the slots of a job's markets must keep
(:func:`boundaries_kept`) for the routing table to send a fixed-count job to a program. Placed
between the shares ``python bench/bench_kept_shares.py`` prints (10 windows a case): the
market shapes keep at most 0.78 in a window of the tuning seeds (0.72 held out), where the rule
is the cheapest planner of a lone job; every grid of a trace's own ticks (Can't Be Late and
multi-region, six zones and one-node V100) keeps 1.0, where the programs are. Any threshold
between routes those cases alike."""


def boundaries_kept(obs: Observation, view: JobView) -> bool:
    """True when the slots of the markets the job may use kept at least :data:`KEPT_SHARE` of
    the job's ``n_max`` spot instances their boundaries showed over the last
    :data:`~solver.forecast.keep.KEEP_HOURS` of closed slots (true without history): there a
    program's reading of the boundary as the slot's capacity holds. On a grid of the trace's
    own ticks every shown spot is kept; on slots longer than the markets' runs often are, a
    boundary often shows a run that ends inside its slot."""
    slots = hours_to_slots(KEEP_HOURS, obs.slot_seconds)
    mine = [m for m, market in enumerate(obs.markets) if view.job.may_use(market.key)]
    shown = obs.closed_shown(slots)[mine]
    realised = obs.closed_slots(slots)[1][mine]
    return kept_share(shown, realised, view.job.n_max) >= KEPT_SHARE


class Chooser(Protocol):
    """Chooses a newly admitted job's planner among ``candidates`` on evidence
    (:class:`~solver.policies.evidence.EvidenceChooser`), ``fallback`` without it; the planner
    and why."""

    def choose(self, obs: Observation, view: JobView, candidates: Sequence[PlannerName],
               fallback: PlannerName) -> tuple[PlannerName, str]: ...


class Router:
    """The route of each job, decided when the job is first seen and kept for its life: by
    :func:`route`, or with a ``chooser`` by evidence among the planners that can plan the job
    (:meth:`candidates`), or always ``only`` (a program's job it cannot plan: the window
    program)."""

    def __init__(self, programs: bool, ranged_rule: bool = False,
                 chooser: Chooser | None = None, only: PlannerName | None = None) -> None:
        self.programs = programs
        self.ranged_rule = ranged_rule
        self.chooser = chooser
        self.only = only
        self._routes: dict[str, PlannerName] = {}
        self._reasons: dict[str, str] = {}

    def assign(self, obs: Observation, plannable: Callable[[JobView], bool]
               ) -> Mapping[str, PlannerName]:
        """The route of each job of ``obs`` (new jobs routed now: by the table, a market shared
        when another fixed-count job of ``obs`` may use it, a job of an instance range
        :func:`roomy` on ``obs`` when the router has a ``ranged_rule``; or by the chooser, the
        table's answer its fallback); jobs gone are forgotten."""
        spacious = (lambda v: roomy(obs, v)) if self.ranged_rule else _never
        users = Counter(m.key for v in obs.jobs if fixed_count(v)
                        for m in obs.markets if v.job.may_use(m.key))
        routes: dict[str, PlannerName] = {}
        reasons: dict[str, str] = {}
        for v in obs.jobs:
            known = self._routes.get(v.id)
            if known is not None:
                routes[v.id], reasons[v.id] = known, self._reasons.get(v.id, "")
            elif self.only is not None:
                routes[v.id] = (WINDOW if self.only == PROGRAM and not plannable(v)
                                else self.only)
            else:
                table = route(
                    v, self.programs, plannable,
                    shared=any(users[m.key] > 1 for m in obs.markets if v.job.may_use(m.key)),
                    roomy=spacious, kept=lambda v: boundaries_kept(obs, v))
                routes[v.id], reasons[v.id] = (
                    self._choose(obs, v, plannable, table) if self.chooser is not None
                    else (table, ""))
        self._routes, self._reasons = routes, reasons
        return self._routes

    def _choose(self, obs: Observation, view: JobView, plannable: Callable[[JobView], bool],
                table: PlannerName) -> tuple[PlannerName, str]:
        """The chooser's answer, the routing table's answer ``table`` its fallback."""
        assert self.chooser is not None
        candidates = self.candidates(view, plannable)
        if len(candidates) == 1:
            return candidates[0], f"only the {candidates[0]} plans this job"
        return self.chooser.choose(obs, view, candidates, table)

    def candidates(self, view: JobView, plannable: Callable[[JobView], bool]
                   ) -> tuple[PlannerName, ...]:
        """The planners that can plan ``view``'s job: the program a fixed-count job it can
        plan (in a composition with programs), the rule a job that may use spot, the window
        program every job."""
        program = self.programs and fixed_count(view) and plannable(view)
        return ((PROGRAM,) if program else ()) + (WINDOW,) + (
            (RULE,) if self.programs and view.job.allow_spot else ())

    def planner(self, job_id: str) -> PlannerName | None:
        """The planner of a live job (``None``: not seen)."""
        return self._routes.get(job_id)

    def reason(self, job_id: str) -> str:
        """Why a live job has its planner (empty: by the routing table)."""
        return self._reasons.get(job_id, "")


class ProgramPlanner(Planner, Protocol):
    """The stochastic program, which also says whether it can plan a job."""

    def plannable(self, obs: Observation, view: JobView) -> bool: ...


class Composition:
    """A policy made of planners: each job goes to the planner its route names (the program
    first, then the rule, then the window program, each on the spot the jobs before left);
    every decision names its planner (:meth:`planner`). With ``ranged_rule``, a job of an
    instance range is routed to the rule where :func:`roomy`."""

    name: str

    def __init__(self, programs: ProgramPlanner | None, window: Planner, rule: Planner,
                 ranged_rule: bool = False, chooser: Chooser | None = None,
                 only: PlannerName | None = None) -> None:
        self.programs = programs
        self.window = window
        self.rule = rule
        self.router = Router(programs is not None, ranged_rule, chooser, only)

    def decide(self, obs: Observation) -> Allocations:
        programs = self.programs
        routes = self.router.assign(
            obs, (lambda v: programs.plannable(obs, v)) if programs is not None else _never)
        out: dict[str, Allocation] = {}
        left = obs.availability_now
        for planner in (programs, self.rule, self.window):
            if planner is None:
                continue
            jobs = tuple(v for v in obs.jobs if routes[v.id] == planner.name)
            if not jobs and planner is not programs:
                continue
            planned, left = planner.plan(replace(obs, jobs=jobs, availability_now=left))
            out.update((k, a) for k, a in planned.items() if a is not None)
        return out

    def planner(self, job_id: str) -> PlannerName | None:
        """The planner that decides the job (``None``: a job not seen yet)."""
        return self.router.planner(job_id)

    def planner_reason(self, job_id: str) -> str:
        """Why the job has its planner (empty: by the routing table)."""
        return self.router.reason(job_id)


def _never(view: JobView) -> bool:
    return False
