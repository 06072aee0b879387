"""Prometheus metrics of a scheduler worker, computed from the pipeline's own state.

The values are pure functions of the engine's job state, the decisions and the market
forecasts (:func:`job_figures`, :func:`deadline_risk`, :func:`projected_completion`,
:func:`job_outcome`, :func:`reason_kind`, :func:`epoch_lag`); :class:`PipelineMetrics` only
records them in the registry it is given. docs/operations.md lists every metric and alert.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from solver.engine import Engine, JobState
from solver.job import Allocation, Job
from solver.market import SECONDS_PER_HOUR
from solver.observation import Decision, Observation, Policy
from streams.contract.events import (
    AvailabilityTick,
    EpochClosed,
    EventError,
    MarketBoundary,
    MarketForecast,
    PriceTick,
    ProvisioningDecision,
)
from streams.pipeline.stage import RejectedEvent
from streams.settings import Settings

OUTCOMES = ("finished", "cancelled", "deadline_missed", "failed")
"""How a job leaves the scheduler: the ``outcome`` label of ``spotsched_jobs_ended_total``."""

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


def seconds_to_finish(job: Job, remaining: float, instances: int) -> float:
    """Seconds ``instances`` need for ``remaining`` work, one restart overhead included."""
    return job.restart_overhead + SECONDS_PER_HOUR * job.hours_to_finish(remaining, instances)


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
    needed = seconds_to_finish(job, remaining, job.n_max)
    if needed >= left:
        return 1.0
    if on_demand >= job.n_min and seconds_to_finish(job, remaining, on_demand) <= left:
        return 0.0
    return needed / left


def projected_completion(
    job: Job, remaining: float, now: float, running: int, overhead: float, slot_seconds: float
) -> float:
    """Unix time at which the job finishes if it keeps ``running`` instances from ``now``,
    after ``overhead`` unproductive seconds; when it idles (``running`` 0), the earliest finish:
    on-demand at ``n_max`` from the next boundary."""
    if running > 0:
        return now + overhead + SECONDS_PER_HOUR * job.hours_to_finish(remaining, running)
    return now + slot_seconds + seconds_to_finish(job, remaining, job.n_max)


def job_figures(
    state: JobState, allocation: Allocation, now: float, slot_seconds: float
) -> JobFigures:
    """The per-job gauges of an active job decided ``allocation`` at boundary ``now``."""
    job = state.job
    overhead = state.pending_overhead if allocation == state.held else job.restart_overhead
    return JobFigures(
        remaining_work=state.remaining,
        slack_seconds=job.hard_deadline - now - seconds_to_finish(job, state.remaining,
                                                                  job.n_max),
        deadline_risk=deadline_risk(job, state.remaining, now, allocation.on_demand),
        projected_completion=projected_completion(job, state.remaining, now, allocation.total,
                                                  overhead, slot_seconds),
        cost_usd=state.cost,
    )


def job_outcome(state: JobState) -> str:
    """``cancelled``, ``failed``, ``finished`` (by the hard deadline) or ``deadline_missed``."""
    if state.cancelled:
        return "cancelled"
    if state.failure is not None:
        return "failed"
    if state.completion is not None and state.completion <= state.job.hard_deadline:
        return "finished"
    return "deadline_missed"


def reason_kind(error: Exception) -> str:
    """The ``reason_kind`` label of a dead letter (see :data:`REASON_KINDS`)."""
    if isinstance(error, EventError):
        return "invalid"
    return "rejected" if isinstance(error, RejectedEvent) else "error"


def epoch_lag(watermark: float, boundary: float) -> float:
    """Event-time seconds the last closed epoch trails the newest market event seen."""
    return max(0.0, watermark - boundary)


class TimedPolicy:
    """A policy whose every ``decide`` is observed by a histogram."""

    def __init__(self, policy: Policy, seconds: Histogram) -> None:
        self.policy = policy
        self.name = policy.name
        self._seconds = seconds

    def decide(self, obs: Observation) -> Decision:
        with self._seconds.time():
            return self.policy.decide(obs)


class PipelineMetrics:
    """A worker's metrics, registered in ``registry`` with every fixed label created up front.

    ``markets`` are the catalogue's market keys and ``topics`` the input topics the worker
    consumes; ``started`` (Unix seconds) stands for the last epoch closed until one closes.
    Per-job series exist while a job is active and are removed when it leaves.
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        markets: Sequence[str],
        topics: Sequence[str],
        slot_seconds: float,
        started: float,
    ) -> None:
        def gauge(name: str, doc: str, labels: Sequence[str] = ()) -> Gauge:
            return Gauge(name, doc, labels, registry=registry)

        def counter(name: str, doc: str, labels: Sequence[str] = ()) -> Counter:
            return Counter(name, doc, labels, registry=registry)

        job = ("job_id",)
        self.job_remaining_work = gauge(
            "spotsched_job_remaining_work_units", "Work units the job has left", job)
        self.job_slack = gauge(
            "spotsched_job_slack_seconds",
            "Hard deadline minus the finish time on on-demand at n_max started now", job)
        self.job_deadline_risk = gauge(
            "spotsched_job_deadline_risk_ratio",
            "Risk in [0, 1] of missing the hard deadline (docs/operations.md)", job)
        self.job_projected_completion = gauge(
            "spotsched_job_projected_completion_timestamp_seconds",
            "Unix time the job finishes at the current allocation", job)
        self.job_cost = gauge("spotsched_job_cost_usd", "USD the job has paid so far", job)
        self.jobs_active = gauge("spotsched_jobs_active", "Active jobs this worker schedules")
        self.jobs_to_decide = gauge(
            "spotsched_jobs_to_decide",
            "Jobs the schedulers of this worker must decide at their current epoch")
        self.jobs_ended = counter(
            "spotsched_jobs_ended", "Jobs that left the scheduler, by outcome", ("outcome",))

        market = ("market",)
        self.spot_price = gauge(
            "spotsched_market_spot_price_usd_per_hour",
            "Spot price in force at the last boundary (USD per instance-hour)", market)
        self.spot_available = gauge(
            "spotsched_market_spot_available_instances",
            "Spot instances obtainable at the last boundary", market)
        self.price_error = gauge(
            "spotsched_market_price_forecast_error_ratio",
            "Running price forecast MAPE as a ratio (0.1 = 10%)", market)
        self.availability_error = gauge(
            "spotsched_market_availability_forecast_brier_score",
            "Running Brier score of the spot availability forecast", market)

        self.events_consumed = counter(
            "spotsched_events_consumed", "Messages consumed, by topic", ("topic",))
        self.dead_letters = counter(
            "spotsched_dead_letters", "Messages dead-lettered, by source topic and kind",
            ("topic", "reason_kind"))
        self.stage_errors = counter(
            "spotsched_stage_errors",
            "Exceptions a stage raised or caught on its own (the message was dead-lettered or "
            "the part restarted), by stage and exception type", ("stage", "error_type"))
        self.decisions_emitted = counter(
            "spotsched_decisions_emitted", "Provisioning decisions published")
        self.solve_seconds = Histogram(
            "spotsched_solve_seconds", "Seconds a policy took to decide one epoch",
            buckets=SOLVE_BUCKETS, registry=registry)
        self.epoch_lag = gauge(
            "spotsched_epoch_lag_seconds",
            "Event time between the newest market event and the last closed epoch")
        self.last_decision = gauge(
            "spotsched_last_decision_timestamp_seconds",
            "Unix time this worker last published a decision (its start until then)")
        self.last_epoch_closed = gauge(
            "spotsched_last_epoch_closed_timestamp_seconds",
            "Unix time this worker last closed an epoch (its start until then)")
        self.slot = gauge("spotsched_slot_seconds", "Slot length the worker schedules with")

        for key in markets:
            for series in (self.spot_price, self.spot_available, self.price_error,
                           self.availability_error):
                series.labels(key).set(math.nan)
        for topic in topics:
            self.events_consumed.labels(topic)
            for kind in REASON_KINDS:
                self.dead_letters.labels(topic, kind)
        for outcome in OUTCOMES:
            self.jobs_ended.labels(outcome)
        self.epoch_lag.set(math.nan)
        self.last_epoch_closed.set(started)
        self.last_decision.set(started)
        self.slot.set(slot_seconds)
        self._jobs: set[str] = set()
        self._watermark = -math.inf
        self._last_boundary: float | None = None

    def timed(self, policy: Policy) -> Policy:
        """``policy`` with its solve time observed in ``spotsched_solve_seconds``."""
        return TimedPolicy(policy, self.solve_seconds)

    def consumed(self, topic: str) -> None:
        self.events_consumed.labels(topic).inc()

    def dead_lettered(self, topic: str, error: Exception) -> None:
        self.dead_letters.labels(topic, reason_kind(error)).inc()

    def stage_failed(self, stage: str, error: Exception) -> None:
        self.stage_errors.labels(stage, type(error).__name__).inc()

    def accepted(self, event: object) -> None:
        """An input event a stage took: market ticks and boundaries advance the watermark."""
        if isinstance(event, PriceTick | AvailabilityTick | MarketBoundary):
            self._watermark = max(self._watermark, event.event_time.timestamp())
            self._update_lag()

    def market_boundary(self, boundary: MarketBoundary) -> None:
        self.spot_price.labels(boundary.market).set(boundary.price_now)
        self.spot_available.labels(boundary.market).set(boundary.availability_now)

    def market_forecast(self, forecast: MarketForecast) -> None:
        price, brier = forecast.price_error, forecast.availability_error
        self.price_error.labels(forecast.market).set(math.nan if price is None else price / 100)
        self.availability_error.labels(forecast.market).set(math.nan if brier is None else brier)

    def epoch_closed(self, epoch: EpochClosed, now: float) -> None:
        """This worker closed ``epoch`` at Unix time ``now``."""
        self._last_boundary = epoch.event_time.timestamp()
        self._watermark = max(self._watermark, self._last_boundary)
        self.last_epoch_closed.set(now)
        self._update_lag()

    def scheduled(self, engine: Engine, decisions: Sequence[ProvisioningDecision],
                  now: float) -> None:
        """Decisions of one epoch from ``engine``'s partition, published at Unix time ``now``:
        refresh each active job's series; a job released because it finished, was cancelled,
        failed or ran out of time is counted by outcome and its series removed."""
        for decision in decisions:
            self.decisions_emitted.inc()
            state = engine.job_state(decision.job_id)
            if state.finished:
                self._job_ended(decision.job_id, job_outcome(state))
                continue
            allocation = Allocation(engine.index[decision.market], decision.spot,
                                    decision.on_demand)
            figures = job_figures(state, allocation, decision.slot_start.timestamp(),
                                  decision.slot_seconds)
            job_id = decision.job_id
            self.job_remaining_work.labels(job_id).set(figures.remaining_work)
            self.job_slack.labels(job_id).set(figures.slack_seconds)
            self.job_deadline_risk.labels(job_id).set(figures.deadline_risk)
            self.job_projected_completion.labels(job_id).set(figures.projected_completion)
            self.job_cost.labels(job_id).set(figures.cost_usd)
            self._jobs.add(job_id)
        self.jobs_active.set(len(self._jobs))
        self.last_decision.set(now)

    def _job_ended(self, job_id: str, outcome: str) -> None:
        self.jobs_ended.labels(outcome).inc()
        if job_id in self._jobs:
            self._jobs.discard(job_id)
            for series in (self.job_remaining_work, self.job_slack, self.job_deadline_risk,
                           self.job_projected_completion, self.job_cost):
                series.remove(job_id)

    def _update_lag(self) -> None:
        if self._last_boundary is not None:
            self.epoch_lag.set(epoch_lag(self._watermark, self._last_boundary))


def serve_metrics(settings: Settings, registry: CollectorRegistry) -> Any:
    """Serve ``registry`` at /metrics on ``metrics_host:metrics_port`` (loopback unless set
    otherwise) and return the server, unless the port is 0; an address that cannot be bound
    is named."""
    if not settings.metrics_port:
        return None
    try:
        server, _ = start_http_server(settings.metrics_port, addr=settings.metrics_host,
                                      registry=registry)
        return server
    except OSError as exc:
        raise OSError(
            f"metrics_host:metrics_port (SPOTSCHED_METRICS_HOST, SPOTSCHED_METRICS_PORT) = "
            f"{settings.metrics_host}:{settings.metrics_port}: cannot serve /metrics there "
            f"({exc.strerror or exc})") from None
