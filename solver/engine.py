"""The scheduling engine: job state advanced one slot at a time.

The in-process simulator and the streaming scheduler both drive this one engine, so the same
market slots and job events give the same decisions wherever they run. Each slot has two
steps: :meth:`Engine.decide` at the slot's boundary, with the values then in force, and
:meth:`Engine.settle` once the slot has closed, with its realised price and availability.
The rules of a slot are stated in :mod:`solver.simulator`.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from solver.decision import Departure, Outcome, SlotDecision
from solver.forecast.models import MarketModels, Outlooks
from solver.job import FINISH_TOLERANCE, Allocation, Allocations, Job, JobResult
from solver.market import SECONDS_PER_HOUR, Market
from solver.migration import DEFAULT_MIGRATION, STAY, MigrationTable, Move, Place
from solver.observation import JobView, Observation, Past
from solver.policies.protocol import Policy, SettlementObserver, planner_of, planner_reason_of


class PolicyError(ValueError):
    """A policy answered something the model forbids."""


@dataclass
class JobState:
    """What the engine knows of one job."""

    job: Job
    remaining: float
    pending_overhead: float = 0.0
    held: Allocation | None = None
    cost: float = 0.0
    completion: float | None = None
    finished: bool = False
    cancelled: bool = False
    failure: str | None = None
    preemptions: int = 0
    refusals: int = 0
    restarts: int = 0
    spot_hours: float = 0.0
    on_demand_hours: float = 0.0
    checkpoint: Place | None = None
    """Where the job's newest checkpoint is (:mod:`solver.migration`)."""
    migrations: int = 0
    egress_usd: float = 0.0

    @property
    def outcome(self) -> Outcome:
        """How the job ended (meaningful once it has)."""
        if self.cancelled:
            return "cancelled"
        if self.failure is not None:
            return "failed"
        if self.completion is not None and self.completion <= self.job.hard_deadline:
            return "finished"
        return "deadline_missed"

    def result(self) -> JobResult:
        job = self.job
        completion = self.completion
        value = 0.0 if self.cancelled else job.value_at(completion)
        return JobResult(
            job_id=job.id,
            cost=self.cost,
            completion=self.completion,
            utility=value - self.cost,
            soft_deadline_met=completion is not None and completion <= job.soft_deadline,
            hard_deadline_met=completion is not None and completion <= job.hard_deadline,
            preemptions=self.preemptions,
            refusals=self.refusals,
            restarts=self.restarts,
            work_done=job.workload - max(self.remaining, 0.0),
            spot_instance_hours=self.spot_hours,
            on_demand_instance_hours=self.on_demand_hours,
            cancelled=self.cancelled,
            migrations=self.migrations,
            egress_usd=self.egress_usd,
        )


@dataclass(frozen=True, slots=True)
class SlotUsage:
    """What one job ran in a settled slot and what it paid (``cost``, with the ``egress_usd``
    of moving its checkpoint there)."""

    job_id: str
    granted: Allocation
    cost: float
    egress_usd: float = 0.0


class History:
    """Closed slots' prices and availability, and the availability their boundaries showed,
    grown one slot at a time.

    Views handed to policies are read-only and never reach a slot that has not closed.
    """

    def __init__(self, n_markets: int, capacity: int = 256) -> None:
        self._price = np.full((n_markets, capacity), np.nan)
        self._availability = np.full((n_markets, capacity), -1, dtype=np.int64)
        self._shown = np.full((n_markets, capacity), -1, dtype=np.int64)
        self._filled = 0

    def __len__(self) -> int:
        return self._filled

    def append(self, price: np.ndarray, availability: np.ndarray, shown: np.ndarray) -> None:
        """Close a slot: its price and availability, and the availability its boundary
        showed."""
        if self._filled == self._price.shape[1]:
            grow = self._price.shape[1]
            self._price = np.concatenate(
                (self._price, np.full_like(self._price, np.nan)[:, :grow]), axis=1)
            self._availability = np.concatenate(
                (self._availability, np.full_like(self._availability, -1)[:, :grow]), axis=1)
            self._shown = np.concatenate(
                (self._shown, np.full_like(self._shown, -1)[:, :grow]), axis=1)
        self._price[:, self._filled] = price
        self._availability[:, self._filled] = availability
        self._shown[:, self._filled] = shown
        self._filled += 1

    def views(self) -> tuple[np.ndarray, np.ndarray]:
        price = self._price[:, : self._filled]
        availability = self._availability[:, : self._filled]
        price.flags.writeable = False
        availability.flags.writeable = False
        return price, availability

    def shown(self) -> np.ndarray:
        """The availability each closed slot's boundary showed (read-only)."""
        shown = self._shown[:, : self._filled]
        shown.flags.writeable = False
        return shown


