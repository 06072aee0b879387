"""Prometheus metrics of a scheduler worker, computed from what the pipeline's stages give out.

:class:`PipelineMetrics` observes how a stage handled each message
(:meth:`PipelineMetrics.observe`): the events the stages published, the messages they rejected,
and the engine's slot decisions. The figures are pure functions of those (:func:`job_figures`,
:func:`deadline_risk`, :func:`projected_completion`, :func:`reason_kind`, :func:`epoch_lag`);
the forecast errors are those of the forecasters the schedulers plan on. docs/operations.md
lists every metric and alert.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import get_args

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from solver.decision import SlotDecision
from solver.job import Allocation, Allocations, Job
from solver.observation import JobView, Observation
from solver.policies.protocol import Policy, SettlementObserver, planner_of, planner_reason_of
from streams.contract import (
    EpochClosed,
    EventError,
    MarketBoundary,
    MoveLocality,
    ProvisioningDecision,
    PublishedForecast,
    ReleaseCause,
)
from streams.pipeline.declaration import PIPELINE
from streams.pipeline.driver import Batch, Handling, is_stage_error
from streams.pipeline.stage import Message, RejectedEvent

OUTCOMES: tuple[str, ...] = get_args(ReleaseCause)
"""How a job leaves the scheduler (its release cause): the ``outcome`` label of
``spotsched_jobs_ended_total``."""

REASON_KINDS = ("invalid", "rejected", "error")
"""``invalid``: the message cannot be decoded (bytes, JSON, schema); ``rejected``: a valid
event the pipeline cannot accept (unknown market or job, late tick, wrong topic, ...);
``error``: a stage raised on it (also counted in ``spotsched_stage_errors_total``)."""

SOLVE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                 30.0, 60.0, 120.0, 300.0)


@dataclass(frozen=True, slots=True)
class JobFigures:
    """What the per-job gauges show after a decision."""

    remaining_work: float
    slack_seconds: float
    deadline_risk: float
    projected_completion: float
    cost_usd: float


def deadline_risk(job: Job, remaining: float, now: float, on_demand: int) -> float:
    """Risk in [0, 1] that the job misses its hard deadline, from the time it needs.

    ``needed`` is the time on on-demand at ``n_max`` (the fastest configuration that cannot be
    taken away) and ``left`` the time to the hard deadline. The risk is 1 when ``needed >=
    left`` (no plan can finish), 0 when this slot's on-demand instances alone would finish in
    time (the plan does not depend on spot), and ``needed / left`` otherwise: the share of the
    remaining window the job would need even on the safest configuration.

    >>> job = Job("j", workload=10.0, release=0.0, soft_deadline=36000.0,
    ...           hard_deadline=72000.0, n_max=2)
    >>> deadline_risk(job, 10.0, now=36000.0, on_demand=0)  # 5 h needed, 10 h left
    0.5
    >>> deadline_risk(job, 10.0, now=36000.0, on_demand=1)  # 10 h on one on-demand: in time
    0.0
    >>> deadline_risk(job, 10.0, now=54000.0, on_demand=2)  # 5 h needed, 5 h left
    1.0
    """
    left = job.hard_deadline - now
    needed = job.seconds_needed(remaining, job.n_max)
    if needed >= left:
        return 1.0
    if on_demand >= job.n_min and job.seconds_needed(remaining, on_demand) <= left:
        return 0.0
    return needed / left


def projected_completion(
    job: Job, remaining: float, now: float, running: int, overhead: float, slot_seconds: float
) -> float:
    """Unix time at which the job finishes if it keeps ``running`` instances from ``now``,
    after ``overhead`` unproductive seconds; when it idles (``running`` 0), the earliest finish:
    on-demand at ``n_max`` from the next boundary."""
    if running > 0:
        return now + job.seconds_needed(remaining, running, overhead)
    return now + slot_seconds + job.seconds_needed(remaining, job.n_max)


def job_figures(view: JobView, allocation: Allocation, now: float,
                slot_seconds: float) -> JobFigures:
    """The per-job gauges of an active job decided ``allocation`` at boundary ``now``."""
    job = view.job
    overhead = view.pending_overhead if allocation == view.current else job.restart_overhead
    return JobFigures(
        remaining_work=view.remaining,
        slack_seconds=job.slack(now, view.remaining),
        deadline_risk=deadline_risk(job, view.remaining, now, allocation.on_demand),
        projected_completion=projected_completion(job, view.remaining, now, allocation.total,
                                                  overhead, slot_seconds),
        cost_usd=view.cost,
    )


def reason_kind(error: Exception) -> str:
    """The ``reason_kind`` label of a dead letter (see :data:`REASON_KINDS`)."""
    if isinstance(error, EventError):
        return "invalid"
    return "rejected" if isinstance(error, RejectedEvent) else "error"


def epoch_lag(watermark: float, boundary: float) -> float:
    """Event-time seconds the last closed epoch trails the newest market event seen."""
    return max(0.0, watermark - boundary)


class TimedPolicy:
    """A policy whose every ``decide`` is observed by a histogram; what it learns from each
    settled slot (e.g. policy selection) is the policy's own."""

    def __init__(self, policy: Policy, seconds: Histogram) -> None:
        self.policy = policy
        self.name = policy.name
        self._seconds = seconds

    def decide(self, obs: Observation) -> Allocations:
        with self._seconds.time():
            return self.policy.decide(obs)

    def observe_settled(self, price: np.ndarray, availability: np.ndarray) -> None:
        """Hands the settled slot to the policy when it learns from settled slots."""
        if isinstance(self.policy, SettlementObserver):
            self.policy.observe_settled(price, availability)

    def planner(self, job_id: str) -> str | None:
        """The planner the timed policy decides the job with."""
        return planner_of(self.policy, job_id)

    def planner_reason(self, job_id: str) -> str:
        """Why the timed policy gave the job its planner, where it says."""
        return planner_reason_of(self.policy, job_id)


