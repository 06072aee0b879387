"""Policies played over scenario cases (:mod:`solver.scenarios`): per-case statistics, the
regret of policy selection, and the sensitivity of CHC to forecast error.

Every policy plays every episode of a case in order. Rule-based policies are fresh per
episode; ``chc`` forecasts with the online learned forecasters (``chc_forecast="learned"``,
causal) or the oracle; ``optimum`` plans each group of jobs that can compete for capacity in
hindsight (the Can't Be Late jobs, one market each, are planned alone, which the exact dynamic
program handles); ``policy-selection`` keeps one :class:`~solver.policies.selection.Selector`
for the whole case, so it learns across episodes, and settles each episode's jobs with the
episode's realised market data once the episode is over.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

import numpy as np

from solver.experts import RegretTrace
from solver.job import Job, JobResult
from solver.market import SECONDS_PER_HOUR, MarketData
from solver.optimize.backends import SolverLimits
from solver.policies import POLICIES, make_policy
from solver.policies.forecast_error import ForecastErrorMonitor
from solver.policies.forecast_sources import (
    LearnedForecast,
    NoisyOracleForecast,
    OracleForecast,
)
from solver.policies.selection import (
    CHC_GRID,
    PREDICTION_FREE_GRID,
    Member,
    MemberFactory,
    PolicySelection,
    Selector,
    registry_members,
)
from solver.policy import Observation, Policy
from solver.scenarios import Case, Episode
from solver.simulator import simulate

POLICY_ORDER = ("on-demand", "spot-only", "greedy", "uniform-progress", "prediction-free",
                "chc", "policy-selection", "optimum")
"""The policies an evaluation knows, in report order."""

Progress = Callable[[int], None]
"""Called with the number of episodes just played."""


@dataclass(frozen=True)
class EvaluationSettings:
    """How the forecast-driven, learning and planning policies are set up.

    ``chc_window_hours`` (rounded to whole slots) and ``chc_commitment`` configure the
    stand-alone ``chc``: the window must see far enough for the plan to spend a job's slack
    well (a day covers half of a Can't Be Late job's 52 hours). The selection pool is
    :data:`~solver.policies.selection.PREDICTION_FREE_GRID` plus, where ``chc`` is in it,
    :data:`~solver.policies.selection.CHC_GRID`; ``pool_with_chc`` names the scenarios that
    include it (on the Can't Be Late 195 s ticks, CHC solves a window program every tick of
    every counterfactual replay, hours per case). ``optimum_limits`` bounds each hindsight
    integer program (HiGHS: the best plan within 100 branch-and-bound nodes; the exact dynamic
    program needs no limit).
    """

    chc_window_hours: float = 24.0
    chc_commitment: int = 1
    chc_forecast: Literal["learned", "oracle"] = "learned"
    learner: str = "hedge"
    pool_with_chc: tuple[str, ...] = ("fine-tune",)
    optimum_limits: SolverLimits = field(
        default_factory=lambda: SolverLimits(node_limit=100, relative_gap=1e-3))
    sensitivity_errors: tuple[float, ...] = (0.0, 0.2, 0.5, 1.0)
    error_threshold: float = 0.15


    def __post_init__(self) -> None:
        if self.chc_forecast not in ("learned", "oracle"):
            raise ValueError(f"chc_forecast={self.chc_forecast!r}: expected learned or oracle")
        if not self.chc_window_hours > 0:
            raise ValueError(
                f"chc_window_hours={self.chc_window_hours!r}: expected a positive duration")

    def chc_window(self, slot_seconds: float) -> int:
        """The stand-alone ``chc`` window in slots of ``slot_seconds``."""
        return max(1, round(self.chc_window_hours * SECONDS_PER_HOUR / slot_seconds))


DEFAULT_SETTINGS = EvaluationSettings()


@dataclass(frozen=True, slots=True)
class PolicyStats:
    """One policy over a case: jobs run, their mean cost and utility, deadlines missed."""

    runs: int
    mean_cost_usd: float
    mean_utility: float
    hard_deadline_misses: int
    soft_deadline_misses: int

    @staticmethod
    def of(results: Sequence[JobResult]) -> PolicyStats:
        return PolicyStats(
            runs=len(results),
            mean_cost_usd=float(np.mean([r.cost for r in results])) if results else 0.0,
            mean_utility=float(np.mean([r.utility for r in results])) if results else 0.0,
            hard_deadline_misses=sum(not r.hard_deadline_met for r in results),
            soft_deadline_misses=sum(not r.soft_deadline_met for r in results),
        )

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


@dataclass(frozen=True)
class CaseResult:
    """Statistics per policy for one case, and policy selection's regret trace and pool."""

    scenario: str
    name: str
    policies: dict[str, PolicyStats]
    regret: RegretTrace | None = None
    pool: tuple[str, ...] = ()


