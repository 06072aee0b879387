"""The forecasts a scheduler plans an epoch on: the market stage's, relayed by the coordinator
into the scheduler's partition right before the epoch marker of the same boundary.

A forecast a market stage of the same runner made is planned on as the outlook the forecaster
made (:class:`~streams.pipeline.written.MadeOutlooks`), not converted back from its wire form.

A market whose forecast is missing (its forecaster failed) is forecast by the scheduler's
engine itself from the epochs it has seen, so the epoch is still decided.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from solver.forecast.models import Outlooks
from streams.contract import PublishedForecast
from streams.pipeline.stage import RejectedEvent
from streams.pipeline.written import MadeOutlooks

MAX_PENDING_FORECASTS = 100_000
"""Forecasts a scheduler keeps for epochs not yet closed; beyond, they are rejected."""


class PendingForecasts:
    """Forecasts received for the boundaries after ``decided`` (the last epoch decided)."""

    def __init__(self, markets: Sequence[str], slot_seconds: float) -> None:
        self.markets = tuple(markets)
        self.slot_seconds = slot_seconds
        self._by_boundary: dict[float, dict[str, PublishedForecast]] = {}
        self._count = 0

    def add(self, forecast: PublishedForecast, decided: float | None) -> None:
        """Keep a forecast for its epoch (one for an epoch already decided is a re-delivery)."""
        if forecast.market not in self.markets:
            raise RejectedEvent(f"market={forecast.market!r}: expected a market of the catalogue")
        if not math.isclose(forecast.slot_seconds, self.slot_seconds):
            raise RejectedEvent(f"slot_seconds={forecast.slot_seconds:g}: expected "
                                f"{self.slot_seconds:g}, the worker's slot length")
        boundary = forecast.event_time.timestamp()
        if decided is not None and boundary <= decided:
            return
        if self._count >= MAX_PENDING_FORECASTS:
            raise RejectedEvent(
                f"market_forecast at {forecast.event_time.isoformat()}: "
                f"{MAX_PENDING_FORECASTS:,} forecasts already wait for their epoch; expected "
                "epochs to follow their forecasts")
        held = self._by_boundary.setdefault(boundary, {})
        self._count += forecast.market not in held
        held[forecast.market] = forecast

    def take(self, boundary: float, own: Callable[[], Outlooks],
             made: MadeOutlooks) -> Outlooks | None:
        """The outlooks of the epoch at ``boundary`` (forgetting those up to it): the relayed
        ones (as ``made`` remembers them, when it does), and ``own()`` (the engine's) for the
        markets without one; ``None`` when none came (the engine then forecasts every
        market)."""
        relayed = self._by_boundary.pop(boundary, {})
        for earlier in [b for b in self._by_boundary if b < boundary]:
            self._count -= len(self._by_boundary.pop(earlier))
        self._count -= len(relayed)
        given = {m: made.outlook(f.outlook)
                 for m, key in enumerate(self.markets)
                 if (f := relayed.get(key)) is not None and f.outlook is not None}
        if not given:
            return None
        if len(given) == len(self.markets):
            return Outlooks(len(given), ready=[given[m] for m in range(len(given))])
        mine = own()
        return Outlooks(len(self.markets), make=lambda m: given[m] if m in given else mine[m])
