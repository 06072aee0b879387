"""Trace-driven simulation of jobs under one policy.

Rules, slot by slot (the README states them for users):

1. The policy sees an :class:`~solver.policy.Observation` built from a history buffer that the
   simulator fills one slot at a time, so the future is never in memory the policy can reach.
2. Spot requests in a market are granted in job priority order (earliest hard deadline, then
   id) up to the slot's availability; requested spot instances that were held in the previous
   slot and are not granted count as preemptions, the rest as refusals. On-demand is always
   granted. A job granted fewer than ``n_min`` instances runs nothing in that slot.
3. Whenever the granted configuration (market, spot, on-demand) differs from the previous
   slot's and is not empty, the job pays its restart overhead: running-but-unproductive time
   that carries over into later slots when it exceeds a slot.
4. Every slot in which instances run is billed in full: spot at the slot's mean price,
   on-demand at the market's on-demand price, including overhead time and the final partial
   slot. An instance that is lost or refused is not billed.
5. A job is active from the first slot starting at or after its release until it finishes or
   its hard deadline passes; completion time is exact within the slot.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from solver.job import Allocation, Job, JobResult
from solver.market import MarketData
from solver.policy import JobView, Observation, Policy


class PolicyError(ValueError):
    """A policy answered something the model forbids."""


@dataclass
class _JobState:
    job: Job
    remaining: float
    pending_overhead: float = 0.0
    held: Allocation | None = None
    cost: float = 0.0
    completion: float | None = None
    finished: bool = False
    preemptions: int = 0
    refusals: int = 0
    restarts: int = 0
    spot_hours: float = 0.0
    on_demand_hours: float = 0.0

    def result(self) -> JobResult:
        job = self.job
        done = self.completion is not None
        return JobResult(
            job_id=job.id,
            cost=self.cost,
            completion=self.completion,
            utility=job.value_at(self.completion) - self.cost,
            soft_deadline_met=done and self.completion <= job.soft_deadline,
            hard_deadline_met=done and self.completion <= job.hard_deadline,
            preemptions=self.preemptions,
            refusals=self.refusals,
            restarts=self.restarts,
            work_done=job.workload - max(self.remaining, 0.0),
            spot_instance_hours=self.spot_hours,
            on_demand_instance_hours=self.on_demand_hours,
        )


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


class History:
    """Market history filled one slot at a time; unfilled slots hold NaN / -1."""

    def __init__(self, n_markets: int, n_slots: int) -> None:
        self._price = np.full((n_markets, n_slots), np.nan)
        self._availability = np.full((n_markets, n_slots), -1, dtype=np.int64)
        self._filled = 0

    def append(self, price: np.ndarray, availability: np.ndarray) -> None:
        self._price[:, self._filled] = price
        self._availability[:, self._filled] = availability
        self._filled += 1

    def views(self) -> tuple[np.ndarray, np.ndarray]:
        price = self._price[:, : self._filled]
        availability = self._availability[:, : self._filled]
        price.flags.writeable = False
        availability.flags.writeable = False
        return price, availability


def validate_jobs(jobs: Sequence[Job], data: MarketData) -> None:
    """Reject jobs the market data cannot simulate, naming the job and field."""
    end = data.slot_start(data.n_slots)
    seen: set[str] = set()
    for job in jobs:
        if job.id in seen:
            raise ValueError(f"job id={job.id!r}: expected unique job ids, got a duplicate")
        seen.add(job.id)
        if job.release < data.origin:
            raise ValueError(
                f"job {job.id!r} release={job.release!r}: expected at or after the market "
                f"data's first slot start {data.origin!r}"
            )
        if job.hard_deadline > end:
            raise ValueError(
                f"job {job.id!r} hard_deadline={job.hard_deadline!r}: expected at or before "
                f"the market data's end {end!r}"
            )
        if job.allowed_markets is not None:
            unknown = [k for k in job.allowed_markets if k not in data.index]
            if unknown or not job.allowed_markets:
                raise ValueError(
                    f"job {job.id!r} allowed_markets={list(job.allowed_markets)!r}: expected "
                    f"a non-empty subset of {list(data.index)}"
                )


def simulate(
    data: MarketData,
    jobs: Sequence[Job],
    policy: Policy,
    progress: Callable[[int], None] | None = None,
) -> SimulationResult:
    """Run ``jobs`` through ``data`` under ``policy``; deterministic for deterministic policies.

    ``progress`` is called with the number of slots simulated since the last call.
    """
    validate_jobs(jobs, data)
    states = sorted(
        (_JobState(job=j, remaining=j.workload) for j in jobs),
        key=lambda s: (s.job.hard_deadline, s.job.id),
    )
    by_id = {s.job.id: s for s in states}
    n_markets, n_slots = data.price.shape
    history = History(n_markets, n_slots)
    spot_used = np.zeros((n_markets, n_slots), dtype=np.int64)
    od_used = np.zeros((n_markets, n_slots), dtype=np.int64)
    cost_per_slot = np.zeros(n_slots)
    decisions: list[tuple[int, str, Allocation]] = []
    od_price = data.on_demand_prices
    slot_h = data.slot_hours

    reported = 0
    for t in range(n_slots):
        start = data.slot_start(t)
        if all(s.finished for s in states):
            break
        active = [
            s for s in states
            if not s.finished and s.job.release <= start and start < s.job.hard_deadline
        ]
        price_hist, avail_hist = history.views()
        obs = Observation(
            slot=t,
            time=start,
            slot_seconds=data.slot_seconds,
            markets=data.markets,
            price_history=price_hist,
            availability_history=avail_hist,
            price_now=data.boundary_price[:, t].copy(),
            availability_now=data.boundary_availability[:, t].copy(),
            jobs=tuple(
                JobView(s.job, s.remaining, s.pending_overhead, s.held) for s in active
            ),
        )
        answer = policy.decide(obs) if active else {}
        active_ids = {s.job.id for s in active}
        stray = sorted(set(answer) - active_ids)
        if stray:
            raise PolicyError(
                f"policy {policy.name!r} slot {t}: allocated jobs {stray} that are not active"
            )
        capacity = data.availability[:, t].copy()
        for state in active:
            request = answer.get(state.job.id)
            if request is not None and request.total == 0:
                request = None
            if request is not None:
                _check_request(policy.name, t, state.job, request, data)
                decisions.append((t, state.job.id, request))
            granted = _grant(state, request, capacity)
            _run_slot(state, granted, start, data.slot_seconds)
            if granted is not None:
                m = granted.market
                spot_used[m, t] += granted.spot
                od_used[m, t] += granted.on_demand
                slot_cost = (
                    granted.spot * data.price[m, t] + granted.on_demand * od_price[m]
                ) * slot_h
                state.cost += slot_cost
                cost_per_slot[t] += slot_cost
                state.spot_hours += granted.spot * slot_h
                state.on_demand_hours += granted.on_demand * slot_h
            if start + data.slot_seconds >= state.job.hard_deadline and not state.finished:
                state.finished = True
        history.append(data.price[:, t], data.availability[:, t])
        if progress is not None and (t + 1 - reported >= 64 or t + 1 == n_slots):
            progress(t + 1 - reported)
            reported = t + 1
    if progress is not None and reported < n_slots:
        progress(n_slots - reported)
    return SimulationResult(
        policy=policy.name,
        jobs=tuple(by_id[j.id].result() for j in jobs),
        spot_used=spot_used,
        on_demand_used=od_used,
        cost_per_slot=cost_per_slot,
        decisions=tuple(decisions),
    )


def _check_request(policy: str, slot: int, job: Job, request: Allocation, data: MarketData) -> None:
    where = f"policy {policy!r} slot {slot} job {job.id!r}"
    if not 0 <= request.market < len(data.markets):
        raise PolicyError(f"{where}: market={request.market} is not a market index")
    if not job.may_use(data.markets[request.market].key):
        raise PolicyError(
            f"{where}: market={data.markets[request.market].key!r} is not among the job's "
            f"allowed markets {list(job.allowed_markets or ())}"
        )
    if request.spot and not job.allow_spot:
        raise PolicyError(f"{where}: spot={request.spot} but the job does not allow spot")
    if not job.n_min <= request.total <= job.n_max:
        raise PolicyError(
            f"{where}: {request.total} instances; expected 0 or between n_min={job.n_min} and "
            f"n_max={job.n_max}"
        )


def _grant(state: _JobState, request: Allocation | None, capacity: np.ndarray) -> Allocation | None:
    """Apply spot capacity to a request; count preemptions and refusals."""
    if request is None:
        return None
    m = request.market
    spot = min(request.spot, int(capacity[m]))
    missing = request.spot - spot
    if missing:
        held = state.held.spot if state.held is not None and state.held.market == m else 0
        lost = max(0, min(request.spot, held) - spot)
        state.preemptions += lost
        state.refusals += missing - lost
    granted = Allocation(m, spot, request.on_demand)
    if granted.total < state.job.n_min:
        return None
    capacity[m] -= spot
    return granted


def _run_slot(state: _JobState, granted: Allocation | None, start: float, slot_s: float) -> None:
    """Advance one job by one slot with its granted allocation."""
    if granted != state.held and granted is not None:
        state.restarts += 1
        state.pending_overhead = state.job.restart_overhead
    state.held = granted
    if granted is None:
        state.pending_overhead = 0.0
        return
    overhead = min(state.pending_overhead, slot_s)
    state.pending_overhead -= overhead
    rate = state.job.throughput(granted.total) / 3600.0  # work per second
    productive = slot_s - overhead
    if rate * productive >= state.remaining:
        state.completion = start + overhead + state.remaining / rate
        state.remaining = 0.0
        state.finished = True
        state.held = None
    else:
        state.remaining -= rate * productive
