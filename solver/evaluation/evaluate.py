"""Policies played over scenario cases (:mod:`solver.evaluation.scenarios`): per-case
statistics, what policy selection's members would have done, the value of forecasts, and the
sensitivity of CHC to forecast error.

Every policy plays every episode of a case in order, with the markets' forecasters as trained
on the trace before the episode's window (so forecasts are causal and warm, as in a live
deployment). Policies that plan on forecasts (``chc``, ``risk-aware`` and such pool members)
plan on ``settings.forecast`` unless their spec names one: the learned distributions, the
learned point forecasts, or the realised market (``oracle``, a yardstick). ``optimum`` plans
each group of jobs that can compete for capacity in hindsight. ``policy-selection`` keeps one
:class:`~solver.policies.selection.Selector` for the whole case, so it learns across episodes;
each episode runs to its end so every member's shadow settles its jobs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from solver.evaluation.scenarios import Case, Episode
from solver.experts import RegretTrace
from solver.job import Job, JobResult
from solver.market import MarketData
from solver.observation import Policy
from solver.optimize.backends import SolverLimits
from solver.policies import POLICIES, PolicySpec, check_spec, make_policy
from solver.policies.forecast_error import ForecastErrorMonitor
from solver.policies.forecast_sources import (
    FORECAST_KINDS,
    ForecastKind,
    NoisyOracleForecast,
)
from solver.policies.optimum import Optimum
from solver.policies.selection import FALLBACK, Selector
from solver.policies.spec import format_pool
from solver.simulator import simulate

POLICY_ORDER = ("on-demand", "spot-only", "greedy", "uniform-progress", "eager-failover",
                "prediction-free", "chc", "risk-aware", "policy-selection", "optimum")
"""The policies an evaluation knows, in report order."""

PLANNERS = ("risk-aware", "chc")
"""Policies whose value of forecasts is measured."""

Progress = Callable[[int], None]
"""Called with the number of episodes just played."""


@dataclass(frozen=True)
class EvaluationSettings:
    """How the forecast-driven and hindsight policies are set up.

    ``forecast`` is what planners plan on unless their spec says (policy selection takes its
    pool, learner and rate from its own spec); ``optimum_limits`` bounds each hindsight integer
    program (HiGHS: the best plan within 100 branch-and-bound nodes; the exact dynamic program
    needs no limit); the sensitivity study runs CHC at ``sensitivity_errors`` with policy
    selection falling back above ``error_threshold``.
    """

    forecast: ForecastKind = "distribution"
    optimum_limits: SolverLimits = field(
        default_factory=lambda: SolverLimits(node_limit=100, relative_gap=1e-3))
    sensitivity_errors: tuple[float, ...] = (0.0, 0.2, 0.5, 1.0)
    error_threshold: float = 0.15

    def __post_init__(self) -> None:
        if self.forecast not in FORECAST_KINDS:
            raise ValueError(
                f"forecast={self.forecast!r}: expected one of {', '.join(FORECAST_KINDS)}")


DEFAULT_SETTINGS = EvaluationSettings()


@dataclass(frozen=True, slots=True)
class PolicyStats:
    """One policy over a case: jobs run, their mean cost, utility and restarts, the deadlines
    missed, and the mean migrations and egress (in the cost) of moving checkpoints."""

    runs: int
    mean_cost_usd: float
    mean_utility: float
    mean_restarts: float
    hard_deadline_misses: int
    soft_deadline_misses: int
    mean_migrations: float = 0.0
    mean_egress_usd: float = 0.0

    @staticmethod
    def of(results: Sequence[JobResult]) -> PolicyStats:
        def mean(values: list[float]) -> float:
            return float(np.mean(values)) if values else 0.0

        return PolicyStats(
            runs=len(results),
            mean_cost_usd=mean([r.cost for r in results]),
            mean_utility=mean([r.utility for r in results]),
            mean_restarts=mean([r.restarts for r in results]),
            hard_deadline_misses=sum(not r.hard_deadline_met for r in results),
            soft_deadline_misses=sum(not r.soft_deadline_met for r in results),
            mean_migrations=mean([r.migrations for r in results]),
            mean_egress_usd=mean([r.egress_usd for r in results]),
        )

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


@dataclass(frozen=True)
class CaseResult:
    """Statistics per policy (by spec) for one case; the jobs whose hindsight plan a solver
    limit left without proof of optimality; for ``selection``, the policy-selection spec
    played last, its regret trace, pool, and each member's mean cost and hard misses on the
    same jobs (from its shadow)."""

    scenario: str
    name: str
    policies: dict[str, PolicyStats]
    regret: RegretTrace | None = None
    pool: tuple[str, ...] = ()
    member_costs: tuple[float, ...] = ()
    member_misses: tuple[int, ...] = ()
    unproven_optimum: int = 0
    selection: str = ""


@dataclass(frozen=True)
class SensitivityPoint:
    """Mean utility per policy at one forecast error level, and the share of jobs policy
    selection sent to its fallback."""

    error: float
    mean_utility: dict[str, float]
    fallback_share: float


SLOW_BY_DEFAULT = {"fine-tune": ("optimum",), "scarce": ("optimum",)}
"""Policies left out of a scenario unless named: the hindsight program of eight competing
fine-tuning jobs over a week takes about a minute per window, that of twelve competing jobs on
scarce capacity minutes per window without proving its plan optimal."""


def default_policies(scenario: str) -> tuple[str, ...]:
    """Every policy of :data:`POLICY_ORDER` but the scenario's slow ones."""
    slow = SLOW_BY_DEFAULT.get(scenario, ())
    return tuple(p for p in POLICY_ORDER if p in POLICIES and p not in slow)


