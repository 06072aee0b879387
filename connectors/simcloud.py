"""A simulated cloud: jobs run what the decisions ask for, by the rules of the engine.

The cloud holds one :class:`solver.engine.Engine` over the market data and answers the engine's
policy calls with the decisions it was given, so capacity, preemptions, refusals, restart
overheads, throughput and billing follow exactly the rules of :mod:`solver.simulator`.

A decision for slot ``t`` means slot ``t - 1`` (and any earlier open slot) has closed: the
cloud settles it with the slot's realised price and availability and reports what happened —
a :class:`JobProgress` (cumulative work done and the work left) or a :class:`JobFinished` for
every job that ran, and an :class:`AvailabilityTick` (``preempted`` or ``refused``, stamped at
the slot's start, with the slot's spot capacity) for every market where spot was not granted.
A job's desired state lasts until its next decision, as instances on a real cloud do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from connectors.base import Applied, FatalError, Feedback, PermanentError
from connectors.holding import Holding, changes
from solver.engine import Engine
from solver.job import Allocation, Allocations, Job, JobResult
from solver.market import MarketData
from solver.observation import Observation
from streams.contract import AvailabilityTick, JobFinished, JobProgress, ProvisioningDecision, utc

OTHER_MARKET = ("the decisions come from other markets than the simulated cloud's: run "
                "`spotsched connector sim --trace FILE` with the trace the replay used")
"""Why a decision outside the simulated market stops the connector (a ``FatalError``, nothing
committed) instead of being dead-lettered: every decision after it would be too."""


class _Requested:
    """The engine's policy: the latest decision of every job, for the jobs that are active."""

    name = "decisions"

    def __init__(self) -> None:
        self.by_job: dict[str, Allocation] = {}

    def decide(self, obs: Observation) -> Allocations:
        return {view.id: self.by_job[view.id] for view in obs.jobs if view.id in self.by_job}


