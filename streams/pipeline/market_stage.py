"""The market stage: market ticks cut into slots; at each boundary a market passes, the
market's forecast for the slots from that boundary on and a report of the boundary.

Each market's forecaster starts at the market's first boundary (its slot cycle from there,
:func:`solver.forecast.slot_seasonality`) and learns every slot the market's ticks closed after
it, as :func:`solver.simulator.simulate` does with the market data's lead-in; the outlook it
makes at a boundary (:meth:`solver.forecast.MarketForecaster.outlook`) is published on the
forecasts topic and is what every scheduler plans on. The forecast of a boundary is emitted
before its report, so the coordinator holds it once the boundary is reported.

Ticks are checked against event time before they touch a market's state, so no tick can
freeze a market or make the stage loop over empty slots:

- a tick more than ``max_future_skew`` seconds ahead of both its market's last tick and the
  stage's event time (the latest boundary any of its markets passed) is rejected;
- a tick that would pass more than :data:`MAX_BOUNDARIES_PER_TICK` boundaries is rejected;
- until a market passes its first boundary nothing depends on its ticks, and ticks that
  disagree by more than the skew (one far ahead, then the real ones) keep separate candidate
  clocks: the first to pass a boundary becomes the market's, and the ticks of the others are
  rejected then.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from solver.forecast import MarketFactory, MarketForecaster, market_factory, slot_seasonality
from solver.forecast.models import OUTLOOK_HORIZON
from solver.forecast.outlook import MarketOutlook
from solver.market import Market
from solver.slotting import LateTickError, SlotClose, SlotCutter
from streams.contract import (
    AvailabilityTick,
    MarketBoundary,
    Outlook,
    PriceTick,
    PublishedForecast,
    parse_event,
    utc,
)
from streams.pipeline.stage import (
    Fault,
    Message,
    RejectedEvent,
    Rejection,
    StageOutput,
    rejection,
)
from streams.pipeline.written import MadeOutlooks, Written

DEFAULT_MAX_FUTURE_SKEW_SECONDS = 86_400.0
"""How far ahead of a market's event time a tick may be (setting MAX_FUTURE_SKEW_SECONDS)."""
MAX_BOUNDARIES_PER_TICK = 10_000
"""Most slot boundaries one tick may pass."""
MAX_CANDIDATE_CLOCKS = 4
"""Disagreeing clocks a market may hold before its first boundary; beyond, the smallest goes."""
MAX_TICKS_PER_CANDIDATE = 10_000
"""Ticks a candidate clock may hold before it passes a boundary."""


class MarketStage:
    """Slot cutters and forecasters for the catalogue markets whose ticks reach this stage.

    Each boundary a market passes yields the market's :class:`PublishedForecast` of
    ``horizon`` slots and a :class:`MarketBoundary` (module doc).
    """

    name = "market"
    accepts = (PriceTick, AvailabilityTick)

    def __init__(
        self,
        catalogue: Sequence[Market],
        slot_seconds: float,
        forecaster: MarketFactory | None = None,
        horizon: int = OUTLOOK_HORIZON,
        max_future_skew: float = DEFAULT_MAX_FUTURE_SKEW_SECONDS,
        written: Written | None = None,
    ) -> None:
        self.catalogue = {m.key: m for m in catalogue}
        self.slot_seconds = slot_seconds
        self.forecaster = forecaster or market_factory()
        self.horizon = horizon
        self.max_future_skew = max_future_skew
        self.event_time: float | None = None
        """The latest boundary passed by any market of this stage."""
        self._clocks: dict[str, _MarketClock] = {}
        self._forecasters: dict[str, MarketForecaster] = {}
        self.written = Written() if written is None else written
        """Where the outlooks made are remembered for the runner's schedulers (a fresh one:
        the stage alone)."""

    decode = staticmethod(parse_event)
    """Ticks are read as they are: no stage of the runner writes them."""

    def handle(self, tick: PriceTick | AvailabilityTick,
               message: Message | None = None) -> list[StageOutput]:
        clock = self._clocks.get(tick.market)
        if clock is None:
            if tick.market not in self.catalogue:
                raise RejectedEvent(
                    f"market={tick.market!r}: expected a market of the catalogue "
                    f"({', '.join(sorted(self.catalogue))})"
                )
            clock = self._clocks[tick.market] = _MarketClock(self.slot_seconds,
                                                             self.max_future_skew)
        time = tick.event_time.timestamp()
        self._check_skew(tick, time, clock)
        if isinstance(tick, PriceTick):
            price, available = tick.spot_price, None
        else:
            price, available = None, tick.available
        closes, rejected = clock.update(time, price, available, message, self.event_time)
        if not closes and not rejected:
            return []
        out: list[StageOutput] = [*rejected]
        for close in closes:
            out.extend(self._forecast(tick.market, close))
            out.append(MarketBoundary(
                event_time=utc(close.boundary),
                market=tick.market,
                slot_seconds=self.slot_seconds,
                price=close.price,
                availability=close.availability,
                price_now=close.price_now,
                availability_now=close.availability_now,
            ))
        if closes:
            self.event_time = max(self.event_time or -math.inf, closes[-1].boundary)
        return out

    def _check_skew(self, tick: PriceTick | AvailabilityTick, time: float,
                    clock: _MarketClock) -> None:
        known = clock.last_time
        if self.event_time is not None and (known is None or self.event_time > known):
            known = self.event_time
        if known is not None and time > known + self.max_future_skew:
            raise RejectedEvent(
                f"event_time={tick.event_time.isoformat()}: more than max_future_skew="
                f"{self.max_future_skew:g} s ahead of market {tick.market!r} "
                f"({utc(known).isoformat()}); expected ticks in event-time order"
            )

    def _forecast(self, market: str, close: SlotClose) -> list[StageOutput]:
        """The market's forecast at ``close``'s boundary, once its forecaster has learnt the
        closed slot (a forecaster starts at the market's first boundary). A forecaster that
        raises is replaced by a fresh one at the next boundary (a :class:`Fault`); the boundary
        stands."""
        try:
            forecaster = self._forecasters.get(market)
            if forecaster is None:
                season = slot_seasonality(close.boundary, self.slot_seconds)
                forecaster = self._forecasters[market] = self.forecaster(season, self.horizon)
            elif close.price is not None and close.availability is not None:
                forecaster.learn_one(close.price, float(close.availability))
            return [_published(market, close.boundary, self.slot_seconds,
                               forecaster.outlook(self.horizon), self.written.outlooks)]
        except Exception as exc:
            self._forecasters.pop(market, None)
            return [Fault(self.name, exc)]


