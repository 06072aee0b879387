"""A seeded synthetic spot market: the embedded default when no trace is given.

Each market's spot price is a step function around a market-specific level: a diurnal shape
(dearer in the zone's afternoon), rare regime shifts of the level, and changes only now and
then. Spot availability is a Markov on/off chain whose off-rate rises in busy hours; while on,
the obtainable instance count drifts between 1 and ``capacity``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solver.market import SECONDS_PER_HOUR, Market, MarketTicks

SYNTHETIC_START = 1736121600.0
"""2025-01-06T00:00:00Z, a Monday: where synthetic time begins."""

ZONES = (
    ("aws", "us-east-1", "us-east-1a", -5),
    ("aws", "us-east-1", "us-east-1c", -5),
    ("aws", "us-west-2", "us-west-2a", -8),
    ("aws", "us-west-2", "us-west-2b", -8),
    ("aws", "eu-west-1", "eu-west-1a", 0),
    ("aws", "eu-west-1", "eu-west-1b", 0),
    ("aws", "ap-northeast-1", "ap-northeast-1a", 9),
    ("aws", "ap-northeast-1", "ap-northeast-1c", 9),
)


@dataclass(frozen=True, slots=True)
class SyntheticMarketSpec:
    """Parameters of the synthetic market; every field has a sensible default."""

    seed: int = 0
    n_markets: int = 4
    days: float = 14.0
    tick_seconds: float = 300.0
    instance_type: str = "p3.2xlarge"
    on_demand_price: float = 3.06
    capacity: int = 8
    price_change_probability: float = 0.08
    regime_shifts_per_day: float = 0.3
    mean_on_hours: float = 10.0
    mean_off_hours: float = 3.0

    def __post_init__(self) -> None:
        if not 1 <= self.n_markets <= len(ZONES):
            raise ValueError(
                f"n_markets={self.n_markets}: expected between 1 and {len(ZONES)}"
            )
        for name in ("days", "tick_seconds", "on_demand_price", "mean_on_hours",
                     "mean_off_hours"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}={getattr(self, name)!r}: expected a positive number")
        if self.capacity < 1:
            raise ValueError(f"capacity={self.capacity}: expected at least 1 instance")


def synthetic_ticks(spec: SyntheticMarketSpec = SyntheticMarketSpec()) -> list[MarketTicks]:
    """Ticks every ``spec.tick_seconds`` for ``spec.n_markets`` markets, seeded by ``spec.seed``."""
    rng = np.random.default_rng(spec.seed)
    n_ticks = int(spec.days * 86400 / spec.tick_seconds) + 2  # the last slot closes too
    times = SYNTHETIC_START + spec.tick_seconds * np.arange(n_ticks)
    out = []
    for cloud, region, zone, utc_offset in ZONES[: spec.n_markets]:
        market = Market(cloud, region, zone, spec.instance_type, spec.on_demand_price)
        local_hour = ((times - SYNTHETIC_START) / SECONDS_PER_HOUR + utc_offset) % 24.0
        prices = _prices(rng, spec, local_hour)
        available = _availability(rng, spec, local_hour)
        out.append(MarketTicks(market, times.copy(), prices, available))
    return out


def _prices(rng: np.random.Generator, spec: SyntheticMarketSpec, hour: np.ndarray) -> np.ndarray:
    od = spec.on_demand_price
    n = len(hour)
    level = od * rng.uniform(0.3, 0.5)
    amplitude = rng.uniform(0.05, 0.15)
    shift_p = spec.regime_shifts_per_day * spec.tick_seconds / 86400.0
    prices = np.empty(n)
    current = level
    for i in range(n):
        if rng.random() < shift_p:
            level = float(np.clip(level * math.exp(rng.normal(0.0, 0.25)), 0.25 * od, 0.8 * od))
        if i == 0 or rng.random() < spec.price_change_probability:
            diurnal = 1.0 + amplitude * math.sin(2 * math.pi * (hour[i] - 9.0) / 24.0)
            noisy = level * diurnal * math.exp(rng.normal(0.0, 0.02))
            current = round(float(np.clip(noisy, 0.25 * od, od)), 4)
        prices[i] = current
    return prices


def _availability(
    rng: np.random.Generator, spec: SyntheticMarketSpec, hour: np.ndarray
) -> np.ndarray:
    step_h = spec.tick_seconds / SECONDS_PER_HOUR
    busy = 1.0 + 0.8 * np.sin(2 * math.pi * (hour - 8.0) / 24.0)
    off_rate = np.minimum(1.0, busy * step_h / spec.mean_on_hours)
    on_rate = min(1.0, step_h / spec.mean_off_hours)
    available = np.empty(len(hour), dtype=np.int64)
    count = int(rng.integers(1, spec.capacity + 1))
    on = rng.random() < spec.mean_on_hours / (spec.mean_on_hours + spec.mean_off_hours)
    for i in range(len(hour)):
        on = rng.random() >= off_rate[i] if on else rng.random() < on_rate
        if on and rng.random() < 0.1:
            count = int(np.clip(count + rng.choice((-1, 1)), 1, spec.capacity))
        available[i] = count if on else 0
    return available