class SimulatedCloud:
    """Market data, the jobs it has been told of, and their desired allocations."""

    def __init__(self, data: MarketData, report_availability: bool = True) -> None:
        self.data = data
        self.report_availability = report_availability
        self._requested = _Requested()
        self.engine = Engine(data.markets, data.origin, data.slot_seconds, self._requested,
                             data.n_slots)
        self._jobs: dict[str, Job] = {}
        self._holdings: dict[str, Holding] = {}

    def knows(self, job_id: str) -> bool:
        return job_id in self._jobs

    def add_job(self, job: Job) -> None:
        """Admit a job (again: ignored when identical)."""
        known = self._jobs.get(job.id)
        if known is not None:
            if known != job:
                raise PermanentError(
                    f"job_id={job.id!r}: submitted again with other fields; expected a new id")
            return
        self.engine.add_job(job)
        self._jobs[job.id] = job

    def results(self) -> list[JobResult]:
        """Outcomes of the jobs so far, as :func:`solver.simulator.simulate` reports them."""
        return self.engine.results()

    def apply(self, decision: ProvisioningDecision) -> Applied:
        """Settle the slots before the decision's, then hold what it asks for."""
        job = self._jobs.get(decision.job_id)
        if job is None:
            raise PermanentError(f"job_id={decision.job_id!r}: expected a job the cloud knows")
        slot = self._slot(decision)
        request = self._request(job, decision)
        settled = [self._settle() for _ in range(self.engine.slot, slot)]
        if slot < self.engine.slot:
            now = utc(self.engine.slot_start).isoformat()
            raise PermanentError(
                f"epoch={decision.epoch} slot_start={decision.slot_start.isoformat()}: expected "
                f"a slot not yet settled (the cloud is at {now})"
            )
        state = self.engine.job_state(job.id)
        if decision.release_cause == "cancelled":
            self.engine.cancel_job(job.id)
        events: list[Feedback] = [e for step in settled for e in step.events]
        if request is None:
            self._requested.by_job.pop(job.id, None)
        elif state.finished:
            request = None
            if state.completion is not None:  # the scheduler has not heard yet
                events.append(JobFinished(event_time=utc(state.completion), job_id=job.id))
        else:
            self._requested.by_job[job.id] = request
        want = None if request is None else Holding.of(decision)
        launched, terminated = changes(self._holdings.pop(job.id, None), want)
        if want is not None:
            self._holdings[job.id] = want
        return Applied(
            launched=launched,
            terminated=terminated,
            refused=sum(step.refused for step in settled),
            preempted=sum(step.preempted for step in settled),
            details=tuple(d for step in settled for d in step.details),
            events=tuple(events),
        )

    def check_market(self, decision: ProvisioningDecision) -> None:
        """A :class:`FatalError` when the decision is not about the simulated market: another
        slot length, a time outside it, or a market it does not have."""
        data = self.data
        if not math.isclose(decision.slot_seconds, data.slot_seconds):
            raise FatalError(
                f"slot_seconds={decision.slot_seconds:g}: expected {data.slot_seconds:g}, the "
                f"simulated market's slot length; {OTHER_MARKET}"
            )
        start = decision.slot_start.timestamp()
        if not data.origin - 1e-3 <= start <= data.slot_start(data.n_slots) + 1e-3:
            raise FatalError(
                f"slot_start={decision.slot_start.isoformat()}: expected a time from "
                f"{utc(data.origin).isoformat()} to "
                f"{utc(data.slot_start(data.n_slots)).isoformat()}, the simulated market's; "
                f"{OTHER_MARKET}"
            )
        if decision.spot + decision.on_demand and decision.market not in data.index:
            raise FatalError(
                f"job {decision.job_id!r} epoch={decision.epoch} market={decision.market!r}: "
                f"expected a market of the simulated cloud ({', '.join(data.index)}); "
                f"{OTHER_MARKET}"
            )

    def _slot(self, decision: ProvisioningDecision) -> int:
        data = self.data
        self.check_market(decision)
        start = decision.slot_start.timestamp()
        slot = round((start - data.origin) / data.slot_seconds)
        last = data.n_slots if decision.spot + decision.on_demand == 0 else data.n_slots - 1
        if not (0 <= slot <= last and abs(data.slot_start(slot) - start) < 1e-3):
            raise PermanentError(
                f"slot_start={decision.slot_start.isoformat()}: expected a slot boundary from "
                f"{utc(data.origin).isoformat()} to {utc(data.slot_start(last)).isoformat()} "
                "(the simulated market's end closes the last slot; nothing runs after it)"
            )
        return slot

    def _request(self, job: Job, decision: ProvisioningDecision) -> Allocation | None:
        """The engine's allocation for the decision, checked against the job's rules."""
        total = decision.spot + decision.on_demand
        if total == 0:
            return None
        where = f"job {job.id!r} epoch={decision.epoch}"
        market = self.data.index[decision.market]  # checked by check_market
        if not job.may_use(decision.market):
            raise PermanentError(
                f"{where} market={decision.market!r}: expected one of the job's allowed "
                f"markets {list(job.allowed_markets or ())}"
            )
        if decision.spot and not job.allow_spot:
            raise PermanentError(f"{where} spot={decision.spot}: expected 0, the job allows "
                                 "no spot")
        if not job.n_min <= total <= job.n_max:
            raise PermanentError(
                f"{where}: {total} instances; expected 0 or n_min={job.n_min}..n_max={job.n_max}")
        return Allocation(market, decision.spot, decision.on_demand)

    def _settle(self) -> _Settled:
        """Close the open slot with its realised values; report what happened in it."""
        engine, data, t = self.engine, self.data, self.engine.slot
        requested = dict(self._requested.by_job)
        before = {job_id: (engine.job_state(job_id).preemptions,
                           engine.job_state(job_id).refusals) for job_id in requested}
        engine.decide(data.boundary_price[:, t], data.boundary_availability[:, t])
        usage = engine.settle(data.price[:, t], data.availability[:, t])
        events: list[Feedback] = []
        for used in usage:
            state = engine.job_state(used.job_id)
            if state.completion is not None:
                events.append(JobFinished(event_time=utc(state.completion), job_id=used.job_id))
            else:
                events.append(JobProgress(
                    event_time=utc(data.slot_start(t + 1)), job_id=used.job_id,
                    work_done=float(state.job.workload - state.remaining),
                    remaining_work=float(state.remaining)))
        lost: dict[int, str] = {}
        settled = _Settled(events=events)
        for job_id, request in requested.items():
            state = engine.job_state(job_id)
            preempted = state.preemptions - before[job_id][0]
            refused = state.refusals - before[job_id][1]
            if preempted or refused:
                market = data.markets[request.market].key
                settled.preempted += preempted
                settled.refused += refused
                settled.details.append(f"slot {utc(data.slot_start(t)).isoformat()}: job "
                                       f"{job_id} lost {preempted} and was refused {refused} "
                                       f"spot in {market}")
                if preempted or lost.get(request.market) != "preempted":
                    lost[request.market] = "preempted" if preempted else "refused"
            if state.finished:
                self._requested.by_job.pop(job_id, None)
        if self.report_availability:
            events.extend(
                AvailabilityTick(event_time=utc(data.slot_start(t)),
                                 market=data.markets[m].key,
                                 available=int(data.availability[m, t]), reason=reason)
                for m, reason in sorted(lost.items()))
        return settled


@dataclass
class _Settled:
    """What settling one slot produced."""

    events: list[Feedback]
    preempted: int = 0
    refused: int = 0
    details: list[str] = field(default_factory=list)
