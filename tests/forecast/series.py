"""Small series and forecaster makers shared by the forecaster tests."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from solver.forecast import (
    Forecaster,
    HoltWintersPrice,
    LearnedDrift,
    MarketForecaster,
    MarkovAvailability,
    MovingAverage,
    Persistence,
    SeasonalNaive,
    SnarimaxPrice,
)
from solver.market import Market, MarketData


def markets(price, availability, slot_seconds: float = 3600.0) -> MarketData:
    """Market data of ``price`` and ``availability`` series (a row per zone), from time 0."""
    price = np.atleast_2d(np.asarray(price, float))
    zones = [Market("aws", "us-east-1", f"us-east-1{z}", "p3.2xlarge", 3.06) for z in "abcdef"]
    return MarketData.from_slots(zones[: price.shape[0]], 0.0, slot_seconds, price,
                                 np.atleast_2d(np.asarray(availability, int)))


PRICE_FORECASTERS: dict[str, Callable[[], Forecaster]] = {
    "learned-drift": LearnedDrift,
    "holt-winters": HoltWintersPrice,
    "snarimax": SnarimaxPrice,
    "persistence": Persistence,
    "seasonal-naive": lambda: SeasonalNaive(24),
    "moving-average": lambda: MovingAverage(24),
}

AVAILABILITY_FORECASTERS: dict[str, Callable[[], Forecaster]] = {
    "markov": lambda: MarkovAvailability(24, 5),
    "persistence": Persistence,
    "seasonal-naive": lambda: SeasonalNaive(24),
    "moving-average": lambda: MovingAverage(24),
}


def step_prices(n: int = 300, seed: int = 0) -> np.ndarray:
    """A step-shaped price: rare small jumps on a slow drift, with a regime shift (×3) at 2/3."""
    rng = np.random.default_rng(seed)
    jumps = np.where(rng.random(n) < 0.15, rng.normal(0.002, 0.006, n), 0.0)
    jumps[2 * n // 3] = np.log(3.0)
    return 1.2 * np.exp(np.cumsum(jumps))


def capacity(n: int = 300, seed: int = 0) -> np.ndarray:
    """0/1 spot capacity with runs that depend on the hour of the day."""
    rng = np.random.default_rng(seed)
    hours = np.arange(n) % 24
    return ((hours < 14) & (rng.random(n) < 0.9) | (rng.random(n) < 0.1)).astype(float)


def with_gaps(values: np.ndarray, every: int = 17) -> np.ndarray:
    """A copy with every ``every``-th slot unobserved and a gap of five slots in the middle."""
    out = values.astype(float)
    out[::every] = np.nan
    middle = len(out) // 2
    out[middle : middle + 5] = np.nan
    return out


def market_forecaster(price: str = "learned-drift", availability: str = "markov",
                      window: int = 24) -> MarketForecaster:
    return MarketForecaster(PRICE_FORECASTERS[price](),
                            AVAILABILITY_FORECASTERS[availability](), window)


PERIOD = 24
"""Slots per cycle of :func:`true_hazard`."""


def true_hazard(state: int, age: int, position: int) -> float:
    """Runs last at least two slots; capacity runs end faster in the second half of the day,
    young runs end faster than old ones."""
    if age <= 2:
        return 0.0
    if state == 1:
        base = 0.15 if age <= 4 else 0.04
        return base * (2.0 if position >= PERIOD // 2 else 1.0)
    return 0.3 if age <= 8 else 0.1


def semi_markov_series(n: int, seed: int) -> np.ndarray:
    """``n`` slots of 0/1 capacity drawn with :func:`true_hazard`, slot 0 at the cycle's start."""
    rng = np.random.default_rng(seed)
    out = np.empty(n)
    state, age = 1, 1
    for t in range(n):
        out[t] = state
        if rng.random() < true_hazard(state, age, (t + 1) % PERIOD):
            state, age = 1 - state, 1
        else:
            age += 1
    return out
