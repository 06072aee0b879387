"""Run several policies over the same market data and workload, and summarise each."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial

from solver.job import Job
from solver.market import MarketData
from solver.migration import DEFAULT_MIGRATION, MigrationTable
from solver.policies import PolicySpec, check_spec, make_policy, policy_class
from solver.policies.baselines import OnDemandOnly
from solver.policies.optimum import Optimum
from solver.policies.protocol import Policy
from solver.simulator import SimulationResult, simulate_partitioned, tape


@dataclass(frozen=True, slots=True)
class PolicySummary:
    """Totals of one policy over a workload; ``cost_vs_on_demand`` is its bill divided by the
    on-demand-only bill for the same jobs; ``migrations`` and ``egress_usd`` (in the cost)
    count the moves of the jobs' checkpoints; ``gap_usd``, for a hindsight plan, how much more
    utility its program could at most reach, as its solver proved (0 when proven optimal,
    ``None`` for an online policy)."""

    policy: str
    jobs: int
    total_utility: float
    mean_utility: float
    total_cost: float
    mean_cost: float
    cost_vs_on_demand: float | None
    soft_deadline_misses: int
    hard_deadline_misses: int
    preemptions: int
    refusals: int
    restarts: int
    migrations: int = 0
    egress_usd: float = 0.0
    gap_usd: float | None = None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def summarize(result: SimulationResult, on_demand_cost: float | None,
              gap_usd: float | None = None) -> PolicySummary:
    jobs = result.jobs
    n = len(jobs)
    cost = result.total_cost
    return PolicySummary(
        policy=result.policy,
        jobs=n,
        total_utility=result.total_utility,
        mean_utility=result.total_utility / n if n else 0.0,
        total_cost=cost,
        mean_cost=cost / n if n else 0.0,
        cost_vs_on_demand=cost / on_demand_cost if on_demand_cost else None,
        soft_deadline_misses=sum(not j.soft_deadline_met for j in jobs),
        hard_deadline_misses=sum(not j.hard_deadline_met for j in jobs),
        preemptions=sum(j.preemptions for j in jobs),
        refusals=sum(j.refusals for j in jobs),
        restarts=sum(j.restarts for j in jobs),
        migrations=result.total_migrations,
        egress_usd=result.total_egress_usd,
        gap_usd=gap_usd,
    )


def compare_policies(
    data: MarketData,
    jobs: Sequence[Job],
    policies: Sequence[str | PolicySpec],
    progress: Callable[[int], None] | None = None,
    partition_of: Callable[[str], int] = lambda job_id: 0,
    migration: MigrationTable = DEFAULT_MIGRATION,
) -> tuple[list[SimulationResult], list[PolicySummary]]:
    """Simulate each policy spec; on-demand only also runs (unreported) when not named, as
    the reference for ``cost_vs_on_demand``. ``partition_of`` splits the jobs among
    independent schedulers (default: one scheduler for all); ``migration`` prices moving
    checkpoints. A result is labelled with its spec (``chc:window_hours=12``)."""
    if not policies:
        raise ValueError("policies: expected at least one policy")
    specs = [check_spec(p) for p in policies]
    labels = [str(s) for s in specs]
    duplicates = sorted({x for x in labels if labels.count(x) > 1})
    if duplicates:
        raise ValueError(f"policies: {duplicates} named more than once")

    gaps: dict[str, float] = {}

    def build(spec: PolicySpec) -> Policy:
        if "hindsight" not in policy_class(spec.name).tags:
            return make_policy(spec)
        policy = make_policy(spec, data=data, jobs=list(jobs), migration=migration)
        if isinstance(policy, Optimum):  # each partition's plans every job alike
            gaps[str(spec)] = policy.plan.gap
        return policy

    outlooks = tape(data)
    results = [
        replace(simulate_partitioned(data, jobs, partial(build, spec), partition_of,
                                     progress, outlooks, migration), policy=str(spec))
        for spec in specs
    ]
    reference = next((r for r in results if r.policy == OnDemandOnly.name), None)
    if reference is None:
        reference = simulate_partitioned(data, jobs, OnDemandOnly, partition_of,
                                         migration=migration)
    summaries = [summarize(r, reference.total_cost, gaps.get(r.policy)) for r in results]
    return results, summaries