def _gauge(registry: CollectorRegistry, name: str, doc: str, labels: Sequence[str] = ()
           ) -> Gauge:
    return Gauge(name, doc, labels, registry=registry)


def _counter(registry: CollectorRegistry, name: str, doc: str, labels: Sequence[str] = ()
             ) -> Counter:
    return Counter(name, doc, labels, registry=registry)


class JobSeries:
    """The per-job gauges (a series while the job is active) and the job counts."""

    def __init__(self, registry: CollectorRegistry) -> None:
        job = ("job_id",)
        self.remaining_work = _gauge(
            registry, "spotsched_job_remaining_work_units", "Work units the job has left", job)
        self.slack = _gauge(
            registry, "spotsched_job_slack_seconds",
            "Hard deadline minus the finish time on on-demand at n_max started now", job)
        self.deadline_risk = _gauge(
            registry, "spotsched_job_deadline_risk_ratio",
            "Risk in [0, 1] of missing the hard deadline (docs/operations.md)", job)
        self.projected_completion = _gauge(
            registry, "spotsched_job_projected_completion_timestamp_seconds",
            "Unix time the job finishes at the current allocation", job)
        self.cost = _gauge(registry, "spotsched_job_cost_usd", "USD the job has paid so far", job)
        self.active = _gauge(registry, "spotsched_jobs_active",
                             "Active jobs this worker schedules")
        self.to_decide = _gauge(
            registry, "spotsched_jobs_to_decide",
            "Jobs the schedulers of this worker decided at their last epoch, due again at the "
            "next")
        self.ended = _counter(registry, "spotsched_jobs_ended",
                              "Jobs that left the scheduler, by outcome", ("outcome",))
        for outcome in OUTCOMES:
            self.ended.labels(outcome)
        self._series = (self.remaining_work, self.slack, self.deadline_risk,
                        self.projected_completion, self.cost)
        self._jobs: dict[str, tuple[Gauge, ...]] = {}
        """Each active job's series, in the order of ``_series``."""
        self._due: dict[int | None, int] = {}

    def decided(self, partition: int | None, decided: SlotDecision,
                decisions: Sequence[ProvisioningDecision]) -> None:
        """One partition's epoch: refresh each decided job's series; a released job is
        counted by its cause and its series removed."""
        for decision in decisions:
            if decision.release_cause is not None:
                self._ended(decision.job_id, decision.release_cause)
            elif decision.job_id in decided.allocations:
                self._show(decided, decision.job_id)
        self._due[partition] = len(decided.allocations)
        self.active.set(len(self._jobs))
        self.to_decide.set(sum(self._due.values()))

    def _show(self, decided: SlotDecision, job_id: str) -> None:
        obs = decided.observation
        view = decided.view(job_id)
        figures = job_figures(view, decided.allocations[job_id], obs.time, obs.slot_seconds)
        series = self._jobs.get(job_id)
        if series is None:
            series = self._jobs[job_id] = tuple(s.labels(job_id) for s in self._series)
        for gauge, value in zip(series, (figures.remaining_work, figures.slack_seconds,
                                         figures.deadline_risk, figures.projected_completion,
                                         figures.cost_usd), strict=True):
            gauge.set(value)

    def _ended(self, job_id: str, outcome: str) -> None:
        self.ended.labels(outcome).inc()
        if self._jobs.pop(job_id, None) is not None:
            for series in self._series:
                series.remove(job_id)


