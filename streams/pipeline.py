"""The streaming pipeline's three stages, free of Kafka and Faust so they run in memory too.

1. :class:`MarketStage` (partitioned by market) cuts market ticks into slots and reports each
   boundary a market passes.
2. :class:`EpochCoordinator` (one partition) waits until every catalogue market has passed a
   boundary, then closes the epoch for every scheduler partition.
3. :class:`PartitionScheduler` (one per job-events partition) drives a :class:`solver.engine.Engine`
   with its jobs' events and the epochs, and answers provisioning decisions.

Every stage is a deterministic function of its input order, so rebuilding one from its
partition's log restores it exactly; stages ignore what they have already seen.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import numpy as np

from solver.engine import Engine
from solver.explain import explain
from solver.forecast import MarketFactory, MarketForecaster, market_factory, slot_seasonality
from solver.job import Allocation
from solver.market import Market
from solver.policy import Policy
from solver.slotting import LateTickError, SlotCutter
from streams.events import (
    AvailabilityTick,
    Envelope,
    EpochClosed,
    JobCancelled,
    JobFinished,
    JobProgress,
    JobSubmitted,
    MarketBoundary,
    MarketForecast,
    PriceTick,
    ProvisioningDecision,
)


class RejectedEvent(ValueError):
    """A well-formed event the pipeline cannot accept; its message is the dead-letter reason."""


def utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def epoch_index(boundary: float, slot_seconds: float) -> int:
    """Slots since the Unix epoch: the epoch number of the slot starting at ``boundary``."""
    return round(boundary / slot_seconds)


class MarketStage:
    """Slot cutters and forecasters for the catalogue markets whose ticks reach this stage.

    Each boundary a market passes yields a :class:`MarketBoundary`; each closed slot the
    market's ticks covered is learnt by its forecaster, which then forecasts ``horizon`` slots.
    """

    def __init__(
        self,
        catalogue: Sequence[Market],
        slot_seconds: float,
        forecaster: MarketFactory | None = None,
        horizon: int = 24,
    ) -> None:
        self.catalogue = {m.key: m for m in catalogue}
        self.slot_seconds = slot_seconds
        self.forecaster = forecaster or market_factory()
        self.horizon = horizon
        self._cutters: dict[str, SlotCutter] = {}
        self._forecasters: dict[str, MarketForecaster] = {}

    def handle(self, tick: PriceTick | AvailabilityTick) -> list[MarketBoundary | MarketForecast]:
        if tick.market not in self.catalogue:
            raise RejectedEvent(
                f"market={tick.market!r}: expected a market of the catalogue "
                f"({', '.join(sorted(self.catalogue))})"
            )
        cutter = self._cutters.setdefault(tick.market, SlotCutter(self.slot_seconds))
        time = tick.event_time.timestamp()
        try:
            if isinstance(tick, PriceTick):
                closes = cutter.update(time, price=tick.spot_price)
            else:
                closes = cutter.update(time, available=tick.available)
        except LateTickError as exc:
            raise RejectedEvent(f"late tick for market {tick.market!r}: {exc}") from exc
        out: list[MarketBoundary | MarketForecast] = []
        for close in closes:
            out.append(MarketBoundary(
                event_time=utc(close.boundary),
                market=tick.market,
                slot_seconds=self.slot_seconds,
                price=close.price,
                availability=close.availability,
                price_now=close.price_now,
                availability_now=close.availability_now,
            ))
            if close.price is not None and close.availability is not None:
                out.append(self._forecast(tick.market, close.boundary, close.price,
                                          close.availability))
        return out

    def _forecast(self, market: str, boundary: float, price: float,
                  availability: int) -> MarketForecast:
        forecaster = self._forecasters.get(market)
        if forecaster is None:
            season = slot_seasonality(boundary - self.slot_seconds, self.slot_seconds)
            forecaster = self._forecasters[market] = self.forecaster(season, self.horizon)
        forecaster.learn_one(price, float(availability))
        ahead = forecaster.forecast(self.horizon)
        return MarketForecast(
            event_time=utc(boundary),
            market=market,
            slot_seconds=self.slot_seconds,
            price=tuple(_known_or_none(v) for v in ahead.price),
            availability=tuple(_known_or_none(v) for v in ahead.availability),
            price_error=_known_or_none(forecaster.errors.price_error),
            availability_error=_known_or_none(forecaster.errors.availability_error),
        )


def _known_or_none(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


class EpochCoordinator:
    """Closes an epoch once every catalogue market has reported its boundary."""

    def __init__(self, catalogue: Sequence[Market], slot_seconds: float) -> None:
        self.markets = tuple(m.key for m in catalogue)
        self.slot_seconds = slot_seconds
        self.last_boundary: float | None = None
        self._reports: dict[float, dict[str, MarketBoundary]] = {}

    def handle(self, report: MarketBoundary) -> list[EpochClosed]:
        boundary = report.event_time.timestamp()
        if report.market not in self.markets:
            raise RejectedEvent(
                f"market={report.market!r}: expected a market of the catalogue"
            )
        if self.last_boundary is not None and boundary <= self.last_boundary:
            return []  # already closed: a re-delivery
        reports = self._reports.setdefault(boundary, {})
        reports[report.market] = report
        if len(reports) < len(self.markets):
            return []
        first = self.last_boundary is None
        ordered = [reports[key] for key in self.markets]
        self.last_boundary = boundary
        self._reports = {b: r for b, r in self._reports.items() if b > boundary}
        return [
            EpochClosed(
                event_time=report.event_time,
                epoch=epoch_index(boundary, self.slot_seconds),
                slot_seconds=self.slot_seconds,
                markets=self.markets,
                price=None if first else tuple(float(_closed(r).price or 0.0) for r in ordered),
                availability=None if first else tuple(
                    int(_closed(r).availability or 0) for r in ordered),
                price_now=tuple(r.price_now for r in ordered),
                availability_now=tuple(r.availability_now for r in ordered),
            )
        ]


def _closed(report: MarketBoundary) -> MarketBoundary:
    """The report itself, once checked to carry the closed slot's values."""
    if report.price is None or report.availability is None:
        raise RejectedEvent(
            f"market {report.market!r} boundary {report.event_time.isoformat()}: the slot "
            "before it was not covered by ticks; expected every market to have ticked since "
            "the first epoch"
        )
    return report


