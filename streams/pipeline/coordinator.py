"""The epoch coordinator: an epoch closes once every catalogue market has passed its boundary.

It joins each market's forecast of a boundary with the boundary's report, and when the epoch
closes it writes the markets' forecasts of that boundary, then the epoch marker, into every
scheduler partition: a scheduler plans the epoch on exactly the forecasts the market stage
made. Its state depends only on what each market reported, never on the order in which reports
of different markets arrive, so every interleaving of the market-ticks partitions closes the
same epochs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from solver.market import Market
from streams.contract import EpochClosed, MarketBoundary, PublishedForecast
from streams.pipeline.stage import Message, RejectedEvent, StageOutput, epoch_index

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

    def __init__(self, catalogue: Sequence[Market], slot_seconds: float) -> None:
        self.markets = tuple(m.key for m in catalogue)
        self.slot_seconds = slot_seconds
        self.last_boundary: float | None = None
        self._open: dict[float, _Open] = {}

    def handle(self, report: MarketBoundary | PublishedForecast,
               message: Message | None = None) -> list[StageOutput]:
        boundary = report.event_time.timestamp()
        self._check(report, boundary)
        if self.last_boundary is not None and boundary <= self.last_boundary:
            return []  # already closed: a re-delivery
        held = self._open.setdefault(boundary, _Open())
        if isinstance(report, PublishedForecast):
            held.forecasts[report.market] = report
            return []
        held.reports[report.market] = report
        if len(held.reports) < len(self.markets):
            return []
        epoch = self._epoch(boundary, [held.reports[key] for key in self.markets])
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

    def _epoch(self, boundary: float, ordered: list[MarketBoundary]) -> EpochClosed:
        first = self.last_boundary is None
        return EpochClosed(
            event_time=ordered[0].event_time,
            epoch=epoch_index(boundary, self.slot_seconds),
            slot_seconds=self.slot_seconds,
            markets=self.markets,
            price=None if first else tuple(
                r.price_now if r.price is None else r.price for r in ordered),
            availability=None if first else tuple(
                0 if r.availability is None else r.availability for r in ordered),
            price_now=tuple(r.price_now for r in ordered),
            availability_now=tuple(r.availability_now for r in ordered),
        )


@dataclass
class _Open:
    """What the markets reported of a boundary not yet closed."""

    reports: dict[str, MarketBoundary] = field(default_factory=dict)
    forecasts: dict[str, PublishedForecast] = field(default_factory=dict)