def check_policies(specs: Sequence[str | PolicySpec]) -> tuple[PolicySpec, ...]:
    """The specs, checked; duplicates are an error."""
    checked = tuple(check_spec(s) for s in specs)
    labels = [str(s) for s in checked]
    doubled = sorted({x for x in labels if labels.count(x) > 1})
    if doubled:
        raise ValueError(f"policy: {doubled} named more than once")
    return checked


def evaluate_case(
    case: Case,
    policies: Sequence[str | PolicySpec] | None = None,
    seed: int = 0,
    settings: EvaluationSettings = DEFAULT_SETTINGS,
    progress: Progress | None = None,
) -> CaseResult:
    """Play each policy (default :func:`default_policies`) over every episode of ``case``."""
    specs = check_policies(policies if policies is not None else default_policies(case.scenario))
    stats: dict[str, PolicyStats] = {}
    selector: Selector | None = None
    selection = ""
    unproven = 0
    for spec in specs:
        if spec.name == "policy-selection":
            selector, selection = Selector.of(spec, seed), str(spec)
        results: list[JobResult] = []
        for episode in case.episodes:
            if spec.name == "optimum":
                played, unproven_jobs = play_optimum(episode, settings)
                results += played
                unproven += unproven_jobs
            else:
                results += play(spec, episode, settings, selector)
            if progress is not None:
                progress(1)
        stats[str(spec)] = PolicyStats.of(results)
    if selector is None:
        return CaseResult(case.scenario, case.name, stats, unproven_optimum=unproven)
    met = np.array([s.met for s in selector.settled]).reshape(-1, len(selector.pool))
    return CaseResult(case.scenario, case.name, stats, selector.trace,
                      tuple(str(m) for m in selector.pool),
                      tuple(float(c) for c in selector.member_costs()),
                      tuple(int(m) for m in (~met).sum(axis=0)), unproven, selection)


def play(spec: PolicySpec, episode: Episode, settings: EvaluationSettings,
         selector: Selector | None = None) -> list[JobResult]:
    """One online policy over one episode (``selector``: policy selection's learning state);
    the hindsight optimum is :func:`play_optimum`'s."""
    data, jobs = episode.data, list(episode.jobs)
    extra: dict[str, Any] = {}
    if spec.name == "policy-selection":
        extra = {"selector": selector, "build": _builder(data, settings)}
    policy = _builder(data, settings)(spec, **extra)
    result = simulate(data, jobs, policy, models=episode.fresh_models(),
                      until_end=spec.name == "policy-selection", migration=episode.migration)
    return list(result.jobs)


def play_optimum(episode: Episode, settings: EvaluationSettings) -> tuple[list[JobResult], int]:
    """The hindsight optimum over one episode, one plan per group of competing jobs, and how
    many of its jobs are in a plan whose search a solver limit stopped (not proven optimal)."""
    data, jobs = episode.data, list(episode.jobs)
    results: dict[str, JobResult] = {}
    unproven = 0
    for group in competing_groups(jobs, data):
        policy = Optimum(data, group, limits=settings.optimum_limits,
                         migration=episode.migration)
        results.update((r.job_id, r) for r in simulate(data, group, policy,
                                                       migration=episode.migration).jobs)
        unproven += 0 if policy.plan.optimal else len(group)
    return [results[j.id] for j in jobs], unproven