@dataclass(frozen=True)
class SensitivityPoint:
    """Mean utility per policy at one forecast error level, and the share of jobs policy
    selection sent to its fallback."""

    error: float
    mean_utility: dict[str, float]
    fallback_share: float


SLOW_BY_DEFAULT = {"cant-be-late": ("chc",), "fine-tune": ("optimum",)}
"""Policies left out of a scenario unless named: ``chc`` re-solves (and, with learned
forecasts, forecasts) a day-long window every 195 s tick, about 15 s per Can't Be Late window
of six jobs even with perfect forecasts; the hindsight program of eight competing fine-tuning
jobs takes about a minute per window."""


def default_policies(scenario: str) -> tuple[str, ...]:
    """Every registered policy of :data:`POLICY_ORDER` but the scenario's slow ones."""
    slow = SLOW_BY_DEFAULT.get(scenario, ())
    return tuple(p for p in POLICY_ORDER if p in POLICIES and p not in slow)


def check_policies(names: Sequence[str]) -> None:
    """Reject names this evaluation cannot run, listing the ones it can."""
    known = [p for p in POLICY_ORDER if p in POLICIES]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"policy={unknown[0]!r}: expected one of {', '.join(known)}")


def selection_pool(scenario: str, settings: EvaluationSettings) -> tuple[Member, ...]:
    with_chc = scenario in settings.pool_with_chc and "chc" in POLICIES
    return PREDICTION_FREE_GRID + (CHC_GRID if with_chc else ())


def evaluate_case(
    case: Case,
    policies: Sequence[str] | None = None,
    seed: int = 0,
    settings: EvaluationSettings = DEFAULT_SETTINGS,
    progress: Progress | None = None,
) -> CaseResult:
    """Play each policy (default :func:`default_policies`) over every episode of ``case``."""
    names = tuple(policies) if policies is not None else default_policies(case.scenario)
    check_policies(names)
    stats: dict[str, PolicyStats] = {}
    selector: Selector | None = None
    for name in names:
        if name == "policy-selection":
            selector = Selector(selection_pool(case.scenario, settings), settings.learner,
                                horizon=case.n_jobs, seed=seed)
            results = _play_selection(case, selector, _members(settings), progress=progress)
        else:
            results = []
            for episode in case.episodes:
                results += _play(name, episode, settings)
                if progress is not None:
                    progress(1)
        stats[name] = PolicyStats.of(results)
    if selector is None:
        return CaseResult(case.scenario, case.name, stats)
    return CaseResult(case.scenario, case.name, stats, selector.trace,
                      tuple(m.label for m in selector.pool))


def _members(settings: EvaluationSettings) -> Callable[[int, MarketData], MemberFactory]:
    """Pool members for an episode, forecasting as ``settings.chc_forecast`` says."""
    if settings.chc_forecast == "oracle":
        return lambda k, data: registry_members(lambda: OracleForecast(data))
    return lambda k, data: registry_members(LearnedForecast)


def _play(name: str, episode: Episode, settings: EvaluationSettings) -> list[JobResult]:
    data, jobs = episode.data, list(episode.jobs)
    if name == "optimum":
        results: dict[str, JobResult] = {}
        for group in _competing_groups(jobs, data):
            policy = make_policy("optimum", data=data, jobs=group, limits=settings.optimum_limits)
            results.update((r.job_id, r) for r in simulate(data, group, policy).jobs)
        return [results[j.id] for j in jobs]
    if name == "chc":
        forecast = (OracleForecast(data) if settings.chc_forecast == "oracle"
                    else LearnedForecast())
        policy: Policy = make_policy("chc", forecast=forecast,
                                     window=settings.chc_window(data.slot_seconds),
                                     commitment=settings.chc_commitment)
    else:
        policy = make_policy(name)
    return list(simulate(data, jobs, policy).jobs)