def _published(market: str, boundary: float, slot_seconds: float, made: MarketOutlook,
               remembered: MadeOutlooks) -> PublishedForecast:
    """The forecast event of an outlook (its wire form, :meth:`MarketOutlook.to_wire`; the
    outlook itself is ``remembered`` for the runner's schedulers)."""
    outlook = Outlook.model_validate(made.to_wire())
    remembered.remember(outlook, made)
    median = outlook.price[outlook.quantile_levels.index(0.5)]
    return PublishedForecast(
        event_time=utc(boundary), market=market, slot_seconds=slot_seconds, price=median,
        availability=outlook.capacity_probability, price_error=outlook.price_error,
        availability_error=outlook.availability_error, outlook=outlook)


@dataclass
class _Candidate:
    """A clock a market's first ticks may follow, and the messages of those ticks."""

    cutter: SlotCutter
    messages: list[Message] = field(default_factory=list)

    def takes(self, time: float, skew: float) -> bool:
        last = self.cutter.last_time
        return last is None or last <= time <= last + skew


class _MarketClock:
    """One market's slot cutter, chosen among candidates until its first boundary."""

    def __init__(self, slot_seconds: float, skew: float) -> None:
        self.slot_seconds = slot_seconds
        self.skew = skew
        self.cutter: SlotCutter | None = None
        self._candidates: list[_Candidate] = []

    @property
    def last_time(self) -> float | None:
        """The market's last tick once its clock is chosen."""
        return None if self.cutter is None else self.cutter.last_time

    def update(self, time: float, price: float | None, available: int | None,
               message: Message | None, stage_time: float | None,
               ) -> tuple[list[SlotClose], list[Rejection]]:
        """Apply a tick; returns the boundaries it passed and the ticks rejected on the way."""
        if self.cutter is not None:
            return _apply(self.cutter, time, price, available), []
        rejected = self._drop(lambda c: stage_time is not None
                              and (c.cutter.last_time or -math.inf) > stage_time + self.skew,
                              "further ahead than max_future_skew of the stage's event time")
        candidate = next((c for c in self._candidates if c.takes(time, self.skew)), None)
        if candidate is None:
            if len(self._candidates) >= MAX_CANDIDATE_CLOCKS:
                smallest = min(self._candidates, key=lambda c: len(c.messages))
                rejected += self._drop(lambda c: c is smallest, "outnumbered by other ticks")
            candidate = _Candidate(SlotCutter(self.slot_seconds))
            self._candidates.append(candidate)
        if len(candidate.messages) >= MAX_TICKS_PER_CANDIDATE:
            raise RejectedEvent(
                f"tick time={time!r}: the market has taken {MAX_TICKS_PER_CANDIDATE} ticks "
                "without passing a boundary; expected ticks that advance in event time")
        closes = _apply(candidate.cutter, time, price, available)
        if not closes:
            if message is not None:
                candidate.messages.append(message)
            return [], rejected
        self.cutter = candidate.cutter
        rejected += self._drop(lambda c: c is not candidate,
                               f"another clock passed the boundary {utc(closes[0].boundary)} "
                               "first")
        return closes, rejected

    def _drop(self, doomed, why: str) -> list[Rejection]:
        """Remove the candidates ``doomed`` picks; their ticks become rejections."""
        out = []
        for candidate in [c for c in self._candidates if doomed(c)]:
            self._candidates.remove(candidate)
            for message in candidate.messages:
                out += rejection(message, RejectedEvent(
                    f"tick on a clock the market did not follow ({why}); expected ticks in "
                    "event-time order"))
        return out


def _apply(cutter: SlotCutter, time: float, price: float | None,
           available: int | None) -> list[SlotClose]:
    passes = cutter.boundaries_before(time)
    if passes > MAX_BOUNDARIES_PER_TICK:
        raise RejectedEvent(
            f"tick time={time!r} would pass {passes:,} slot boundaries at once; expected at "
            f"most {MAX_BOUNDARIES_PER_TICK:,}")
    try:
        return cutter.update(time, price=price, available=available)
    except LateTickError as exc:
        raise RejectedEvent(f"late tick: {exc}") from exc