class MarketSeries:
    """What the worker last saw of each catalogue market: its boundary values, and the running
    errors of the forecaster the schedulers plan on."""

    def __init__(self, registry: CollectorRegistry, markets: Sequence[str]) -> None:
        market = ("market",)
        self.spot_price = _gauge(
            registry, "spotsched_market_spot_price_usd_per_hour",
            "Spot price in force at the last boundary (USD per instance-hour)", market)
        self.spot_available = _gauge(
            registry, "spotsched_market_spot_available_instances",
            "Spot instances obtainable at the last boundary", market)
        self.price_error = _gauge(
            registry, "spotsched_market_price_forecast_error_ratio",
            "Running MAPE of the price forecasts the schedulers plan on, as a ratio (0.1 = 10%)",
            market)
        self.availability_error = _gauge(
            registry, "spotsched_market_availability_forecast_brier_score",
            "Running Brier score of the availability forecasts the schedulers plan on", market)
        for key in markets:
            for series in (self.spot_price, self.spot_available, self.price_error,
                           self.availability_error):
                series.labels(key).set(math.nan)

    def boundary(self, boundary: MarketBoundary) -> None:
        self.spot_price.labels(boundary.market).set(boundary.price_now)
        self.spot_available.labels(boundary.market).set(boundary.availability_now)

    def forecast(self, forecast: PublishedForecast) -> None:
        price, brier = forecast.price_error, forecast.availability_error
        self.price_error.labels(forecast.market).set(math.nan if price is None else price / 100)
        self.availability_error.labels(forecast.market).set(math.nan if brier is None else brier)


RESTORE_SOURCES = ("snapshot", "memory", "log")
"""Where a restore started from: a snapshot, the stage the worker still held, or a fresh stage
at the start of the partition's log (:mod:`streams.runners.recovery`)."""

