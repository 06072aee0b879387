"""Trace-driven simulation of jobs under one policy.

Rules, slot by slot (the README states them for users):

1. The policy sees an :class:`~solver.observation.Observation` built from a history buffer that the
   simulator fills one slot at a time, so the future is never in memory the policy can reach.
2. Spot requests in a market are granted in job priority order (earliest hard deadline, then
   id) up to the slot's availability; requested spot instances that were held in the previous
   slot and are not granted count as preemptions, the rest as refusals. On-demand is always
   granted. A job granted fewer than ``n_min`` instances runs nothing in that slot.
3. Whenever the granted configuration (market, spot, on-demand) differs from the previous
   slot's and is not empty, the job pays its restart overhead: running-but-unproductive time
   that carries over into later slots when it exceeds a slot.
4. A launch in a market other than the place of the job's newest checkpoint (where it last
   made progress; at admission its home region, or nowhere) moves the checkpoint
   (:mod:`solver.migration`): the move's transfer time adds to the restart overhead, and its
   egress is billed in the slot of the launch.
5. Every slot in which instances run is billed in full: spot at the slot's mean price,
   on-demand at the market's on-demand price, including overhead time and the final partial
   slot. An instance that is lost or refused is not billed.
6. A job is active from the first slot starting at or after its release until it finishes or
   its hard deadline passes; completion time is exact within the slot.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from solver.engine import Engine
from solver.forecast.models import MarketModels, OutlookTape
from solver.job import Allocation, Job, JobResult
from solver.market import MarketData
from solver.migration import DEFAULT_MIGRATION, MigrationTable
from solver.observation import Past
from solver.policies.protocol import Policy
from solver.timefmt import iso_utc


@dataclass(frozen=True)
class SimulationResult:
    """Per-job outcomes plus per-slot usage ``(markets, slots)`` and cost per slot."""

    policy: str
    jobs: tuple[JobResult, ...]
    spot_used: np.ndarray
    on_demand_used: np.ndarray
    cost_per_slot: np.ndarray
    decisions: tuple[tuple[int, str, Allocation], ...] = field(repr=False)

    @property
    def total_cost(self) -> float:
        return float(sum(r.cost for r in self.jobs))

    @property
    def total_utility(self) -> float:
        return float(sum(r.utility for r in self.jobs))

    @property
    def total_migrations(self) -> int:
        return sum(r.migrations for r in self.jobs)

    @property
    def total_egress_usd(self) -> float:
        """USD of checkpoint egress, included in :attr:`total_cost`."""
        return float(sum(r.egress_usd for r in self.jobs))


def validate_jobs(jobs: Sequence[Job], data: MarketData) -> None:
    """Reject jobs the market data cannot simulate, naming the job and field."""
    end = data.slot_start(data.n_slots)
    for job in jobs:
        if job.release < data.origin:
            raise ValueError(
                f"job {job.id!r} release={iso_utc(job.release)}: expected at or after the "
                f"market data's first slot start {iso_utc(data.origin)}"
            )
        if job.hard_deadline > end:
            raise ValueError(
                f"job {job.id!r} hard_deadline={iso_utc(job.hard_deadline)}: expected at or "
                f"before the market data's end {iso_utc(end)}"
            )


def simulate(
    data: MarketData,
    jobs: Sequence[Job],
    policy: Policy,
    progress: Callable[[int], None] | None = None,
    models: MarketModels | None = None,
    until_end: bool = False,
    tape: OutlookTape | None = None,
    migration: MigrationTable = DEFAULT_MIGRATION,
    past: Past | None = None,
) -> SimulationResult:
    """Run ``jobs`` through ``data`` under ``policy``; deterministic for deterministic policies.

    ``progress`` is called with the number of slots simulated since the last call; ``models``
    are the markets' forecasters, trained on what came before ``data`` (default: fresh ones);
    ``tape`` their outlooks, made once for several runs over the same data (:func:`tape`).
    The run stops once every job is done unless ``until_end`` (for a policy that learns from
    the slots after that, as policy selection's counterfactuals do); ``migration`` prices
    moving a job's checkpoint; ``past`` are closed slots before ``data`` the policy is shown
    (:class:`~solver.observation.Past`).
    """
    validate_jobs(jobs, data)
    engine = Engine(data.markets, data.origin, data.slot_seconds, policy, data.n_slots,
                    models=models, migration=migration, past=past)
    for job in jobs:
        engine.add_job(job)
    n_markets, n_slots = data.price.shape
    spot_used = np.zeros((n_markets, n_slots), dtype=np.int64)
    od_used = np.zeros((n_markets, n_slots), dtype=np.int64)
    cost_per_slot = np.zeros(n_slots)
    decisions: list[tuple[int, str, Allocation]] = []
    reported = 0
    for t in range(n_slots):
        if engine.all_finished() and not until_end:
            break
        decided = engine.decide(data.boundary_price[:, t], data.boundary_availability[:, t],
                                tape[t] if tape is not None else None)
        decisions.extend((t, job_id, a) for job_id, a in decided.allocations.items())
        for used in engine.settle(data.price[:, t], data.availability[:, t]):
            spot_used[used.granted.market, t] += used.granted.spot
            od_used[used.granted.market, t] += used.granted.on_demand
            cost_per_slot[t] += used.cost
        if progress is not None and t + 1 - reported >= 64:
            progress(t + 1 - reported)
            reported = t + 1
    if progress is not None and reported < n_slots:
        progress(n_slots - reported)
    return SimulationResult(
        policy=policy.name,
        jobs=tuple(engine.results()),
        spot_used=spot_used,
        on_demand_used=od_used,
        cost_per_slot=cost_per_slot,
        decisions=tuple(decisions),
    )


def tape(data: MarketData, models: MarketModels | None = None) -> OutlookTape:
    """The outlooks of ``data``'s markets at each of its boundaries, for runs to share."""
    if models is None:
        models = MarketModels(len(data.markets), data.origin, data.slot_seconds)
    return OutlookTape(models, data.price, data.availability, data.origin)


def simulate_partitioned(
    data: MarketData,
    jobs: Sequence[Job],
    policy_factory: Callable[[], Policy],
    partition_of: Callable[[str], int],
    progress: Callable[[int], None] | None = None,
    outlooks: OutlookTape | None = None,
    migration: MigrationTable = DEFAULT_MIGRATION,
) -> SimulationResult:
    """Jobs split into groups that each plan alone against the whole market, as independent
    scheduler partitions do; one result with the jobs in their given order."""
    groups: dict[int, list[Job]] = {}
    for job in jobs:
        groups.setdefault(partition_of(job.id), []).append(job)
    parts = [simulate(data, group, policy_factory(), progress, tape=outlooks,
                      migration=migration)
             for _, group in sorted(groups.items())]
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return simulate(data, jobs, policy_factory(), progress, tape=outlooks,
                        migration=migration)
    by_id = {r.job_id: r for part in parts for r in part.jobs}
    return SimulationResult(
        policy=parts[0].policy,
        jobs=tuple(by_id[j.id] for j in jobs),
        spot_used=np.sum([p.spot_used for p in parts], axis=0),
        on_demand_used=np.sum([p.on_demand_used for p in parts], axis=0),
        cost_per_slot=np.sum([p.cost_per_slot for p in parts], axis=0),
        decisions=tuple(sorted((d for p in parts for d in p.decisions), key=lambda d: d[:2])),
    )
