"""The forecasts a scheduler plans an epoch on: the market stage's, relayed by the coordinator
into the scheduler's partition right before the epoch marker of the same boundary.

A forecast the market stage of the same process made is planned on as the outlook the
forecaster made (:data:`MADE`), not converted back from its wire form: it converts back
exactly, and an outlook is never changed once made.

A market whose forecast is missing (its forecaster failed) is forecast by the scheduler's engine itself from the epochs it has
seen, so the epoch is still decided.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from solver.forecast.models import Outlooks
from solver.forecast.outlook import MarketOutlook
from streams.contract import Outlook, PublishedForecast
from streams.pipeline.stage import RejectedEvent
from streams.pipeline.written import MAX_WRITTEN_EVENTS, Newest

MAX_PENDING_FORECASTS = 100_000
"""Forecasts a scheduler keeps for epochs not yet closed; beyond, they are rejected."""


class MadeOutlooks:
    """The outlooks this process's forecasters made, by the wire model made of each (the
    newest :data:`~streams.pipeline.written.MAX_WRITTEN_EVENTS`)."""

    def __init__(self) -> None:
        self._made: Newest[int, tuple[Outlook, MarketOutlook]] = Newest(MAX_WRITTEN_EVENTS)
        """By the model's id; the model is held, so its id stays its own."""

    def remember(self, model: Outlook, outlook: MarketOutlook) -> None:
        """``model`` is the wire form of ``outlook``."""
        self._made.put(id(model), (model, outlook))

    def outlook(self, model: Outlook) -> MarketOutlook:
        """The outlook ``model`` is the wire form of: the one made, if remembered."""
        made = self._made.get(id(model))
        if made is not None and made[0] is model:
            return made[1]
        return MarketOutlook.from_wire(model.model_dump())

    def __len__(self) -> int:
        return len(self._made)


MADE = MadeOutlooks()
"""The outlooks the market stages of this process made."""


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

    def take(self, boundary: float, own: Callable[[], Outlooks]) -> Outlooks | None:
        """The outlooks of the epoch at ``boundary`` (forgetting those up to it): the relayed
        ones, and ``own()`` (the engine's) for the markets without one; ``None`` when none came
        (the engine then forecasts every market)."""
        relayed = self._by_boundary.pop(boundary, {})
        for earlier in [b for b in self._by_boundary if b < boundary]:
            self._count -= len(self._by_boundary.pop(earlier))
        self._count -= len(relayed)
        given = {m: MADE.outlook(f.outlook)
                 for m, key in enumerate(self.markets)
                 if (f := relayed.get(key)) is not None and f.outlook is not None}
        if not given:
            return None
        if len(given) == len(self.markets):
            return Outlooks(len(given), ready=[given[m] for m in range(len(given))])
        mine = own()
        return Outlooks(len(self.markets), make=lambda m: given[m] if m in given else mine[m])