SNAPSHOT_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class RecoveryMetrics:
    """Restores and snapshots of the stages a worker holds, by stage (and partition)."""

    def __init__(self, registry: CollectorRegistry, *, clock: Callable[[], float] = time.time,
                 every_epochs: int = 0) -> None:
        self.clock = clock
        where = ("stage", "partition")
        self.restore_started_at = _gauge(
            registry, "spotsched_restore_started_timestamp_seconds",
            "Unix time the running restore of a stage's partition began; NaN when none runs",
            where)
        self.restore_remaining = _gauge(
            registry, "spotsched_restore_records_remaining",
            "Records the running restore of a stage's partition has still to replay", where)
        self.restore_replayed = _counter(
            registry, "spotsched_restore_records_replayed",
            "Records replayed by restores, by stage", ("stage",))
        self.restores = _counter(
            registry, "spotsched_restores", "Restores done, by stage and what they started from",
            ("stage", "source"))
        self.refusals = _counter(
            registry, "spotsched_snapshots_refused",
            "Snapshots a restore could not use (other version or settings, corrupt, incomplete)",
            ("stage",))
        self.failures = _counter(
            registry, "spotsched_snapshot_failures",
            "Snapshots that could not be written, by stage", ("stage",))
        self.taken = _gauge(
            registry, "spotsched_snapshot_taken_timestamp_seconds",
            "Unix time the newest snapshot of a stage's partition this worker holds was taken",
            where)
        self.size = _gauge(registry, "spotsched_snapshot_bytes",
                           "Size of the last snapshot written of a stage's partition", where)
        self.write_seconds = Histogram(
            "spotsched_snapshot_write_seconds",
            "Seconds to take and write one snapshot of a stage's partition", ("stage",),
            buckets=SNAPSHOT_BUCKETS, registry=registry)
        _gauge(registry, "spotsched_snapshot_every_epochs",
               "Slots of event time after which a stage is snapshotted").set(every_epochs)
        for stage in (spec.name for spec in PIPELINE):
            self.restore_replayed.labels(stage)
            self.refusals.labels(stage)
            self.failures.labels(stage)
            for source in RESTORE_SOURCES:
                self.restores.labels(stage, source)

    def restore_started(self, stage: str, partition: int) -> None:
        self.restore_started_at.labels(stage, str(partition)).set(self.clock())

    def restore_progress(self, stage: str, partition: int, remaining: int,
                         replayed: int = 0) -> None:
        self.restore_remaining.labels(stage, str(partition)).set(remaining)
        self.restore_replayed.labels(stage).inc(replayed)

    def restore_ended(self, stage: str, partition: int) -> None:
        self.restore_started_at.labels(stage, str(partition)).set(math.nan)
        self.restore_remaining.labels(stage, str(partition)).set(0)

    def restored(self, stage: str, source: str) -> None:
        self.restores.labels(stage, source).inc()

    def refused(self, stage: str) -> None:
        self.refusals.labels(stage).inc()

    def failed(self, stage: str) -> None:
        self.failures.labels(stage).inc()

    def snapshot_known(self, stage: str, partition: int, taken: float) -> None:
        self.taken.labels(stage, str(partition)).set(taken)

    def snapshot_written(self, stage: str, partition: int, taken: float, size: int,
                         seconds: float) -> None:
        self.snapshot_known(stage, partition, taken)
        self.size.labels(stage, str(partition)).set(size)
        self.write_seconds.labels(stage).observe(seconds)