def _builder(data: MarketData, settings: EvaluationSettings) -> Callable[..., Policy]:
    """Builds policies for one episode: planners plan on ``settings.forecast`` unless their
    spec says, with the episode's realised data for an oracle."""

    def build(spec: PolicySpec, **extra: Any) -> Policy:
        cls = POLICIES[spec.name]
        params = getattr(cls, "PARAMETERS", {})
        if "forecast" in params and "forecast" not in spec.kwargs:
            spec = PolicySpec(spec.name, (*spec.params, ("forecast", settings.forecast)))
        context = {"data": data} if "data" in getattr(cls, "CONTEXT", ()) else {}
        return make_policy(spec, **context, **extra)

    return build


def competing_groups(jobs: list[Job], data: MarketData) -> list[list[Job]]:
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


def value_of_forecasts(
    case: Case,
    settings: EvaluationSettings = DEFAULT_SETTINGS,
    progress: Progress | None = None,
) -> dict[str, dict[str, PolicyStats]]:
    """Each planner of :data:`PLANNERS` planning on each forecast kind (perfect, learned
    point forecasts, learned distributions): ``{planner: {kind: stats}}``."""
    out: dict[str, dict[str, PolicyStats]] = {}
    for planner in PLANNERS:
        out[planner] = {}
        for kind in ("oracle", "point", "distribution"):
            spec = PolicySpec.of(planner, forecast=kind)
            results: list[JobResult] = []
            for episode in case.episodes:
                results += play(spec, episode, settings)
                if progress is not None:
                    progress(1)
            out[planner][kind] = PolicyStats.of(results)
    return out


def sensitivity(
    case: Case,
    seed: int = 0,
    settings: EvaluationSettings = DEFAULT_SETTINGS,
    progress: Progress | None = None,
) -> list[SensitivityPoint]:
    """CHC with :class:`~solver.policies.forecast_sources.NoisyOracleForecast` at each error
    level of ``settings`` against prediction-free and policy selection with fallback.

    Error level ``e``: forecast prices are multiplied by ``exp(e · N(0, 1))`` and forecast
    capacity flips with probability ``min(e / 2, 0.5)``; the noise of episode ``k`` is seeded
    with ``seed + k``. Policy selection runs prediction-free settings and CHC planning on the
    same noisy oracle, and sends new jobs to prediction-free while a
    :class:`~solver.policies.forecast_error.ForecastErrorMonitor` of that oracle reads more
    than ``settings.error_threshold`` (each episode's monitor starts from the error the
    previous one ended with). ``progress`` counts episodes played.
    """
    baseline = [r for e in case.episodes for r in play(FALLBACK, e, settings)]
    pool = (FALLBACK, PolicySpec.of("prediction-free", sigma=0.5), PolicySpec("chc"))
    points = []
    for error in settings.sensitivity_errors:
        selector = Selector(pool, seed=seed)
        chc: list[JobResult] = []
        selection: list[JobResult] = []
        prior = 0.0
        for k, episode in enumerate(case.episodes):
            noisy = NoisyOracleForecast(episode.data, error=error, flip=min(error / 2, 0.5),
                                        seed=seed + k)
            chc += simulate(episode.data, list(episode.jobs),
                            make_policy("chc", source=noisy),
                            models=episode.fresh_models()).jobs
            monitor = ForecastErrorMonitor(noisy, prior=prior)
            policy = make_policy(
                "policy-selection", selector=selector, fallback=format_pool((FALLBACK,)),
                error_threshold=settings.error_threshold, forecast_error=monitor,
                build=lambda s, n=noisy, **_: make_policy(s, source=n) if s.name == "chc"
                else make_policy(s))
            selection += simulate(episode.data, list(episode.jobs), policy,
                                  models=episode.fresh_models(), until_end=True).jobs
            prior = monitor.error
            if progress is not None:
                progress(2)
        fallbacks = sum(s.fallback for s in selector.settled)
        points.append(SensitivityPoint(error, {
            "chc": PolicyStats.of(chc).mean_utility,
            "prediction-free": PolicyStats.of(baseline).mean_utility,
            "policy-selection": PolicyStats.of(selection).mean_utility,
        }, fallbacks / max(1, len(selector.settled))))
    return points


def regret_bound(rounds: int, members: int) -> float:
    """Hedge's worst-case regret bound at the unscaled anytime rate."""
    return math.sqrt(2.0 * rounds * math.log(members)) + math.sqrt(math.log(members) / 8.0)