class Engine:
    """Job state, market history, the markets' forecasters and one policy, advanced slot by
    slot. ``models`` (default: fresh forecasters on this grid) may come already trained on
    the slots before ``origin``.

    A policy that raises, or answers what the model forbids (:class:`PolicyError`), stops
    :meth:`decide`; with ``isolate_failures`` the engine fails only the jobs the policy cannot
    decide alone and decides the others (a service must go on; a simulation should stop).
    """

    def __init__(
        self,
        markets: Sequence[Market],
        origin: float,
        slot_seconds: float,
        policy: Policy,
        expected_slots: int = 256,
        *,
        isolate_failures: bool = False,
        models: MarketModels | None = None,
        migration: MigrationTable = DEFAULT_MIGRATION,
        past: Past | None = None,
    ) -> None:
        self.markets = tuple(markets)
        if past is not None and past.price.shape[0] != len(self.markets):
            raise ValueError(f"past of {past.price.shape[0]} markets: expected "
                             f"{len(self.markets)}, one row per market")
        self.past = past
        self.migration = migration
        self._places = tuple(Place.of(m) for m in self.markets)
        self.isolate_failures = isolate_failures
        self.index = {m.key: i for i, m in enumerate(self.markets)}
        self.origin = float(origin)
        self.slot_seconds = float(slot_seconds)
        self.policy = policy
        self.history = History(len(self.markets), max(1, expected_slots))
        self._models = models
        self.slot = 0
        self._od_price = np.array([m.on_demand_price for m in self.markets])
        self._states: dict[str, JobState] = {}
        self._order: list[tuple[float, str]] = []
        self._pending: tuple[list[tuple[JobState, Allocation | None]], np.ndarray] | None = None
        """The decided slot's requests, and the availability its boundary showed."""
        self._decided: dict[str, Allocation] = {}
        """The allocations of the last :meth:`decide`, to tell which jobs left since."""
        self.denied: frozenset[int] = frozenset()
        """Markets whose spot was denied to a request since they last held spot through a
        whole slot (:attr:`~solver.observation.Observation.denied`)."""

    # -- jobs -------------------------------------------------------------------------------

    def add_job(self, job: Job) -> None:
        """Admit a job (its market patterns resolved to the engine's markets); it becomes
        active at the first boundary at or after its release."""
        if job.id in self._states:
            raise ValueError(f"job id={job.id!r}: expected unique job ids, got a duplicate")
        job = job.resolved(list(self.index))
        if job.allowed_markets is not None:
            unknown = [k for k in job.allowed_markets if k not in self.index]
            if unknown or not job.allowed_markets:
                raise ValueError(
                    f"job {job.id!r} allowed_markets={list(job.allowed_markets)!r}: expected "
                    f"a non-empty subset of {list(self.index)}"
                )
        self._states[job.id] = JobState(job=job, remaining=job.workload, checkpoint=job.home)
        bisect.insort(self._order, (job.hard_deadline, job.id))

    def cancel_job(self, job_id: str) -> None:
        """Stop a job from the next boundary on; it keeps what it has paid."""
        state = self._state(job_id)
        if not state.finished:
            state.finished = state.cancelled = True
            state.held = None

    def fail_job(self, job_id: str, reason: str) -> None:
        """Give up on a job that cannot be decided: it stops from now on, keeping what it paid,
        and ``reason`` says why (it is not reported as leaving at the next boundary)."""
        state = self._state(job_id)
        self._decided.pop(job_id, None)
        if not state.finished:
            state.finished = True
            state.failure = reason
            state.held = None

    def finish_job(self, job_id: str, time: float) -> None:
        """Record a completion reported from outside (e.g. by the cloud) at ``time``."""
        state = self._state(job_id)
        if not state.finished:
            state.finished = True
            state.completion = time
            state.remaining = 0.0
            state.held = None

    def report_progress(self, job_id: str, work_done: float, remaining: float | None) -> None:
        """Correct a job's remaining work from a progress report or a re-estimate."""
        state = self._state(job_id)
        if state.finished:
            return
        state.remaining = remaining if remaining is not None else state.job.workload - work_done
        if state.remaining <= 0:
            raise ValueError(
                f"job {job_id!r} remaining={state.remaining!r}: expected positive remaining "
                "work for a running job; report completion instead"
            )

    @property
    def models(self) -> MarketModels:
        """The markets' forecasters (fresh ones on this grid unless given)."""
        if self._models is None:
            self._models = MarketModels(len(self.markets), self.origin, self.slot_seconds)
        return self._models

    def own_outlooks(self) -> Outlooks:
        """The markets' outlooks at the current boundary made by this engine's forecasters
        from its history (each made when first read)."""
        price_hist, avail_hist = self.history.views()
        return self.models.outlooks(price_hist, avail_hist, self.origin)

    def forget_job(self, job_id: str) -> None:
        """Drop a finished job's state (its result is no longer needed)."""
        state = self._state(job_id)
        if not state.finished:
            raise ValueError(f"job id={job_id!r}: expected a finished job to forget")
        del self._states[job_id]
        self._decided.pop(job_id, None)
        self._order.remove((state.job.hard_deadline, job_id))

    def results(self) -> list[JobResult]:
        return [s.result() for s in self._states.values()]

    def job_state(self, job_id: str) -> JobState:
        return self._state(job_id)

    def _state(self, job_id: str) -> JobState:
        try:
            return self._states[job_id]
        except KeyError:
            raise ValueError(f"job id={job_id!r}: expected a known job") from None

    # -- slots ------------------------------------------------------------------------------

    @property
    def slot_start(self) -> float:
        return self.origin + self.slot * self.slot_seconds

    def active(self) -> list[JobState]:
        start = self.slot_start
        states = (self._states[job_id] for _, job_id in self._order)
        return [
            s for s in states
            if not s.finished and s.job.release <= start < s.job.hard_deadline
        ]

    def all_finished(self) -> bool:
        return all(s.finished for s in self._states.values())

    def decide(self, price_now: np.ndarray, availability_now: np.ndarray,
               outlooks: Outlooks | None = None) -> SlotDecision:
        """Ask the policy for this slot at its boundary (at every boundary, with or without
        active jobs, so that learning policies see every slot); returns every active job's
        validated allocation (zero instances for the jobs the policy leaves idle) and the jobs
        that left since the last boundary. ``outlooks``: the markets' forecasts at this
        boundary (default: this engine's forecasters'). With ``isolate_failures``, jobs the
        policy cannot decide are failed instead (departures with outcome ``failed``), and what
        it raised deciding the jobs together is kept in the decision's ``policy_errors``."""
        if self._pending is not None:
            raise RuntimeError(f"slot {self.slot} was decided but not settled")
        failures: dict[str, str] = {}
        before = dict(self._decided)
        active = self.active()
        now = (np.array(price_now, dtype=float), np.array(availability_now, dtype=np.int64))
        if outlooks is None:
            outlooks = self.own_outlooks()
        obs = self._observe(active, *now, outlooks)
        errors: list[Exception] = []
        try:
            answer = self._ask(obs)
        except Exception as exc:
            if not self.isolate_failures:
                raise
            errors.append(exc)
            answer = self._isolate(obs, failures, errors)
            active = [s for s in active if not s.finished]
            obs = self._observe(active, *now, outlooks)
        requests: list[tuple[JobState, Allocation | None]] = []
        decided: dict[str, Allocation] = {}
        for state in active:
            request = answer.get(state.job.id)
            decided[state.job.id] = request or self._idle(state)
            requests.append((state, request))
        self._pending = (requests, now[1])
        departures: dict[str, Departure] = {}
        for job_id, reason in failures.items():
            previous = before.get(job_id)
            market = self._idle(self._states[job_id]).market if previous is None \
                else previous.market
            departures[job_id] = Departure(market, "failed", reason)
        for job_id, previous in before.items():
            if job_id not in decided and job_id not in failures:
                departures[job_id] = Departure(previous.market, self._states[job_id].outcome)
        self._decided = dict(decided)
        return SlotDecision(obs, decided, departures, tuple(errors),
                            {job_id: planner_of(self.policy, job_id) for job_id in decided},
                            {job_id: why for job_id in decided
                             if (why := planner_reason_of(self.policy, job_id))})


    def _observe(self, jobs: list[JobState], price_now: np.ndarray,
                 availability_now: np.ndarray, outlooks: Outlooks) -> Observation:
        price_hist, avail_hist = self.history.views()
        return Observation(
            slot=self.slot,
            time=self.slot_start,
            slot_seconds=self.slot_seconds,
            markets=self.markets,
            price_history=price_hist,
            availability_history=avail_hist,
            price_now=price_now,
            availability_now=availability_now,
            jobs=tuple(JobView(s.job, s.remaining, s.pending_overhead, s.held, s.cost,
                               s.checkpoint) for s in jobs),
            outlooks=outlooks,
            migration=self.migration,
            past=self.past,
            denied=self.denied,
            shown_history=self.history.shown(),
        )

    def _ask(self, obs: Observation) -> dict[str, Allocation]:
        """The policy's checked answer: a request for each job of ``obs`` that runs something."""
        answer: Allocations = self.policy.decide(obs)
        stray = sorted(set(answer) - {view.id for view in obs.jobs})
        if stray:
            raise PolicyError(
                f"policy {self.policy.name!r} slot {self.slot}: allocated jobs {stray} that are "
                "not active"
            )
        requests = {}
        for view in obs.jobs:
            request = answer.get(view.id)
            if request is not None and request.total > 0:
                self._check_request(view.job, request, obs.price_now)
                requests[view.id] = request
        return requests

    def _isolate(self, obs: Observation, failures: dict[str, str],
                 errors: list[Exception]) -> dict[str, Allocation]:
        """The policy failed on the jobs of ``obs`` together: ask it about each job alone, fail
        the jobs it fails on (into ``failures``, with why), then decide the others together
        again. Should that fail too (into ``errors``), each runs what it was answered alone
        (spot beyond capacity is refused at settlement)."""
        alone: dict[str, Allocation] = {}
        for view in obs.jobs:
            try:
                alone.update(self._ask(replace(obs, jobs=(view,))))
            except Exception as exc:
                reason = f"policy {self.policy.name!r} failed on it: {type(exc).__name__}: {exc}"
                self.fail_job(view.id, reason)
                failures[view.id] = reason
        rest = tuple(view for view in obs.jobs if view.id not in failures)
        try:
            return self._ask(replace(obs, jobs=rest))
        except Exception as exc:
            errors.append(exc)
            return alone

    def _idle(self, state: JobState) -> Allocation:
        """Nothing to run: zero instances where the job last ran (or its first market)."""
        if state.held is not None:
            return Allocation(state.held.market)
        allowed = state.job.allowed_markets
        return Allocation(self.index[allowed[0]] if allowed else 0)

    def settle(self, price: np.ndarray, availability: np.ndarray) -> list[SlotUsage]:
        """Close the decided slot with its realised values; returns what each job ran."""
        if self._pending is None:
            raise RuntimeError(f"slot {self.slot} was not decided before settling")
        requests, shown = self._pending
        self._pending = None
        capacity = np.array(availability, dtype=np.int64)
        slot_h = self.slot_seconds / SECONDS_PER_HOUR
        start = self.slot_start
        usage: list[SlotUsage] = []
        denied: set[int] = set()
        for state, request in requests:
            if state.finished:  # cancelled or failed between decision and settlement
                continue
            if request is not None and request.spot > capacity[request.market]:
                denied.add(request.market)
            granted = _grant(state, request, capacity)
            move = self.move(state, granted.market) \
                if granted is not None and granted != state.held else STAY
            if _run_slot(state, granted, start, self.slot_seconds, move) and granted is not None:
                state.checkpoint = self._places[granted.market]  # progress made: it is here now
            if granted is not None:
                m = granted.market
                cost = (granted.spot * float(price[m])
                        + granted.on_demand * self._od_price[m]) * slot_h + move.egress_usd
                state.cost += cost
                state.spot_hours += granted.spot * slot_h
                state.on_demand_hours += granted.on_demand * slot_h
                usage.append(SlotUsage(state.job.id, granted, cost, move.egress_usd))
            if start + self.slot_seconds >= state.job.hard_deadline:
                state.finished = True
        self.denied = frozenset(denied | {m for m in self.denied if availability[m] <= 0})
        self.history.append(price, availability, shown)
        self.slot += 1
        if isinstance(self.policy, SettlementObserver):
            self.policy.observe_settled(np.asarray(price, dtype=float),
                                        np.asarray(availability, dtype=np.int64))
        return usage

    def move(self, state: JobState, market: int) -> Move:
        """What launching ``state``'s job in ``market`` costs for its checkpoint."""
        return self.migration.move(state.checkpoint, self._places[market],
                                   state.job.checkpoint_gb)

    def _check_request(self, job: Job, request: Allocation, price_now: np.ndarray) -> None:
        where = f"policy {self.policy.name!r} slot {self.slot} job {job.id!r}"
        if not 0 <= request.market < len(self.markets):
            raise PolicyError(f"{where}: market={request.market} is not a market index")
        if not job.may_use(self.markets[request.market].key):
            raise PolicyError(
                f"{where}: market={self.markets[request.market].key!r} is not among the job's "
                f"allowed markets {list(job.allowed_markets or ())}"
            )
        if request.spot and not job.allow_spot:
            raise PolicyError(f"{where}: spot={request.spot} but the job does not allow spot")
        if not job.n_min <= request.total <= job.n_max:
            raise PolicyError(
                f"{where}: {request.total} instances; expected 0 or between n_min={job.n_min} "
                f"and n_max={job.n_max}"
            )
        bill = request.hourly_usd(price_now[request.market], self._od_price[request.market])
        if not job.within_cap(bill):
            raise PolicyError(
                f"{where}: an hourly bill of {bill:.4f} USD; expected at most "
                f"max_hourly_usd={job.max_hourly_usd!r}"
            )


def _grant(state: JobState, request: Allocation | None, capacity: np.ndarray) -> Allocation | None:
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


def _run_slot(state: JobState, granted: Allocation | None, start: float, slot_s: float,
              move: Move) -> bool:
    """Advance one job by one slot with its granted allocation, a launch paying ``move``;
    true when the slot made progress."""
    if granted != state.held and granted is not None:
        state.restarts += 1
        state.pending_overhead = state.job.restart_overhead + move.transfer_seconds
        if move.moves:
            state.migrations += 1
            state.egress_usd += move.egress_usd
    state.held = granted
    if granted is None:
        state.pending_overhead = 0.0
        return False
    overhead = min(state.pending_overhead, slot_s)
    state.pending_overhead -= overhead
    rate = state.job.throughput(granted.total) / SECONDS_PER_HOUR  # work per second
    productive = slot_s - overhead
    if rate * productive >= state.remaining - FINISH_TOLERANCE * state.job.workload:
        state.completion = start + overhead + state.remaining / rate
        state.remaining = 0.0
        state.finished = True
        state.held = None
    else:
        state.remaining -= rate * productive
    return productive > 0
