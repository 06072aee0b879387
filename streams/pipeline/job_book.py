"""What the service knows of each job, folded from its topics: the job events, the epoch
markers, the decisions and the dead letters. ``spotsched jobs`` and ``submit`` read it.

A job's state comes from its newest decision (``run``: running, ``idle``: waiting, ``release``:
finished, missed, cancelled or failed); a job without a decision is pending, or rejected when
its submission was dead-lettered. Work done is the last progress the job reported plus what
its instances would do in each slot closed since (``planned``), the projected finish what its
current instances need for the rest of the work. Each deadline is ``met`` or ``missed`` once
the job has finished or passed it, ``on track`` or ``at risk`` while it runs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from solver.job import Job
from solver.market import SECONDS_PER_HOUR
from streams.contract import (
    DeadLetter,
    Envelope,
    EpochClosed,
    JobCancelled,
    JobFinished,
    JobProgress,
    JobSubmitted,
    ProvisioningDecision,
    iso,
)
from streams.pipeline.job_states import ACTIVE_STATES, RELEASED, STATES, Deadline

JOB_TYPES = ("job_submitted", "job_progress", "job_cancelled", "job_finished")
BOOK_TYPES = (*JOB_TYPES, "epoch_closed", "provisioning_decision", "dead_letter")
"""The event types a book reads."""


@dataclass
class JobView:
    """One job as the service sees it."""

    job_id: str
    submitted: JobSubmitted | None = None
    decisions: dict[int, ProvisioningDecision] = field(default_factory=dict)
    """The newest revision of the decision of each epoch."""
    rejection: DeadLetter | None = None
    cancel_requested: bool = False
    progress: JobProgress | None = None
    finish_reported: JobFinished | None = None
    history: list[Envelope] = field(default_factory=list)

    @property
    def last(self) -> ProvisioningDecision | None:
        return self.decisions[max(self.decisions)] if self.decisions else None

    @property
    def state(self) -> str:
        """pending, waiting, running, cancelling, finished, missed, cancelled, failed or
        rejected."""
        last = self.last
        if last is None:
            return "rejected" if self.rejection is not None else "pending"
        if last.action == "release":
            return RELEASED[last.release_cause or "failed"]
        if self.cancel_requested:
            return "cancelling"
        return "running" if last.action == "run" else "waiting"

    @property
    def detail(self) -> str:
        """Where it runs, or why it was rejected or failed."""
        last = self.last
        if self.state == "rejected" and self.rejection is not None:
            return self.rejection.reason
        if last is None:
            return ""
        if last.action == "run":
            return f"{last.market}: {last.spot} spot + {last.on_demand} on-demand"
        return last.reason if last.release_cause == "failed" else ""

    @property
    def cost_usd(self) -> float:
        """Expected cost of the slots decided so far, USD."""
        return sum(d.expected_cost_usd for d in self.decisions.values())

    def work_done(self, now: datetime | None) -> tuple[float, str]:
        """Work units done by ``now`` and how they are known: ``reported`` (the last progress
        event), ``planned`` (the instances of each closed slot), or both."""
        job = self.submitted
        if job is not None and self.state == "finished":
            return job.workload, "finished"
        reported = self.progress.work_done if self.progress is not None else 0.0
        since = self.progress.event_time if self.progress is not None else None
        planned = 0.0
        if job is not None and now is not None:
            for d in self.decisions.values():
                end = d.slot_start + timedelta(seconds=d.slot_seconds)
                if d.action == "run" and end <= now and (since is None or d.slot_start >= since):
                    planned += _throughput(job, d.spot + d.on_demand) * (
                        d.slot_seconds / SECONDS_PER_HOUR)
        source = "+".join(s for s, w in (("reported", self.progress), ("planned", planned))
                          if w) or "none"
        total = reported + planned
        return (min(total, job.workload) if job is not None else total), source

    def remaining(self, now: datetime | None) -> float | None:
        job = self.submitted
        if job is None:
            return None
        if self.progress is not None and self.progress.remaining_work is not None:
            return self.progress.remaining_work
        return max(job.workload - self.work_done(now)[0], 0.0)

    def projected_finish(self, now: datetime | None) -> datetime | None:
        """When the current instances finish the rest from the current slot's start; when a
        finished job was released; ``None`` for the other states."""
        last, job, left = self.last, self.submitted, self.remaining(now)
        if self.state == "finished" and last is not None:
            return last.slot_start
        if self.state != "running" or last is None or job is None or left is None:
            return None
        rate = _throughput(job, last.spot + last.on_demand)
        if rate <= 0:
            return None
        return last.slot_start + timedelta(hours=left / rate)

    @property
    def active(self) -> bool:
        """Whether the service still schedules the job."""
        return self.state in ACTIVE_STATES

    @property
    def running_now(self) -> ProvisioningDecision | None:
        """The newest decision when it runs the job: its market and instances."""
        last = self.last
        return last if last is not None and last.action == "run" else None

    def _runs(self) -> list[ProvisioningDecision]:
        return [self.decisions[e] for e in sorted(self.decisions)
                if self.decisions[e].action == "run"]

    @property
    def started(self) -> datetime | None:
        """The start of the first slot the job ran in."""
        runs = self._runs()
        return runs[0].slot_start if runs else None

    @property
    def ended(self) -> datetime | None:
        """The boundary at which the service released the job."""
        last = self.last
        return last.slot_start if last is not None and last.action == "release" else None

    @property
    def restarts(self) -> int:
        """Launches after the first: a run whose market or instances differ from the slot
        before's, or that follows a slot without instances."""
        launches = 0
        for epoch, d in self.decisions.items():
            before = self.decisions.get(epoch - 1)
            held = (before is not None and before.action == "run"
                    and (before.market, before.spot, before.on_demand)
                    == (d.market, d.spot, d.on_demand))
            launches += d.action == "run" and not held
        return max(launches - 1, 0)

    def completion(self) -> datetime | None:
        """When a finished job's work was done: as reported, else when its instances had done
        the workload, at most its release."""
        job, ended = self.submitted, self.ended
        if self.state != "finished" or ended is None:
            return None
        if self.finish_reported is not None:
            return min(self.finish_reported.event_time, ended)
        if job is None:
            return ended
        left = job.workload - (self.progress.work_done if self.progress is not None else 0.0)
        since = self.progress.event_time if self.progress is not None else None
        for d in self._runs():
            if since is not None and d.slot_start < since:
                continue
            rate = _throughput(job, d.spot + d.on_demand)
            hours = d.slot_seconds / SECONDS_PER_HOUR
            if rate > 0 and rate * hours >= left:
                return min(d.slot_start + timedelta(hours=left / rate), ended)
            left -= rate * hours
        return ended

    def finish(self, now: datetime | None) -> datetime | None:
        """The completion of a finished job, the projected finish of a running one."""
        return self.completion() if self.state == "finished" else self.projected_finish(now)

    def standing(self, which: Deadline, now: datetime | None) -> str | None:
        """``met``, ``missed``, ``on track`` or ``at risk`` for the ``soft`` or ``hard``
        deadline; ``None`` when nothing can be said (a job cancelled, failed or rejected, or not
        yet planned). A waiting job's hard deadline is at risk when its last decision left it
        no slack."""
        job = self.submitted
        if job is None:
            return None
        deadline = job.soft_deadline if which == "soft" else job.hard_deadline
        finish = self.finish(now)
        if self.state == "finished":
            return "met" if finish is not None and finish <= deadline else "missed"
        if self.state == "missed" or (self.active and now is not None and now > deadline):
            return "missed"
        if not self.active:
            return None
        if finish is not None:
            return "on track" if finish <= deadline else "at risk"
        last = self.last
        if which == "hard" and last is not None:
            return "at risk" if last.slack_seconds < 0 else "on track"
        return None

    def utility_usd(self, now: datetime | None) -> float | None:
        """The job's value at its finish (projected while it runs) minus its cost; ``None``
        before a finish can be told."""
        job = self.submitted
        if job is None or self.state in ("pending", "rejected"):
            return None
        if self.state == "cancelled":
            return -self.cost_usd
        finish = self.finish(now)
        if finish is None and self.state not in ("missed", "failed"):
            return None
        value = Job(**job.job_fields()).value_at(
            finish.timestamp() if finish is not None else None)
        return value - self.cost_usd

    def run_seconds(self, now: datetime | None) -> float | None:
        """From the first slot run to the release, or to ``now`` while the job is active."""
        start, end = self.started, self.ended or now
        return None if start is None or end is None else max((end - start).total_seconds(), 0.0)

    def as_dict(self, now: datetime | None) -> dict[str, Any]:
        """The job as JSON-ready values."""
        job, running = self.submitted, self.running_now
        done, source = self.work_done(now)
        utility = self.utility_usd(now)

        def when(time: datetime | None) -> str | None:
            return iso(time) if time is not None else None

        return {
            "job_id": self.job_id, "state": self.state, "active": self.active,
            "detail": self.detail,
            "market": running.market if running is not None else None,
            "spot": running.spot if running is not None else 0,
            "on_demand": running.on_demand if running is not None else 0,
            "restarts": self.restarts,
            "first_epoch": min(self.decisions) if self.decisions else None,
            "last_epoch": max(self.decisions) if self.decisions else None,
            "first_slot_start": when(self.decisions[min(self.decisions)].slot_start
                                     if self.decisions else None),
            "last_slot_start": when(self.last.slot_start if self.last else None),
            "cost_usd": round(self.cost_usd, 6),
            "utility_usd": round(utility, 6) if utility is not None else None,
            "work_done": round(done, 6), "work_done_from": source,
            "workload": job.workload if job is not None else None,
            "started": when(self.started), "ended": when(self.ended),
            "run_seconds": self.run_seconds(now),
            "completion": when(self.completion()),
            "projected_finish": when(self.projected_finish(now)),
            "soft_deadline": when(job.soft_deadline if job else None),
            "soft_deadline_standing": self.standing("soft", now),
            "hard_deadline": when(job.hard_deadline if job else None),
            "hard_deadline_standing": self.standing("hard", now),
            "release": when(job.release if job else None),
        }


