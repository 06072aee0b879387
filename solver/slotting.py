"""Cutting one market's irregular ticks into slots, one tick at a time.

Both the batch builder (:func:`solver.market.build_market_data`) and the streaming market agent
use :class:`SlotCutter`, so a trace gives bit-identical slots in-process and through Kafka.
A slot ``[b - Δ, b)`` closes when a tick strictly later than ``b`` arrives: only then are all
ticks at exactly ``b`` (which decide the values in force at ``b``) known.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


class LateTickError(ValueError):
    """A tick older than the last one seen for its market."""


@dataclass(frozen=True, slots=True)
class SlotClose:
    """A boundary ``b`` passed: the slot ``[b - Δ, b)`` and the values in force at ``b``.

    ``price`` (time-weighted mean) and ``availability`` (minimum) describe the closed slot and
    are ``None`` when the ticks did not cover it from its start.
    """

    boundary: float
    price: float | None
    availability: int | None
    price_now: float
    availability_now: int


class SlotCutter:
    """Incremental slot values of one market on the grid ``anchor + k * slot_seconds``.

    Boundaries start once both a price and an availability are known (they are then always
    known, so a closed boundary always carries values in force).
    """

    def __init__(self, slot_seconds: float, anchor: float = 0.0) -> None:
        if not (math.isfinite(slot_seconds) and slot_seconds > 0):
            raise ValueError(
                f"slot_seconds={slot_seconds!r}: expected a positive number of seconds"
            )
        self.slot_seconds = float(slot_seconds)
        self.anchor = float(anchor)
        self._last: float | None = None
        self._covered_from: float | None = None
        self._price: float | None = None
        self._price_since = 0.0
        self._available: int | None = None
        self._available_since = 0.0
        self._next: float | None = None
        self._integral = 0.0
        self._minimum: int | None = None

    @property
    def last_time(self) -> float | None:
        return self._last

    def boundaries_before(self, time: float) -> int:
        """How many boundaries a tick at ``time`` would pass (and :meth:`update` return)."""
        if self._next is None or time <= self._next:
            return 0
        return math.ceil((time - self._next) / self.slot_seconds)

    def update(
        self, time: float, price: float | None = None, available: int | None = None
    ) -> list[SlotClose]:
        """Apply a tick (either value may be absent); returns the boundaries it passed."""
        if self._last is not None and time < self._last:
            raise LateTickError(
                f"tick time={time!r} is before the market's last tick time={self._last!r}; "
                "expected ticks in event-time order"
            )
        closed = self._close_until(time)
        self._last = time
        if price is not None:
            self._fold_price(time)
            self._price, self._price_since = float(price), time
        if available is not None:
            self._fold_available(time)
            self._available, self._available_since = int(available), time
        if self._covered_from is None and self._price is not None and self._available is not None:
            self._covered_from = time
            self._next = self._first_boundary_at_or_after(time)
            self._integral, self._minimum = 0.0, None
        return closed

    def _first_boundary_at_or_after(self, time: float) -> float:
        k = math.ceil((time - self.anchor) / self.slot_seconds)
        return self.anchor + k * self.slot_seconds

    def _close_until(self, time: float) -> list[SlotClose]:
        closed: list[SlotClose] = []
        while self._next is not None and self._next < time:
            boundary = self._next
            self._fold_price(boundary)
            self._fold_available(boundary)
            covered = self._covered_from is not None and self._covered_from <= (
                boundary - self.slot_seconds
            )
            closed.append(
                SlotClose(
                    boundary=boundary,
                    price=self._integral / self.slot_seconds if covered else None,
                    availability=self._minimum if covered else None,
                    price_now=float(self._price or 0.0),
                    availability_now=int(self._available or 0),
                )
            )
            self._integral, self._minimum = 0.0, None
            self._next = boundary + self.slot_seconds
        return closed

    def _fold_price(self, until: float) -> None:
        """Add the current price's time in the open slot up to ``until``."""
        if self._price is None or self._next is None:
            return
        since = max(self._price_since, self._next - self.slot_seconds)
        if until > since:
            self._integral += self._price * (until - since)

    def _fold_available(self, until: float) -> None:
        """Count the current availability in the open slot if it held there before ``until``."""
        if self._available is None or self._next is None:
            return
        since = max(self._available_since, self._next - self.slot_seconds)
        if until > since:
            value = self._available
            self._minimum = value if self._minimum is None else min(self._minimum, value)
