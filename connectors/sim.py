"""The simulated-cloud connector: a :class:`~connectors.simcloud.SimulatedCloud` fed by the
decisions topic, with its jobs and a journal that makes it survive restarts.

Every applied decision is journalled with what it produced, in the same order, before the
runtime records it. At start-up the journal is replayed into a fresh cloud, so the cloud's
state is exactly what it was; a decision applied again (after a crash before its key was
recorded) returns the journalled outcome, so its observations are published again unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from connectors.base import Applied, Feedback, PermanentError, TransientError
from connectors.simcloud import SimulatedCloud
from connectors.store import Journal
from solver.job import Job
from solver.market import MarketTicks, build_market_data
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from streams.contract import ProvisioningDecision, dump_event, parse_event


class JobSource(Protocol):
    async def job(self, job_id: str) -> Job:
        """The job with this id, or a Transient- or PermanentError."""
        ...

    async def close(self) -> None: ...


class KnownJobs:
    """A workload given up front."""

    def __init__(self, jobs: Iterable[Job]) -> None:
        self._jobs = {job.id: job for job in jobs}

    async def job(self, job_id: str) -> Job:
        try:
            return self._jobs[job_id]
        except KeyError:
            raise PermanentError(f"job_id={job_id!r}: expected a job of the workload") from None

    async def close(self) -> None:
        return None


class SimConnector:
    """Applies decisions to a simulated cloud; reports progress, completions and lost spot."""

    name = "sim"

    def __init__(self, cloud: SimulatedCloud, jobs: JobSource,
                 journal: Journal | None = None) -> None:
        self.cloud = cloud
        self.jobs = jobs
        self.journal = journal
        self._restored = journal is None

    async def apply(self, decision: ProvisioningDecision) -> Applied:
        if not self._restored and self.journal is not None:
            await self._restore(self.journal)
        key = decision.idempotency_key
        if self.journal is not None and (entry := self.journal.get(key)) is not None:
            return _applied_from(entry["applied"])
        self.cloud.check_market(decision)  # before the job: it may not fit the market either
        await self._admit(decision.job_id)
        applied = self.cloud.apply(decision)
        if self.journal is not None:
            self.journal.append(key, {"decision": dump_event(decision).decode(),
                                      "applied": _applied_to(applied)})
        return applied

    async def _admit(self, job_id: str) -> None:
        if not self.cloud.knows(job_id):
            self.cloud.add_job(await self.jobs.job(job_id))

    async def _restore(self, journal: Journal) -> None:
        """Replay the journal into the cloud; a failure half-way stops the worker."""
        for entry in journal.entries():
            decision = ProvisioningDecision.model_validate_json(entry["decision"])
            try:
                await self._admit(decision.job_id)
                self.cloud.apply(decision)
            except (TransientError, PermanentError) as exc:
                raise RuntimeError(
                    f"restoring the simulated cloud from {journal.path}: decision "
                    f"{decision.idempotency_key}: {exc}") from exc
        self._restored = True

    async def close(self) -> None:
        await self.jobs.close()
        if self.journal is not None:
            self.journal.close()


def synthetic_cloud(spec: SyntheticMarketSpec, slot_seconds: float,
                    report_availability: bool = True) -> SimulatedCloud:
    """A simulated cloud over the seeded synthetic market."""
    return SimulatedCloud(build_market_data(synthetic_ticks(spec), slot_seconds),
                          report_availability)


def market_cloud(ticks: Sequence[MarketTicks], slot_seconds: float,
                 report_availability: bool = True) -> SimulatedCloud:
    """A simulated cloud over the markets of ``ticks`` (e.g. loaded from trace files)."""
    return SimulatedCloud(build_market_data(ticks, slot_seconds), report_availability)


def _applied_to(applied: Applied) -> dict:
    return {"launched": applied.launched, "terminated": applied.terminated,
            "refused": applied.refused, "preempted": applied.preempted,
            "details": list(applied.details),
            "events": [dump_event(e).decode() for e in applied.events]}


def _applied_from(entry: dict) -> Applied:
    return Applied(launched=entry["launched"], terminated=entry["terminated"],
                   refused=entry["refused"], preempted=entry["preempted"],
                   details=tuple(entry["details"]),
                   events=tuple(_feedback(e) for e in entry["events"]))


def _feedback(raw: str) -> Feedback:
    event = parse_event(raw)
    if not isinstance(event, Feedback):
        raise ValueError(f"journal event type={event.type!r}: expected feedback "
                         "(availability_tick, job_progress or job_finished)")
    return event

