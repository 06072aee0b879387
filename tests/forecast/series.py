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