def _competing_groups(jobs: list[Job], data: MarketData) -> list[list[Job]]:
    """Jobs split into the smallest groups that share no market: only jobs in one group can
    compete for capacity, so each group is planned on its own."""
    groups: list[tuple[list[Job], set[str]]] = []
    for job in jobs:
        markets = set(job.allowed_markets) if job.allowed_markets is not None else set(data.index)
        touching = [g for g in groups if g[1] & markets]
        merged = ([j for g in touching for j in g[0]] + [job],
                  markets.union(*(g[1] for g in touching)))
        groups = [g for g in groups if not g[1] & markets] + [merged]
    return [sorted(members, key=jobs.index) for members, _ in groups]


def _play_selection(
    case: Case,
    selector: Selector,
    members: Callable[[int, MarketData], MemberFactory],
    forecast_error: Callable[[int, MarketData], Callable[[Observation], float]] | None = None,
    error_threshold: float = math.inf,
    progress: Progress | None = None,
) -> list[JobResult]:
    """Policy selection over the episodes in order, one selector throughout; ``members`` and
    ``forecast_error`` get the episode's index and market data."""
    results: list[JobResult] = []
    for k, episode in enumerate(case.episodes):
        monitor = forecast_error(k, episode.data) if forecast_error is not None else None
        policy = PolicySelection(selector, members(k, episode.data), monitor, error_threshold)
        results += simulate(episode.data, list(episode.jobs), policy).jobs
        policy.settle(episode.data)
        if progress is not None:
            progress(1)
    return results


def sensitivity(
    case: Case,
    seed: int = 0,
    settings: EvaluationSettings = DEFAULT_SETTINGS,
    progress: Progress | None = None,
) -> list[SensitivityPoint]:
    """CHC with :class:`~solver.policies.forecast_sources.NoisyOracleForecast` at each error
    level of ``settings`` against prediction-free and policy selection with fallback.

    Error level ``e``: forecast prices are multiplied by ``exp(e · N(0, 1))`` and forecast
    availability flips with probability ``min(e / 2, 0.5)``; the noise of episode ``k`` is
    seeded with ``seed + k``. Policy selection runs the pool of the case's scenario with CHC
    members forecasting through the same noisy oracle, and sends new jobs to prediction-free
    while a :class:`~solver.policies.forecast_error.ForecastErrorMonitor` on that oracle reads
    more than ``settings.error_threshold`` (each episode's monitor starts from the error the
    previous one ended with). ``progress`` counts episodes played.
    """
    baseline: list[JobResult] = []
    for episode in case.episodes:
        baseline += _play("prediction-free", episode, settings)
    points = []
    for error in settings.sensitivity_errors:
        def noisy(k: int, data: MarketData, error: float = error) -> NoisyOracleForecast:
            return NoisyOracleForecast(data, error=error, flip=min(error / 2, 0.5), seed=seed + k)

        chc: list[JobResult] = []
        for k, episode in enumerate(case.episodes):
            policy = make_policy("chc", forecast=noisy(k, episode.data),
                                 window=settings.chc_window(episode.data.slot_seconds),
                                 commitment=settings.chc_commitment)
            chc += simulate(episode.data, list(episode.jobs), policy).jobs
            if progress is not None:
                progress(1)
        selector = Selector(selection_pool(case.scenario, settings), settings.learner,
                            horizon=case.n_jobs, seed=seed)
        monitors: list[ForecastErrorMonitor] = []

        def monitor(k: int, data: MarketData, noisy=noisy, monitors=monitors) -> Callable:
            prior = monitors[-1].error if monitors else 0.0
            monitors.append(ForecastErrorMonitor(noisy(k, data), prior=prior))
            return monitors[-1]

        selection = _play_selection(
            case, selector,
            lambda k, data, noisy=noisy: registry_members(lambda: noisy(k, data)),
            monitor, settings.error_threshold, progress)
        fallbacks = sum(s.fallback for s in selector.settled)
        points.append(SensitivityPoint(error, {
            "chc": PolicyStats.of(chc).mean_utility,
            "prediction-free": PolicyStats.of(baseline).mean_utility,
            "policy-selection": PolicyStats.of(selection).mean_utility,
        }, fallbacks / max(1, len(selector.settled))))
    return points