JobEvent = JobSubmitted | JobProgress | JobCancelled | JobFinished


class PartitionScheduler:
    """One job-events partition: its jobs, the epochs, and the engine they drive."""

    def __init__(
        self,
        catalogue: Sequence[Market],
        slot_seconds: float,
        policy_factory: Callable[[], Policy],
    ) -> None:
        self.catalogue = tuple(catalogue)
        self.keys = {m.key for m in self.catalogue}
        self.slot_seconds = slot_seconds
        self.policy_factory = policy_factory
        self.engine: Engine | None = None
        self.last_epoch: int | None = None
        self._waiting: list[JobSubmitted] = []
        self._known: dict[str, JobSubmitted] = {}
        self._active: dict[str, Allocation] = {}

    def handle(self, event: JobEvent | EpochClosed) -> list[ProvisioningDecision]:
        if isinstance(event, EpochClosed):
            return self._epoch(event)
        if isinstance(event, JobSubmitted):
            self._submit(event)
            return []
        engine = self.engine
        if event.job_id not in self._known:
            raise RejectedEvent(f"job_id={event.job_id!r}: expected a submitted job")
        if engine is None:
            raise RejectedEvent(
                f"job_id={event.job_id!r}: {event.type} before the first epoch; expected it "
                "after the job started"
            )
        try:
            if isinstance(event, JobCancelled):
                engine.cancel_job(event.job_id)
            elif isinstance(event, JobFinished):
                engine.finish_job(event.job_id, event.event_time.timestamp())
            elif event.event_time.timestamp() >= engine.slot_start:
                engine.report_progress(event.job_id, event.work_done, event.remaining_work)
            # else: a report from before the engine's current slot is already superseded
        except ValueError as exc:
            raise RejectedEvent(str(exc)) from exc
        return []

    def _submit(self, event: JobSubmitted) -> None:
        previous = self._known.get(event.job_id)
        if previous is not None:
            if previous.to_job() == event.to_job():
                return  # a re-delivery
            raise RejectedEvent(
                f"job_id={event.job_id!r}: already submitted with other fields; expected a "
                "new job id"
            )
        job = event.to_job()
        unknown = sorted(set(job.allowed_markets or ()) - self.keys)
        if unknown:
            raise RejectedEvent(
                f"allowed_markets={unknown}: expected markets of the catalogue"
            )
        if self.engine is not None and job.hard_deadline <= self.engine.slot_start:
            raise RejectedEvent(
                f"hard_deadline={event.hard_deadline.isoformat()}: expected a time after the "
                f"current epoch {utc(self.engine.slot_start).isoformat()}"
            )
        self._known[event.job_id] = event
        if self.engine is None:
            self._waiting.append(event)
        else:
            self.engine.add_job(job)

    def _epoch(self, event: EpochClosed) -> list[ProvisioningDecision]:
        if tuple(m.key for m in self.catalogue) != event.markets:
            raise RejectedEvent(
                f"markets={list(event.markets)}: expected the catalogue "
                f"{[m.key for m in self.catalogue]}"
            )
        if self.last_epoch is not None and event.epoch <= self.last_epoch:
            return []  # a re-delivery
        boundary = event.event_time.timestamp()
        engine = self.engine
        if engine is None:
            engine = self.engine = Engine(self.catalogue, boundary, self.slot_seconds,
                                          self.policy_factory())
            for waiting in self._waiting:
                engine.add_job(waiting.to_job())
            self._waiting.clear()
        else:
            if event.price is None or event.availability is None:
                raise RejectedEvent(f"epoch={event.epoch}: expected the closed slot's values")
            if not math.isclose(engine.slot_start + self.slot_seconds, boundary):
                raise RejectedEvent(
                    f"epoch={event.epoch}: expected the epoch after {self.last_epoch}"
                )
            engine.settle(np.array(event.price), np.array(event.availability))
        self.last_epoch = event.epoch
        decided = engine.decide(np.array(event.price_now), np.array(event.availability_now))
        return self._released(engine, decided, event) + self._decisions(engine, decided, event)

    def _decisions(
        self, engine: Engine, decided: dict[str, Allocation], event: EpochClosed
    ) -> list[ProvisioningDecision]:
        obs = engine.last_observation
        if obs is None:
            return []
        views = {v.id: v for v in obs.jobs}
        out = []
        for job_id, allocation in decided.items():
            why = explain(obs, views[job_id], allocation)
            out.append(self._decision(event, job_id, allocation, why.expected_cost_usd,
                                      why.slack_seconds, _reason(allocation), {
                                          "spot_price_now": why.spot_price_now,
                                          "spot_available_now": float(why.spot_available_now),
                                          "on_demand_price": why.on_demand_price,
                                      }))
        self._active = dict(decided)
        return out

    def _released(
        self, engine: Engine, decided: dict[str, Allocation], event: EpochClosed
    ) -> list[ProvisioningDecision]:
        """Zero-instance decisions for jobs that left the active set since the last epoch."""
        out = []
        for job_id, previous in self._active.items():
            if job_id not in decided:
                state = engine.job_state(job_id)
                reason = ("cancelled" if state.cancelled else
                          "finished" if state.completion is not None else "deadline passed")
                out.append(self._decision(event, job_id, Allocation(previous.market), 0.0, 0.0,
                                          f"released: {reason}", None))
        return out

    def _decision(
        self,
        event: EpochClosed,
        job_id: str,
        allocation: Allocation,
        cost: float,
        slack: float,
        reason: str,
        forecast: dict[str, float] | None,
    ) -> ProvisioningDecision:
        return ProvisioningDecision(
            event_time=event.event_time,
            job_id=job_id,
            epoch=event.epoch,
            slot_start=event.event_time,
            slot_seconds=self.slot_seconds,
            market=self.catalogue[allocation.market].key,
            spot=allocation.spot,
            on_demand=allocation.on_demand,
            policy=self.engine.policy.name if self.engine else "",
            expected_cost_usd=cost,
            slack_seconds=slack,
            forecast=forecast,
            reason=reason,
        )


def _reason(allocation: Allocation) -> str:
    if allocation.total == 0:
        return "idle"
    parts = [f"{n} {kind}" for n, kind in ((allocation.spot, "spot"),
                                           (allocation.on_demand, "on-demand")) if n]
    return "run " + " + ".join(parts)


def decision_rows(decisions: Sequence[Envelope]) -> list[tuple[int, str, str, int, int]]:
    """``(epoch, job, market, spot, on_demand)`` of allocating decisions, sorted: the form in
    which an in-process replay and a Kafka run are compared."""
    return sorted(
        (d.epoch, d.job_id, d.market, d.spot, d.on_demand)
        for d in decisions
        if isinstance(d, ProvisioningDecision) and not d.reason.startswith("released")
    )
