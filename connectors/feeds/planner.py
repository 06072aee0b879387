"""Which ticks a feed publishes for a market: a deterministic function of the price history.

Clouds report price *changes* only, and the market stage passes a slot boundary only when a
market ticks after it, so a quiet market would hold every epoch open. A feed therefore
publishes, from its start on:

* a price tick at every price change;
* a price tick with the price in force at every multiple of ``heartbeat_seconds`` since the
  Unix epoch (a change at that instant is the same tick, published once): the first heartbeat
  after a slot boundary lets every market pass it;
* an availability tick (reason ``probe``) with the assumed count at every slot boundary
  (multiples of ``slot_seconds``): each slot starts with the assumption that a fresh spot
  request is fulfilled, and refusals or preemptions a connector reports during the slot lower
  it until the next boundary.

At one instant the price tick comes first (rank 0), then the availability tick (rank 1); the
``(time, rank)`` pair is a tick's position in the sequence. A feed starts on a slot boundary,
which the heartbeat divides, so its sequence is the same whenever it starts or resumes: a
restarted feed continues after the last position it finds on the topic and publishes exactly
the ticks it would have published without the restart.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from connectors.feeds.base import PriceChange
from solver.market import Market
from streams.contract import AvailabilityTick, PriceTick, utc

PRICE, AVAILABILITY = 0, 1
"""Ranks of the two kinds of tick at one instant."""

Position = tuple[float, int]
"""``(event time, rank)``: where a tick sits in a market's sequence."""

FeedTick = PriceTick | AvailabilityTick


@dataclass(frozen=True, slots=True)
class FeedGrid:
    """The heartbeat and slot grids, and the availability a slot starts with."""

    heartbeat_seconds: float
    slot_seconds: float
    available: int

    def __post_init__(self) -> None:
        if not (math.isfinite(self.heartbeat_seconds) and self.heartbeat_seconds > 0):
            raise ValueError(f"--heartbeat-seconds {self.heartbeat_seconds!r}: expected a "
                             "positive number of seconds")
        ratio = self.slot_seconds / self.heartbeat_seconds
        if ratio < 1 or abs(ratio - round(ratio)) > 1e-9:
            raise ValueError(
                f"--heartbeat-seconds {self.heartbeat_seconds:g}: expected a divisor of the slot "
                f"length {self.slot_seconds:g} s, so every slot boundary is a heartbeat")
        if self.available < 0:
            raise ValueError(f"--available {self.available}: expected a count >= 0")

    def slot_start(self, time: float) -> float:
        """The slot boundary at or before ``time``: where a feed starts."""
        return math.floor(time / self.slot_seconds) * self.slot_seconds


def position(tick: FeedTick) -> Position:
    return tick.event_time.timestamp(), PRICE if isinstance(tick, PriceTick) else AVAILABILITY


def is_feed_tick(tick: object) -> bool:
    """A tick of the kinds a feed publishes (connectors publish other availability reasons)."""
    return isinstance(tick, PriceTick) or (
        isinstance(tick, AvailabilityTick) and tick.reason == "probe")


def plan(market: Market, changes: Sequence[PriceChange], after: Position, until: float,
         grid: FeedGrid) -> list[FeedTick]:
    """The market's ticks positioned after ``after`` and at or before ``until``, in order.

    ``changes`` must include the change in force at ``after``'s time; before the first known
    change no price tick is planned.
    """
    start = after[0]
    times = {(c.time, PRICE) for c in changes if start <= c.time <= until}
    times |= {(t, PRICE) for t in _multiples(grid.heartbeat_seconds, start, until)}
    times |= {(t, AVAILABILITY) for t in _multiples(grid.slot_seconds, start, until)}
    change_times = [c.time for c in changes]
    ticks: list[FeedTick] = []
    for time, rank in sorted(p for p in times if p > after):
        if rank == AVAILABILITY:
            ticks.append(AvailabilityTick(event_time=utc(time), market=market.key,
                                          available=grid.available, reason="probe"))
            continue
        index = bisect.bisect_right(change_times, time) - 1
        if index >= 0:
            ticks.append(PriceTick(event_time=utc(time), market=market.key,
                                   spot_price=changes[index].price,
                                   on_demand_price=market.on_demand_price))
    return ticks


def _multiples(step: float, start: float, end: float) -> list[float]:
    """Multiples of ``step`` in ``[start, end]``."""
    first, last = math.ceil(start / step), math.floor(end / step)
    return [k * step for k in range(first, last + 1)]
