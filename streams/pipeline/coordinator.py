"""The epoch coordinator: an epoch closes once every catalogue market has passed its boundary.

It joins each market's forecast of a boundary with the boundary's report, and when the epoch
closes it writes the markets' forecasts of that boundary, then the epoch marker, into every
scheduler partition: a scheduler plans the epoch on exactly the forecasts the market stage
made. Its state depends only on what each market reported, never on the order in which reports
of different markets arrive, so every interleaving of the market-ticks partitions closes the
same epochs.

It reads a forecast's envelope only (:func:`~streams.contract.codec.read_forecast_envelope`;
what a stage of the same runner wrote is not read again, :mod:`streams.pipeline.written`) and
relays the message's bytes as they came: the schedulers read the outlook, and reject a
forecast whose outlook they cannot read (planning on their engine's own forecast of that
market, as for a forecast that never came).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from solver.market import Market
from streams.contract import (
    Envelope,
    EpochClosed,
    MarketBoundary,
    PublishedForecast,
    dump_event,
)
from streams.contract.codec import read_forecast_envelope
from streams.pipeline.stage import Message, RejectedEvent, Relayed, StageOutput, epoch_index
from streams.pipeline.written import Written

MAX_OPEN_BOUNDARIES = 100_000
"""Boundaries reported by some markets and not yet by all that the coordinator keeps."""


class EpochCoordinator:
    """Closes an epoch once every catalogue market has reported its boundary, relaying the
    forecasts the markets made at it (module doc).

    A market whose ticks did not cover the slot before a boundary (it started after the first
    epoch) counts as having had no spot capacity in it, at the price in force at the boundary.
    """

    name = "coordinator"
    accepts = (MarketBoundary, PublishedForecast)

    def __init__(self, catalogue: Sequence[Market], slot_seconds: float,
                 written: Written | None = None) -> None:
        self.markets = tuple(m.key for m in catalogue)
        self.slot_seconds = slot_seconds
        self.written = Written() if written is None else written
        """What the stages of the runner wrote (a fresh one: the stage alone)."""
        self.last_boundary: float | None = None
        self._open: dict[float, _Open] = {}

    def decode(self, raw: bytes) -> Envelope:
        """The event of ``raw``, a forecast without its outlook (module doc)."""
        written = self.written.events.get(raw)
        if isinstance(written, PublishedForecast):
            return written.model_copy(update={"outlook": None})
        return read_forecast_envelope(raw) if written is None else written

    def handle(self, report: MarketBoundary | PublishedForecast,
               message: Message | None = None) -> list[StageOutput]:
        boundary = report.event_time.timestamp()
        self._check(report, boundary)
        if self.last_boundary is not None and boundary <= self.last_boundary:
            return []  # already closed: a re-delivery
        held = self._open.setdefault(boundary, _Open(report.event_time))
        if isinstance(report, PublishedForecast):
            value = message.value if message is not None else None
            held.forecasts[report.market] = Relayed(report, value or dump_event(report))
            return []
        held.reports[report.market] = (report.price, report.availability, report.price_now,
                                       report.availability_now)
        if len(held.reports) < len(self.markets):
            return []
        epoch = self._epoch(held, [held.reports[key] for key in self.markets])
        self.last_boundary = boundary
        self._open = {b: o for b, o in self._open.items() if b > boundary}
        return [*(held.forecasts[key] for key in self.markets if key in held.forecasts), epoch]

    def _check(self, report: MarketBoundary | PublishedForecast, boundary: float) -> None:
        if report.market not in self.markets:
            raise RejectedEvent(f"market={report.market!r}: expected a market of the catalogue")
        if not math.isclose(report.slot_seconds, self.slot_seconds):
            raise RejectedEvent(
                f"slot_seconds={report.slot_seconds:g}: expected {self.slot_seconds:g}, the "
                "worker's slot length")
        if not math.isclose(epoch_index(boundary, self.slot_seconds) * self.slot_seconds,
                            boundary, rel_tol=0, abs_tol=1e-3):
            raise RejectedEvent(
                f"event_time={report.event_time.isoformat()}: expected a slot boundary (a "
                f"multiple of {self.slot_seconds:g} s since the Unix epoch)")
        if boundary not in self._open and len(self._open) >= MAX_OPEN_BOUNDARIES:
            raise RejectedEvent(
                f"event_time={report.event_time.isoformat()}: {MAX_OPEN_BOUNDARIES:,} "
                "boundaries already wait for other markets; expected markets to tick together")

    def _epoch(self, held: _Open, ordered: list[_Report]) -> EpochClosed:
        first = self.last_boundary is None
        return EpochClosed(
            event_time=held.event_time,
            epoch=epoch_index(held.event_time.timestamp(), self.slot_seconds),
            slot_seconds=self.slot_seconds,
            markets=self.markets,
            price=None if first else tuple(
                now if price is None else price for price, _, now, _ in ordered),
            availability=None if first else tuple(
                0 if available is None else available for _, available, _, _ in ordered),
            price_now=tuple(now for _, _, now, _ in ordered),
            availability_now=tuple(now for _, _, _, now in ordered),
        )


_Report = tuple[float | None, int | None, float, int]
"""A market's report of a boundary: the closed slot's price and availability (``None`` when
its ticks did not cover it), and those in force at the boundary."""


@dataclass
class _Open:
    """What the markets reported of a boundary not yet closed."""

    event_time: datetime
    reports: dict[str, _Report] = field(default_factory=dict)
    forecasts: dict[str, Relayed] = field(default_factory=dict)

