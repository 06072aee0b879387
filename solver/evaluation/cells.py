"""An evaluation cut into cells: plays that share no state, so that they can run in any order,
on any worker, and be kept once played.

A cell is one policy over one episode, or over every episode of a case in order where the
policy learns across them: ``policy-selection`` keeps one learner per case, and the sensitivity
study's policy selection also carries its forecast-error monitor from one episode to the next.
The hindsight optimum is planned per episode. Every run reads the outlooks a copy of the
episode's trained forecasters makes (:meth:`~solver.evaluation.scenarios.Episode.outlooks`) and
every seed is the cell's own (a learner's is the evaluation seed, a noisy oracle's the seed
plus the episode's index), so a cell's result depends on its inputs only; an
:class:`EvaluationPlan` merges the results in its own order, whatever order they came in.
Two plays that are the same (``risk-aware`` in the table and in the value-of-forecasts study,
``prediction-free`` as the sensitivity study's baseline) are one cell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from solver.evaluation.evaluate import (
    DEFAULT_SETTINGS,
    PLANNERS,
    CaseResult,
    EvaluationSettings,
    PolicyStats,
    SensitivityPoint,
    as_played,
    check_policies,
    default_policies,
    play,
    play_noisy_chc,
    play_noisy_selection,
    play_optimum,
    play_selection,
)
from solver.evaluation.scenarios import Case, Episode
from solver.experts import RegretTrace
from solver.job import JobResult
from solver.policies import PolicySpec, policy_class
from solver.policies.selection import FALLBACK, Selector

FORECAST_KINDS_STUDIED = ("oracle", "point", "distribution")
"""The forecast kinds of the value-of-forecasts study, in report order."""

ForecastValues = dict[str, dict[str, PolicyStats]]
"""``{planner: {forecast kind: stats}}`` of one case."""


@dataclass(frozen=True)
class Cell:
    """One play: ``spec`` (as played: :func:`~solver.evaluation.evaluate.as_played`) over
    episode ``episode`` of case ``case`` (its index in the plan; ``name`` its name), or over
    every episode of the case in order when ``episode`` is ``None``; ``noise`` is the
    sensitivity study's forecast error level (CHC and policy selection on a noisy oracle)."""

    case: int
    name: str
    episode: int | None
    spec: PolicySpec
    noise: float | None = None

    @property
    def label(self) -> str:
        """``cant-be-late 48h/52h/0.2h w03 risk-aware:forecast=distribution``."""
        where = "all windows" if self.episode is None else f"w{self.episode:02d}"
        noise = "" if self.noise is None else f" (forecast error {self.noise:g})"
        return f"{self.name} {where} {self.spec}{noise}"


@dataclass(frozen=True)
class Learning:
    """What a policy selection learned over a case: its regret trace, its pool, each member's
    mean cost and hard misses in its shadow, and the share of jobs sent to the fallback."""

    regret: RegretTrace
    pool: tuple[str, ...]
    member_costs: tuple[float, ...]
    member_misses: tuple[int, ...]
    fallback_share: float

    @staticmethod
    def of(selector: Selector) -> Learning:
        settled = selector.settled
        met = np.array([s.met for s in settled]).reshape(-1, len(selector.pool))
        return Learning(selector.trace, tuple(str(m) for m in selector.pool),
                        tuple(float(c) for c in selector.member_costs()),
                        tuple(int(m) for m in (~met).sum(axis=0)),
                        sum(s.fallback for s in settled) / max(1, len(settled)))


@dataclass(frozen=True)
class CellResult:
    """The jobs a cell played, in order; how many of them a hindsight plan left unproven; and,
    for a policy selection, what it learned."""

    jobs: tuple[JobResult, ...]
    unproven: int = 0
    learning: Learning | None = None


def play_cell(cell: Cell, episodes: Sequence[Episode], seed: int,
              settings: EvaluationSettings = DEFAULT_SETTINGS) -> CellResult:
    """Play ``cell`` over ``episodes``: its one episode, or every episode of its case."""
    spec = cell.spec
    if cell.noise is not None:
        if spec.name == "chc" and cell.episode is not None:
            (episode,) = episodes
            return CellResult(tuple(play_noisy_chc(episode, cell.episode, cell.noise, seed)))
        played, selector = play_noisy_selection(episodes, cell.noise, seed, settings)
        return CellResult(tuple(played), learning=Learning.of(selector))
    if cell.episode is None:
        played, selector = play_selection(spec, episodes, seed, settings)
        return CellResult(tuple(played), learning=Learning.of(selector))
    (episode,) = episodes
    if "hindsight" in policy_class(spec.name).tags:
        optimal, unproven = play_optimum(episode, settings, spec)
        return CellResult(tuple(optimal), unproven)
    return CellResult(tuple(play(spec, episode, settings)))


def learns_across_episodes(spec: PolicySpec) -> bool:
    """True for a policy whose cell is a whole case (it learns from one episode to the next)."""
    return "learns" in policy_class(spec.name).tags


@dataclass(frozen=True)
class Evaluation:
    """An evaluation's results: per case its statistics and, when studied, each planner's
    value of forecasts; the sensitivity study's points."""

    cases: tuple[CaseResult, ...]
    forecast_values: tuple[ForecastValues, ...] = ()
    sensitivity: tuple[SensitivityPoint, ...] = ()