class PipelineMetrics:
    """A worker's metrics, registered in ``registry`` with every fixed label created up front.

    ``markets`` are the catalogue's market keys and ``topics`` the input topics the worker
    consumes; ``started`` (Unix seconds, by ``clock``) stands for the last epoch closed and the
    last decision until there are some. Per-job series exist while a job is active.
    """

    def __init__(self, registry: CollectorRegistry, *, markets: Sequence[str],
                 topics: Sequence[str], slot_seconds: float, started: float,
                 clock: Callable[[], float] = time.time, snapshot_every_epochs: int = 0
                 ) -> None:
        self.jobs = JobSeries(registry)
        self.markets = MarketSeries(registry, markets)
        self.recovery = RecoveryMetrics(registry, clock=clock,
                                        every_epochs=snapshot_every_epochs)
        self.clock = clock
        self.events_consumed = _counter(
            registry, "spotsched_events_consumed", "Messages consumed, by topic", ("topic",))
        self.dead_letters = _counter(
            registry, "spotsched_dead_letters",
            "Messages dead-lettered, by source topic and kind", ("topic", "reason_kind"))
        self.stage_errors = _counter(
            registry, "spotsched_stage_errors",
            "Exceptions a stage raised or caught on its own (the message was dead-lettered or "
            "the part restarted), by stage and exception type", ("stage", "error_type"))
        self.decisions_emitted = _counter(
            registry, "spotsched_decisions_emitted", "Provisioning decisions published")
        self.migrations = _counter(
            registry, "spotsched_migrations",
            "Decisions that launch a job away from its checkpoint (moving it), by how far",
            ("locality",))
        self.egress = _counter(
            registry, "spotsched_egress_usd",
            "Egress USD the published decisions' checkpoint moves bill")
        for locality in get_args(MoveLocality):
            self.migrations.labels(locality)
        self.solve_seconds = Histogram(
            "spotsched_solve_seconds", "Seconds a policy took to decide one epoch",
            buckets=SOLVE_BUCKETS, registry=registry)
        self.epoch_lag = _gauge(
            registry, "spotsched_epoch_lag_seconds",
            "Event time between the newest market event and the last closed epoch")
        self.last_decision = _gauge(
            registry, "spotsched_last_decision_timestamp_seconds",
            "Unix time this worker last published a decision (its start until then)")
        self.last_epoch_closed = _gauge(
            registry, "spotsched_last_epoch_closed_timestamp_seconds",
            "Unix time this worker last closed an epoch (its start until then)")
        _gauge(registry, "spotsched_slot_seconds",
               "Slot length the worker schedules with").set(slot_seconds)
        for topic in topics:
            self.events_consumed.labels(topic)
            for kind in REASON_KINDS:
                self.dead_letters.labels(topic, kind)
        self.epoch_lag.set(math.nan)
        self.last_epoch_closed.set(started)
        self.last_decision.set(started)
        self._watermark = -math.inf
        self._last_boundary: float | None = None

    def timed(self, policy: Policy) -> Policy:
        """``policy`` with its solve time observed in ``spotsched_solve_seconds``."""
        return TimedPolicy(policy, self.solve_seconds)

    def observe(self, batch: Batch) -> None:
        """What a batch of messages made a stage do: each counter and gauge is updated once
        for the batch, and each message that wrote, rejected, faulted or decided is looked at."""
        if batch.taken:
            self.events_consumed.labels(batch.topic).inc(batch.taken)
        if batch.market_time is not None:
            self._advance(batch.market_time.timestamp())
        for message, handling in batch.eventful:
            self._handled(batch.stage, message, handling)

    def _handled(self, stage: str, message: Message, handling: Handling) -> None:
        for fault in handling.faults:
            self.stage_errors.labels(fault.stage, type(fault.error).__name__).inc()
        for rejected in handling.rejections:
            if is_stage_error(rejected.error):
                self.stage_errors.labels(stage, type(rejected.error).__name__).inc()
            self.dead_letters.labels(message.topic, reason_kind(rejected.error)).inc()
        for event in handling.outputs:
            self._published(stage, event)
        decisions = [d for d in handling.outputs if isinstance(d, ProvisioningDecision)]
        for decided in handling.decided:
            self.jobs.decided(message.partition, decided, decisions)
        if decisions:
            self.last_decision.set(self.clock())

    def _published(self, stage: str, event: object) -> None:
        if isinstance(event, MarketBoundary):
            self.markets.boundary(event)
        elif isinstance(event, PublishedForecast) and stage == "market":
            self.markets.forecast(event)
        elif isinstance(event, EpochClosed):
            self._last_boundary = event.event_time.timestamp()
            self.last_epoch_closed.set(self.clock())
            self._advance(self._last_boundary)
        elif isinstance(event, ProvisioningDecision):
            self.decisions_emitted.inc()
            view = event.market_view
            if view is not None and view.move_locality is not None:
                self.migrations.labels(view.move_locality).inc()
                self.egress.inc(view.move_egress_usd or 0.0)

    def _advance(self, time: float) -> None:
        """Market event time reached ``time``: the epoch lag follows."""
        self._watermark = max(self._watermark, time)
        if self._last_boundary is not None:
            self.epoch_lag.set(epoch_lag(self._watermark, self._last_boundary))