def _throughput(job: JobSubmitted, n: int) -> float:
    return job.alpha * n + job.beta if n > 0 else 0.0


class JobBook:
    """Every job seen on the service's topics, in the order they were first seen."""

    def __init__(self, job_events_topic: str) -> None:
        self.job_events_topic = job_events_topic
        self.jobs: dict[str, JobView] = {}
        self.last_epoch: EpochClosed | None = None

    @property
    def now(self) -> datetime | None:
        """The service's event time: the boundary of the last epoch closed."""
        return self.last_epoch.event_time if self.last_epoch is not None else None

    def select(self, states: Sequence[str] = (), every: bool = False) -> list[JobView]:
        """The jobs in one of ``states``; without states every job when ``every``, else the
        active ones."""
        wanted = set(states) or (set(STATES) if every else set(ACTIVE_STATES))
        return [v for v in self.jobs.values() if v.state in wanted]

    def add(self, event: Envelope) -> JobView | None:
        """Fold one event in; the job it changed, if any."""
        if isinstance(event, EpochClosed):
            if self.last_epoch is None or event.epoch > self.last_epoch.epoch:
                self.last_epoch = event
            return None
        if isinstance(event, DeadLetter):
            return self._dead_letter(event)
        job_id = getattr(event, "job_id", None)
        if job_id is None:
            return None
        view = self.jobs.setdefault(job_id, JobView(job_id))
        view.history.append(event)
        if isinstance(event, JobSubmitted):
            view.submitted = view.submitted or event
        elif isinstance(event, JobCancelled):
            view.cancel_requested = True
        elif isinstance(event, JobFinished):
            view.finish_reported = view.finish_reported or event
        elif isinstance(event, JobProgress):
            if view.progress is None or event.event_time >= view.progress.event_time:
                view.progress = event
        elif isinstance(event, ProvisioningDecision):
            known = view.decisions.get(event.epoch)
            if known is None or event.revision >= known.revision:
                view.decisions[event.epoch] = event
        return view

    def _dead_letter(self, letter: DeadLetter) -> JobView | None:
        """A dead-lettered job event: the job's rejection when it was the submission."""
        if letter.source_topic != self.job_events_topic:
            return None
        key = letter.original_key()
        job_id = key.decode("utf-8", "replace") if key is not None else None
        kind = original_type(letter)
        if not job_id or kind not in JOB_TYPES:
            return None
        if kind != "job_submitted" and job_id not in self.jobs:
            return None  # an event for no job: not a job of the service
        view = self.jobs.setdefault(job_id, JobView(job_id))
        view.history.append(letter)
        if kind == "job_submitted":
            view.rejection = letter
        return view


def original_type(letter: DeadLetter) -> str | None:
    """The ``type`` of a dead letter's original message, when it is a JSON object with one."""
    try:
        data = json.loads(letter.original() or b"")
    except ValueError:
        return None
    kind = data.get("type") if isinstance(data, dict) else None
    return kind if isinstance(kind, str) else None