@dataclass(frozen=True)
class EvaluationPlan:
    """The cells of an evaluation and how their results merge: each case under its policies
    (``policies``, or each case's :func:`~solver.evaluation.evaluate.default_policies`), each
    planner of :data:`~solver.evaluation.evaluate.PLANNERS` on each forecast kind when
    ``forecast_values``, and the CHC sensitivity study on case ``study`` (an index)."""

    cases: tuple[Case, ...]
    policies: tuple[PolicySpec, ...] | None = None
    seed: int = 0
    settings: EvaluationSettings = DEFAULT_SETTINGS
    forecast_values: bool = False
    study: int | None = None

    def __post_init__(self) -> None:
        if self.policies is not None:
            object.__setattr__(self, "policies", check_policies(self.policies))
        if self.study is not None and not 0 <= self.study < len(self.cases):
            raise ValueError(f"study={self.study!r}: expected a case index below "
                             f"{len(self.cases)}")

    def specs(self, k: int) -> tuple[PolicySpec, ...]:
        """The policies case ``k`` is played under, in report order."""
        if self.policies is not None:
            return self.policies
        return check_policies(default_policies(self.cases[k].scenario))

    def cells(self) -> list[Cell]:
        """Every cell, once, in the plan's order."""
        cells: dict[Cell, None] = {}
        for k in range(len(self.cases)):
            for spec in self.specs(k):
                cells.update(dict.fromkeys(self._policy_cells(k, spec)))
            if self.forecast_values:
                for planner in PLANNERS:
                    for kind in FORECAST_KINDS_STUDIED:
                        cells.update(dict.fromkeys(
                            self._policy_cells(k, PolicySpec.of(planner, forecast=kind))))
        if self.study is not None:
            cells.update(dict.fromkeys(self._policy_cells(self.study, FALLBACK)))
            for error in self.settings.sensitivity_errors:
                cells.update(dict.fromkeys(self._noisy_cells(self.study, error)))
        return list(cells)

    def episodes(self, cell: Cell) -> tuple[Episode, ...]:
        """The episodes ``cell`` plays."""
        episodes = self.cases[cell.case].episodes
        return episodes if cell.episode is None else (episodes[cell.episode],)

    def merge(self, results: Mapping[Cell, CellResult]) -> Evaluation:
        """The evaluation from every cell's result (a missing one is a ``KeyError``)."""
        cases = tuple(self._case_result(k, results) for k in range(len(self.cases)))
        values: tuple[ForecastValues, ...] = ()
        if self.forecast_values:
            values = tuple({planner: {kind: _stats(results, self._policy_cells(
                k, PolicySpec.of(planner, forecast=kind))) for kind in FORECAST_KINDS_STUDIED}
                for planner in PLANNERS} for k in range(len(self.cases)))
        points: tuple[SensitivityPoint, ...] = ()
        if self.study is not None:
            baseline = _stats(results, self._policy_cells(self.study, FALLBACK))
            points = tuple(self._point(self.study, error, baseline, results)
                           for error in self.settings.sensitivity_errors)
        return Evaluation(cases, values, points)

    def _policy_cells(self, k: int, spec: PolicySpec) -> list[Cell]:
        case = self.cases[k]
        played = as_played(spec, self.settings)
        if learns_across_episodes(spec):
            return [Cell(k, case.name, None, played)]
        return [Cell(k, case.name, i, played) for i in range(len(case.episodes))]

    def _noisy_cells(self, k: int, error: float) -> list[Cell]:
        case = self.cases[k]
        chc = [Cell(k, case.name, i, PolicySpec("chc"), error)
               for i in range(len(case.episodes))]
        return [*chc, Cell(k, case.name, None, PolicySpec("policy-selection"), error)]

    def _case_result(self, k: int, results: Mapping[Cell, CellResult]) -> CaseResult:
        case = self.cases[k]
        stats: dict[str, PolicyStats] = {}
        unproven = 0
        learned: tuple[str, Learning] | None = None
        for spec in self.specs(k):
            cells = self._policy_cells(k, spec)
            stats[str(spec)] = _stats(results, cells)
            if "hindsight" in policy_class(spec.name).tags:
                unproven += sum(results[c].unproven for c in cells)
            learning = results[cells[0]].learning
            if learning is not None:
                learned = (str(spec), learning)
        if learned is None:
            return CaseResult(case.scenario, case.name, stats, unproven_optimum=unproven)
        selection, learning = learned
        return CaseResult(case.scenario, case.name, stats, learning.regret, learning.pool,
                          learning.member_costs, learning.member_misses, unproven, selection)

    def _point(self, k: int, error: float, baseline: PolicyStats,
               results: Mapping[Cell, CellResult]) -> SensitivityPoint:
        *chc, selection = self._noisy_cells(k, error)
        learning = results[selection].learning
        return SensitivityPoint(error, {
            "chc": _stats(results, chc).mean_utility,
            "prediction-free": baseline.mean_utility,
            "policy-selection": _stats(results, [selection]).mean_utility,
        }, learning.fallback_share if learning is not None else 0.0)


def _stats(results: Mapping[Cell, CellResult], cells: Sequence[Cell]) -> PolicyStats:
    return PolicyStats.of([job for cell in cells for job in results[cell].jobs])


def run(plan: EvaluationPlan) -> Evaluation:
    """Play every cell of ``plan`` here, one after the other, and merge them."""
    return plan.merge({cell: play_cell(cell, plan.episodes(cell), plan.seed, plan.settings)
                       for cell in plan.cells()})
