"""The scheduler of one job-events partition: its jobs' events and the epochs drive an engine.

Job events take effect by event time, whatever their arrival order relative to the epoch
markers: an event takes effect at the first epoch boundary at or after its event time. Events
stamped after the engine's current boundary wait for that epoch; at each epoch the slot just
closed is settled, the events due are applied in event-time order, and the engine decides. An
event that arrives after its epoch was decided (its producer lagged behind the markets) takes
effect at once, as close to its time as the engine still can. A job whose hard deadline is at
or before the first boundary at or after its submission's event time is rejected.

The engine plans each epoch on the forecasts the market stage made at its boundary, which
arrive just before the epoch marker (:mod:`streams.pipeline.outlooks`).

A job the policy cannot decide, or whose decision cannot be built, is failed: a final ``release``
decision with cause ``failed`` and the reason, and its submission is dead-lettered with the
reason. The other jobs of the epoch are decided as if it had not been there.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence

import numpy as np

from solver.decision import Departure, SlotDecision
from solver.engine import Engine
from solver.job import Job
from solver.market import Market
from solver.policies.protocol import Policy
from streams.contract import (
    Envelope,
    EpochClosed,
    JobCancelled,
    JobEvent,
    JobFinished,
    JobProgress,
    JobSubmitted,
    PublishedForecast,
    parse_event,
    utc,
)
from streams.pipeline.decision_encoder import DecidedSlot, release, run_or_idle
from streams.pipeline.outlooks import PendingForecasts
from streams.pipeline.stage import (
    Fault,
    Message,
    RejectedEvent,
    StageOutput,
    epoch_index,
    first_boundary,
    rejection,
)
from streams.pipeline.written import Written

MAX_WAITING_EVENTS = 100_000
"""Job events a partition keeps waiting for their epoch; beyond, they are rejected."""


class JobFailed(RuntimeError):
    """A job the scheduler gave up on; the message says why."""


class PartitionScheduler:
    """One job-events partition: its jobs, the epochs, and the engine they drive."""

    name = "scheduler"
    accepts = (JobSubmitted, JobProgress, JobCancelled, JobFinished, PublishedForecast,
               EpochClosed)

    def __init__(
        self,
        catalogue: Sequence[Market],
        slot_seconds: float,
        policy_factory: Callable[[], Policy],
        written: Written | None = None,
    ) -> None:
        self.catalogue = tuple(catalogue)
        self.keys = {m.key for m in self.catalogue}
        self.slot_seconds = slot_seconds
        self.policy_factory = policy_factory
        self.engine: Engine | None = None
        self.last_epoch: int | None = None
        self._known: dict[str, JobSubmitted] = {}
        self._submissions: dict[str, Message | None] = {}
        self._waiting: list[tuple[float, int, JobEvent, Message | None]] = []
        self._arrivals = 0
        self._forecasts = PendingForecasts([m.key for m in self.catalogue], slot_seconds)
        self.written = Written() if written is None else written
        """What the stages of the runner wrote (a fresh one: the stage alone)."""

    def decode(self, raw: bytes) -> Envelope:
        """The event of ``raw``; what a stage of the same runner wrote is not decoded again
        (:mod:`streams.pipeline.written`)."""
        written = self.written.events.get(raw)
        return parse_event(raw) if written is None else written

    def handle(self, event: JobEvent | PublishedForecast | EpochClosed,
               message: Message | None = None) -> list[StageOutput]:
        if isinstance(event, EpochClosed):
            return self._epoch(event)
        if isinstance(event, PublishedForecast):
            self._forecasts.add(event, None if self.engine is None else self.engine.slot_start)
            return []
        self._check(event)
        if isinstance(event, JobSubmitted) and event.job_id in self._known:
            return []  # a re-delivery
        time = event.event_time.timestamp()
        waits = self.engine is None or time > self.engine.slot_start
        if not waits:
            self._check_late(event)
        elif len(self._waiting) >= MAX_WAITING_EVENTS:
            raise RejectedEvent(
                f"{event.type} at {event.event_time.isoformat()}: {MAX_WAITING_EVENTS:,} job "
                "events already wait for their epoch; expected epochs to keep up")
        if waits:
            self._arrivals += 1
            heapq.heappush(self._waiting, (time, self._arrivals, event, message))
        else:
            self._apply(event)
        if isinstance(event, JobSubmitted):
            self._known[event.job_id] = event
            self._submissions[event.job_id] = message
        return []

    def _check(self, event: JobEvent) -> None:
        """Reject what can never take effect; decided by the event and the partition's log
        alone, never by how far the epochs have come."""
        submitted = self._known.get(event.job_id)
        if isinstance(event, JobSubmitted):
            if submitted is not None and submitted.job_fields() != event.job_fields():
                raise RejectedEvent(
                    f"job_id={event.job_id!r}: already submitted with other fields; expected "
                    "a new job id")
            unknown = sorted(set(event.allowed_markets or ()) - self.keys)
            if unknown:
                raise RejectedEvent(f"allowed_markets={unknown}: expected markets of the catalogue")
            try:
                Job(**event.job_fields()).resolved(sorted(self.keys))
            except ValueError as exc:
                raise RejectedEvent(str(exc)) from exc
            start = first_boundary(event.event_time.timestamp(), self.slot_seconds)
            if event.hard_deadline.timestamp() <= start:
                raise RejectedEvent(
                    f"hard_deadline={event.hard_deadline.isoformat()}: expected a time after "
                    f"{utc(start).isoformat()}, the first epoch at or after the submission (a "
                    "job due at or before it has no slot to run in)")
        elif submitted is None:
            raise RejectedEvent(f"job_id={event.job_id!r}: expected a submitted job")
        elif event.event_time < submitted.event_time:
            raise RejectedEvent(
                f"event_time={event.event_time.isoformat()}: expected a time at or after the "
                f"job's submission ({submitted.event_time.isoformat()})")

    def _check_late(self, event: JobEvent) -> None:
        """An event whose epoch was decided before it arrived: reject a job it is too late
        to start."""
        engine = self.engine
        if isinstance(event, JobSubmitted) and engine is not None:
            next_start = engine.slot_start + self.slot_seconds
            if event.hard_deadline.timestamp() <= next_start:
                raise RejectedEvent(
                    f"hard_deadline={event.hard_deadline.isoformat()}: expected a time after "
                    f"{utc(next_start).isoformat()}, the next epoch to decide (a job due at or "
                    "before it has no slot left); the submission arrived after its epoch "
                    f"{utc(engine.slot_start).isoformat()} was decided")

    def _apply(self, event: JobEvent) -> None:
        engine = self.engine
        assert engine is not None
        try:
            if isinstance(event, JobSubmitted):
                if event.hard_deadline.timestamp() <= engine.slot_start:
                    raise RejectedEvent(
                        f"hard_deadline={event.hard_deadline.isoformat()}: expected a time "
                        f"after {utc(engine.slot_start).isoformat()}, the first epoch (a job "
                        "due at or before it has no slot to run in)")
                engine.add_job(Job(**event.job_fields()))
            elif isinstance(event, JobCancelled):
                engine.cancel_job(event.job_id)
            elif isinstance(event, JobFinished):
                engine.finish_job(event.job_id, event.event_time.timestamp())
            elif first_boundary(event.event_time.timestamp(),
                                self.slot_seconds) >= engine.slot_start:
                engine.report_progress(event.job_id, event.work_done, event.remaining_work)
            # else: a report for an earlier boundary, superseded by the engine's own progress
        except ValueError as exc:
            raise RejectedEvent(str(exc)) from exc

    def _due(self, boundary: float) -> list[StageOutput]:
        """Apply the waiting events that take effect at ``boundary``, in event-time order."""
        out: list[StageOutput] = []
        while self._waiting and self._waiting[0][0] <= boundary:
            _, _, event, message = heapq.heappop(self._waiting)
            try:
                self._apply(event)
            except Exception as exc:
                out += rejection(message, exc)
                if isinstance(event, JobSubmitted):  # never admitted: may come again
                    del self._known[event.job_id], self._submissions[event.job_id]
        return out

    def _epoch(self, event: EpochClosed) -> list[StageOutput]:
        if tuple(m.key for m in self.catalogue) != event.markets:
            raise RejectedEvent(
                f"markets={list(event.markets)}: expected the catalogue "
                f"{[m.key for m in self.catalogue]}"
            )
        boundary = event.event_time.timestamp()
        if (not math.isclose(event.slot_seconds, self.slot_seconds)
                or event.epoch != epoch_index(boundary, self.slot_seconds)):
            raise RejectedEvent(
                f"epoch={event.epoch} slot_seconds={event.slot_seconds:g}: expected the epoch "
                f"of {event.event_time.isoformat()} in slots of {self.slot_seconds:g} s")
        if self.last_epoch is not None and event.epoch <= self.last_epoch:
            return []  # a re-delivery
        engine = self.engine
        if engine is None:
            engine = self.engine = Engine(self.catalogue, boundary, self.slot_seconds,
                                          self.policy_factory(), isolate_failures=True)
        else:
            if event.price is None or event.availability is None:
                raise RejectedEvent(f"epoch={event.epoch}: expected the closed slot's values")
            if not math.isclose(engine.slot_start + self.slot_seconds, boundary):
                raise RejectedEvent(
                    f"epoch={event.epoch}: expected the epoch after {self.last_epoch}"
                )
            engine.settle(np.array(event.price), np.array(event.availability))
        self.last_epoch = event.epoch
        out = self._due(boundary)
        decided = engine.decide(np.array(event.price_now), np.array(event.availability_now),
                                self._forecasts.take(boundary, engine.own_outlooks,
                                                     self.written.outlooks))
        faults = [Fault(self.name, error) for error in decided.policy_errors]
        return [*out, *faults, *self._decisions(engine, decided, event), decided]

    def _decisions(self, engine: Engine, decided: SlotDecision,
                   event: EpochClosed) -> list[StageOutput]:
        """The epoch's decisions: a release for each job that left, then a run or idle for
        each job decided; a job whose decision cannot be built is failed instead."""
        slot = DecidedSlot(event.epoch, event.event_time, self.slot_seconds, engine.policy.name,
                           tuple(m.key for m in self.catalogue))
        out: list[StageOutput] = []
        for job_id, departure in decided.departures.items():
            out += self._released(slot, job_id, departure)
        for job_id, allocation in decided.allocations.items():
            try:
                out.append(run_or_idle(slot, decided, job_id))
            except Exception as exc:
                reason = f"its decision could not be built: {type(exc).__name__}: {exc}"
                engine.fail_job(job_id, reason)
                out += self._released(slot, job_id,
                                      Departure(allocation.market, "failed", reason))
        return out

    def _released(self, slot: DecidedSlot, job_id: str,
                  departure: Departure) -> list[StageOutput]:
        """A departed job's release, and the rejection of a failed job's submission."""
        out: list[StageOutput] = [release(slot, job_id, departure)]
        if departure.outcome == "failed":
            out += rejection(self._submissions.get(job_id), JobFailed(
                f"job {job_id!r} failed at epoch {slot.epoch}: {departure.reason}"))
        return out
