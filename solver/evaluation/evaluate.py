"""Policies played over the episodes of scenario cases (:mod:`solver.evaluation.scenarios`),
and the statistics reported: per-case statistics, what policy selection's members would have
done, the value of forecasts, and the sensitivity of CHC to forecast error
(:mod:`solver.evaluation.cells` cuts an evaluation into independent plays and merges them).

A policy plays an episode with the markets' forecasters as trained on the trace before the
episode's window (so forecasts are causal and warm, as in a live deployment), and is shown the
episode's past, the closed slots before the window. Policies that
plan on forecasts (``chc``, ``risk-aware`` and such pool members) plan on ``settings.forecast``
unless their spec names one: the learned distributions, the learned point forecasts, or the
realised market (``oracle``, a yardstick). ``optimum`` plans each group of jobs that can compete
for capacity in hindsight. ``policy-selection`` keeps one
:class:`~solver.policies.selection.Selector` for the whole case, so it learns across episodes;
each episode runs to its end so every member's shadow settles its jobs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from solver.choices import one_of
from solver.evaluation.scenarios import Episode
from solver.experts import RegretTrace
from solver.job import JobResult
from solver.market import MarketData
from solver.optimize.backends import SolverLimits
from solver.optimize.competition import competing_groups
from solver.optimize.offline import DEFAULT_TIME_LIMIT
from solver.policies import POLICY_NAMES, PolicySpec, check_spec, make_policy, policy_class
from solver.policies.forecast_error import ForecastErrorMonitor
from solver.policies.forecast_sources import (
    FORECAST_KINDS,
    ForecastKind,
    NoisyOracleForecast,
)
from solver.policies.optimum import Optimum
from solver.policies.protocol import Policy
from solver.policies.selection import FALLBACK, Selector
from solver.policies.spec import format_pool
from solver.simulator import simulate

PLANNERS = ("risk-aware", "chc")
"""Policies whose value of forecasts is measured."""

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
        one_of("forecast", self.forecast, FORECAST_KINDS)


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


HINDSIGHT_TOO_SLOW = ("fine-tune", "scarce")
"""Scenarios whose hindsight policies are left out unless named: the hindsight program of eight
competing fine-tuning jobs over a week takes about a minute per window, that of twelve
competing jobs on scarce capacity minutes per window without proving its plan optimal."""


def default_policies(scenario: str) -> tuple[str, ...]:
    """Every registered policy, in display order, but the hindsight ones where the scenario
    makes them slow (:data:`HINDSIGHT_TOO_SLOW`)."""
    return tuple(p for p in POLICY_NAMES if scenario not in HINDSIGHT_TOO_SLOW
                 or "hindsight" not in policy_class(p).tags)


def check_policies(specs: Sequence[str | PolicySpec]) -> tuple[PolicySpec, ...]:
    """The specs, checked; duplicates are an error."""
    checked = tuple(check_spec(s) for s in specs)
    labels = [str(s) for s in checked]
    doubled = sorted({x for x in labels if labels.count(x) > 1})
    if doubled:
        raise ValueError(f"policy: {doubled} named more than once")
    return checked


def play(spec: PolicySpec, episode: Episode, settings: EvaluationSettings,
         selector: Selector | None = None) -> list[JobResult]:
    """One online policy over one episode (``selector``: policy selection's learning state);
    the hindsight optimum is :func:`play_optimum`'s."""
    data, jobs = episode.data, list(episode.jobs)
    extra: dict[str, Any] = {}
    learns = "learns" in policy_class(spec.name).tags
    if learns:
        extra = {"selector": selector, "build": _builder(data, settings)}
    policy = _builder(data, settings)(spec, **extra)
    result = simulate(data, jobs, policy, until_end=learns,
                      tape=episode.outlooks(), migration=episode.migration, past=episode.past)
    return list(result.jobs)


def play_optimum(episode: Episode, settings: EvaluationSettings,
                 spec: PolicySpec) -> tuple[list[JobResult], int]:
    """The hindsight optimum (``spec``: its ``time_limit``) over one episode, one plan per
    group of jobs that compete for capacity, and how many of its jobs are in a plan not proven
    optimal (a search limit stopped it)."""
    data, jobs = episode.data, list(episode.jobs)
    results: dict[str, JobResult] = {}
    unproven = 0
    for group in competing_groups(jobs, data):
        policy = Optimum(data, group, limits=settings.optimum_limits,
                         migration=episode.migration,
                         time_limit=float(spec.kwargs.get("time_limit", DEFAULT_TIME_LIMIT)))
        results.update((r.job_id, r) for r in simulate(data, group, policy,
                                                       migration=episode.migration).jobs)
        unproven += 0 if policy.plan.optimal else len(group)
    return [results[j.id] for j in jobs], unproven


def _builder(data: MarketData, settings: EvaluationSettings) -> Callable[..., Policy]:
    """Builds policies for one episode: planners plan on ``settings.forecast`` unless their
    spec says, with the episode's realised data for an oracle."""

    def build(spec: PolicySpec, **extra: Any) -> Policy:
        spec = as_played(spec, settings)
        context = {"data": data} if "data" in policy_class(spec.name).context else {}
        return make_policy(spec, **context, **extra)

    return build


def as_played(spec: PolicySpec, settings: EvaluationSettings) -> PolicySpec:
    """``spec`` with the forecast kind it plans on filled in (``settings.forecast`` where a
    planner's spec names none): two specs played alike are then equal."""
    if "needs_forecasts" in policy_class(spec.name).tags and "forecast" not in spec.kwargs:
        return PolicySpec(spec.name, (*spec.params, ("forecast", settings.forecast)))
    return spec


def play_selection(spec: PolicySpec, episodes: Sequence[Episode], seed: int,
                   settings: EvaluationSettings) -> tuple[list[JobResult], Selector]:
    """A ``policy-selection`` spec over ``episodes`` in order, with one learner (seeded with
    ``seed`` unless the spec names one) that learns across them."""
    selector = Selector.of(spec, seed)
    return [r for e in episodes for r in play(spec, e, settings, selector)], selector


def noisy_oracle(episode: Episode, k: int, error: float, seed: int) -> NoisyOracleForecast:
    """The sensitivity study's forecasts for the ``k``-th episode at error level ``error``:
    prices times ``exp(error · N(0, 1))``, capacity flipped with probability
    ``min(error / 2, 0.5)``, the noise seeded with ``seed + k``."""
    return NoisyOracleForecast(episode.data, error=error, flip=min(error / 2, 0.5),
                               seed=seed + k)


def play_noisy_chc(episode: Episode, k: int, error: float, seed: int) -> list[JobResult]:
    """CHC planning on :func:`noisy_oracle` over the ``k``-th episode."""
    policy = make_policy("chc", source=noisy_oracle(episode, k, error, seed))
    return list(simulate(episode.data, list(episode.jobs), policy,
                         models=episode.fresh_models()).jobs)


def play_noisy_selection(episodes: Sequence[Episode], error: float, seed: int,
                         settings: EvaluationSettings) -> tuple[list[JobResult], Selector]:
    """Policy selection over prediction-free settings and CHC, its CHC planning on
    :func:`noisy_oracle`, over ``episodes`` in order: it sends new jobs to prediction-free
    while a :class:`~solver.policies.forecast_error.ForecastErrorMonitor` of that oracle reads
    more than ``settings.error_threshold``, each episode's monitor starting from the error the
    previous one ended with."""
    pool = (FALLBACK, PolicySpec.of("prediction-free", sigma=0.5), PolicySpec("chc"))
    selector = Selector(pool, seed=seed)
    results: list[JobResult] = []
    prior = 0.0
    for k, episode in enumerate(episodes):
        noisy = noisy_oracle(episode, k, error, seed)
        monitor = ForecastErrorMonitor(noisy, prior=prior)
        policy = make_policy(
            "policy-selection", selector=selector, fallback=format_pool((FALLBACK,)),
            error_threshold=settings.error_threshold, forecast_error=monitor,
            build=lambda s, n=noisy, **_: make_policy(s, source=n) if s.name == "chc"
            else make_policy(s))
        results += simulate(episode.data, list(episode.jobs), policy,
                            models=episode.fresh_models(), until_end=True).jobs
        prior = monitor.error
    return results, selector


def regret_bound(rounds: int, members: int) -> float:
    """Hedge's worst-case regret bound at the unscaled anytime rate."""
    return math.sqrt(2.0 * rounds * math.log(members)) + math.sqrt(math.log(members) / 8.0)
