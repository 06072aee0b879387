"""Markets, raw market ticks, and the slotted market series the scheduler works on.

Slot rules (documented in the README, relied on by every policy):

* The slot grid is aligned to multiples of the slot length ``slot_seconds`` counted from an
  ``anchor`` (default: Unix time 0), so a replay and a live stream cut the same slots; a
  trace whose ticks are the slots (Can't Be Late) anchors the grid at its first tick.
  Slot 0 is the first slot that starts at or after the earliest tick of every market; the last
  slot is the last one that ends before the latest tick of every market.
* A tick's value holds from its timestamp until the next tick (a step function).
* The slot's **price** is the time-weighted mean of that step function over the slot.
* The slot's **availability** is the smallest count in force at any moment of the slot, so a
  refusal or a preemption inside the slot makes the whole slot unavailable.
* The **boundary** price and availability are the values in force at the slot's first instant:
  what a scheduler deciding at the boundary can observe for the slot it is about to run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from solver.slotting import SlotClose, SlotCutter
from solver.timefmt import iso_utc

SECONDS_PER_HOUR = 3600.0


def hours_to_slots(hours: float, slot_seconds: float,
                   rounding: Callable[[float], int] = round) -> int:
    """``hours`` as a whole number of slots of ``slot_seconds``, at least one: the nearest by
    default, or as ``rounding`` rounds the fraction (:func:`math.ceil`: the slots that cover
    them)."""
    return max(1, rounding(hours * SECONDS_PER_HOUR / slot_seconds))


@dataclass(frozen=True, slots=True)
class Market:
    """One spot market: a cloud, region, zone and instance type, with its on-demand price."""

    cloud: str
    region: str
    zone: str
    instance_type: str
    on_demand_price: float

    def __post_init__(self) -> None:
        for name in ("cloud", "region", "zone", "instance_type"):
            value = getattr(self, name)
            if not value or "/" in value:
                raise ValueError(
                    f"market {name}={value!r}: expected a non-empty name without '/'"
                )
        if not (math.isfinite(self.on_demand_price) and self.on_demand_price > 0):
            raise ValueError(
                f"market on_demand_price={self.on_demand_price!r}: expected a positive finite "
                "USD per instance-hour"
            )

    @property
    def key(self) -> str:
        """Stable identifier ``cloud/region/zone/instance_type`` used on the wire."""
        return f"{self.cloud}/{self.region}/{self.zone}/{self.instance_type}"

    @staticmethod
    def parse_key(key: str, on_demand_price: float) -> Market:
        """Build a market from its ``cloud/region/zone/instance_type`` key."""
        parts = key.split("/")
        if len(parts) != 4:
            raise ValueError(
                f"market key {key!r}: expected 'cloud/region/zone/instance_type'"
            )
        cloud, region, zone, instance_type = parts
        return Market(cloud, region, zone, instance_type, on_demand_price)


@dataclass(frozen=True)
class MarketTicks:
    """Irregular observations of one market: times (Unix seconds, strictly increasing),
    spot price (USD per instance-hour) and spot availability (instances obtainable)."""

    market: Market
    times: np.ndarray
    prices: np.ndarray
    available: np.ndarray

    def __post_init__(self) -> None:
        times = np.asarray(self.times, dtype=float)
        prices = np.asarray(self.prices, dtype=float)
        available = np.asarray(self.available, dtype=np.int64)
        n = len(times)
        if n == 0:
            raise ValueError(f"market {self.market.key}: expected at least one tick, got none")
        if len(prices) != n or len(available) != n:
            raise ValueError(
                f"market {self.market.key}: times, prices and available must have the same "
                f"length, got {n}, {len(prices)}, {len(available)}"
            )
        steps = np.diff(times)
        if np.any(steps <= 0):
            i = int(np.argmax(steps <= 0)) + 1
            raise ValueError(
                f"market {self.market.key}: tick {i} time={iso_utc(float(times[i]))} is not "
                f"after tick {i - 1} time={iso_utc(float(times[i - 1]))}; expected strictly "
                "increasing times"
            )
        bad = ~np.isfinite(prices) | (prices < 0)
        if np.any(bad):
            i = int(np.argmax(bad))
            raise ValueError(
                f"market {self.market.key}: tick {i} price={float(prices[i])}; expected a finite "
                "price >= 0"
            )
        if np.any(available < 0):
            i = int(np.argmax(available < 0))
            raise ValueError(
                f"market {self.market.key}: tick {i} available={int(available[i])}; expected a "
                "count >= 0"
            )
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "prices", prices)
        object.__setattr__(self, "available", available)


@dataclass(frozen=True)
class MarketData:
    """Several markets on one common slot grid. Arrays are ``(markets, slots)``."""

    markets: tuple[Market, ...]
    origin: float
    slot_seconds: float
    price: np.ndarray
    availability: np.ndarray
    boundary_price: np.ndarray
    boundary_availability: np.ndarray
    index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        shape = (len(self.markets), self.price.shape[1] if self.price.ndim == 2 else -1)
        for name in ("price", "availability", "boundary_price", "boundary_availability"):
            if getattr(self, name).shape != shape:
                raise ValueError(
                    f"market data {name} has shape {getattr(self, name).shape}, expected {shape}"
                )
            getattr(self, name).setflags(write=False)
        keys = [m.key for m in self.markets]
        if len(set(keys)) != len(keys):
            raise ValueError(f"market data: duplicate market keys in {keys}")
        object.__setattr__(self, "index", {k: i for i, k in enumerate(keys)})

    @property
    def n_slots(self) -> int:
        return int(self.price.shape[1])

    @property
    def slot_hours(self) -> float:
        return self.slot_seconds / SECONDS_PER_HOUR

    @property
    def on_demand_prices(self) -> np.ndarray:
        return np.array([m.on_demand_price for m in self.markets], dtype=float)

    def slot_start(self, slot: int) -> float:
        return self.origin + slot * self.slot_seconds

    def slot_of(self, time: float) -> int:
        """Index of the slot containing ``time`` (may be negative or past the end)."""
        return math.floor((time - self.origin) / self.slot_seconds)

    def window(self, first: int, n_slots: int) -> MarketData:
        """The sub-grid of slots ``first .. first + n_slots - 1``."""
        if first < 0 or n_slots <= 0 or first + n_slots > self.n_slots:
            raise ValueError(
                f"window first={first} n_slots={n_slots}: expected inside 0..{self.n_slots}"
            )
        cut = slice(first, first + n_slots)
        return MarketData(
            markets=self.markets,
            origin=self.slot_start(first),
            slot_seconds=self.slot_seconds,
            price=self.price[:, cut].copy(),
            availability=self.availability[:, cut].copy(),
            boundary_price=self.boundary_price[:, cut].copy(),
            boundary_availability=self.boundary_availability[:, cut].copy(),
        )

    @staticmethod
    def from_slots(
        markets: Sequence[Market],
        origin: float,
        slot_seconds: float,
        price: np.ndarray,
        availability: np.ndarray,
    ) -> MarketData:
        """Market data whose values change only at slot boundaries (boundary = slot value)."""
        price = np.asarray(price, dtype=float)
        availability = np.asarray(availability, dtype=np.int64)
        return MarketData(
            markets=tuple(markets),
            origin=float(origin),
            slot_seconds=float(slot_seconds),
            price=price,
            availability=availability,
            boundary_price=price.copy(),
            boundary_availability=availability.copy(),
        )


def tick_slots(ticks: Sequence[MarketTicks], slot_seconds: float) -> MarketData:
    """Market data whose slot ``i`` is tick ``i`` of every market (Can't Be Late's rule: the
    ticks are nominally ``slot_seconds`` apart, whatever their timestamps say)."""
    if not ticks:
        raise ValueError("market ticks: expected at least one market, got none")
    lengths = {len(t.times) for t in ticks}
    if len(lengths) != 1:
        raise ValueError(
            f"market ticks: tick-indexed slots need the same tick count in every market, got "
            f"{sorted(lengths)}"
        )
    return MarketData.from_slots(
        [t.market for t in ticks],
        float(ticks[0].times[0]),
        slot_seconds,
        np.stack([t.prices for t in ticks]),
        np.stack([t.available for t in ticks]),
    )


def build_market_data(
    ticks: Sequence[MarketTicks], slot_seconds: float, anchor: float = 0.0
) -> MarketData:
    """Cut irregular ticks of several markets onto one slot grid (rules in the module doc)."""
    if not ticks:
        raise ValueError("market ticks: expected at least one market, got none")
    closes = [_closes(series, slot_seconds, anchor) for series in ticks]
    origin = max(c[0].boundary if c else math.inf for c in closes)
    per_market = [[c for c in market if c.boundary >= origin] for market in closes]
    n_slots = min(len(c) for c in per_market) - 1
    if not math.isfinite(origin) or n_slots <= 0:
        first = max(float(t.times[0]) for t in ticks)
        last = min(float(t.times[-1]) for t in ticks)
        raise ValueError(
            f"market ticks span {first!r}..{last!r} s, which holds no whole slot of "
            f"{slot_seconds} s common to all markets"
        )
    shape = (len(ticks), n_slots)
    price, b_price = np.empty(shape), np.empty(shape)
    avail, b_avail = np.empty(shape, dtype=np.int64), np.empty(shape, dtype=np.int64)
    for row, market in enumerate(per_market):
        b_price[row] = [c.price_now for c in market[:n_slots]]
        b_avail[row] = [c.availability_now for c in market[:n_slots]]
        closed = [_closed_values(c) for c in market[1 : n_slots + 1]]
        price[row] = [p for p, _ in closed]
        avail[row] = [a for _, a in closed]
    return MarketData(
        markets=tuple(t.market for t in ticks),
        origin=float(origin),
        slot_seconds=float(slot_seconds),
        price=price,
        availability=avail,
        boundary_price=b_price,
        boundary_availability=b_avail,
    )


def _closed_values(close: SlotClose) -> tuple[float, int]:
    """A closed slot's price and availability; a market's slots after its first are covered
    from their start, so they have both."""
    if close.price is None or close.availability is None:
        raise ValueError(f"slot ending at {close.boundary!r}: expected ticks covering it")
    return close.price, close.availability


def _closes(series: MarketTicks, slot_seconds: float, anchor: float) -> list[SlotClose]:
    cutter = SlotCutter(slot_seconds, anchor)
    out: list[SlotClose] = []
    for time, price, available in zip(
        series.times.tolist(), series.prices.tolist(), series.available.tolist(), strict=True
    ):
        out.extend(cutter.update(time, price, available))
    return out
