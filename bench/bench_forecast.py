"""Cost per call of every forecaster: ``learn_one`` and ``forecast(24)``, in µs.

Each forecaster learns a warm-up series; then one copy is timed learning the next slots and the
other forecasting. Ratios are against persistence timed in the same process.
Run: ``python bench/bench_forecast.py``.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable

import numpy as np
from rich.console import Console
from rich.table import Table

from solver.forecast import (
    AVAILABILITY_MODELS,
    PRICE_MODELS,
    ErrorTracker,
    Forecaster,
    MarketForecaster,
    Seasonality,
    market_factory,
)

HORIZON = 24
WARM_UP = 500
TIMED = 2000
TARGET_US = 100.0
SEASON = Seasonality(period=24, phase=0)


def series(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A step-shaped price with a slow trend and bursts of unavailability."""
    rng = np.random.default_rng(seed)
    steps = np.where(rng.random(n) < 0.15, rng.normal(0.0, 0.004, n), 0.0)
    price = 1.2 * np.exp(np.cumsum(steps))
    availability = (np.sin(np.arange(n) / 9.0) + rng.normal(0.0, 0.6, n) > 0).astype(float)
    return price, availability


def per_call_us(call: Callable[[int], object], calls: int, repeats: int = 3) -> float:
    """The best of ``repeats`` mean costs of ``calls`` calls."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(calls):
            call(i)
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def time_series_forecaster(
    make: Callable[[], Forecaster], values: np.ndarray
) -> tuple[float, float]:
    forecaster = make()
    for y in values[:WARM_UP].tolist():
        forecaster.learn_one(y)
    timed = values[WARM_UP : WARM_UP + TIMED].tolist()
    learner = copy.deepcopy(forecaster)
    learn = per_call_us(lambda i: learner.learn_one(timed[i]), TIMED)
    forecast = per_call_us(lambda i: forecaster.forecast(HORIZON), TIMED)
    return learn, forecast


def main() -> None:
    price, availability = series(WARM_UP + TIMED)
    rows: list[tuple[str, float, float]] = []
    for name, factory in PRICE_MODELS.items():
        rows.append((f"price {name}", *time_series_forecaster(lambda f=factory: f(SEASON), price)))
    for name, factory in AVAILABILITY_MODELS.items():
        rows.append((
            f"availability {name}",
            *time_series_forecaster(lambda f=factory: f(SEASON), availability),
        ))
    learn_market, forecast_market = _market_costs(price, availability)
    rows.append(("market (default models, tracked)", learn_market, forecast_market))
    tracker = ErrorTracker(HORIZON)
    forecast = np.ones(HORIZON)
    rows.append((
        "error tracker (observe + record)",
        per_call_us(lambda i: (tracker.observe(1.0, 1.0), tracker.record(forecast, forecast)),
                    TIMED),
        float("nan"),
    ))
    _print(rows)


def _market_costs(price: np.ndarray, availability: np.ndarray) -> tuple[float, float]:
    forecaster: MarketForecaster = market_factory()(SEASON, HORIZON)
    for p, a in zip(price[:WARM_UP].tolist(), availability[:WARM_UP].tolist(), strict=True):
        forecaster.learn_one(p, a)
    pairs = list(zip(price[WARM_UP:].tolist(), availability[WARM_UP:].tolist(), strict=True))
    learner = copy.deepcopy(forecaster)
    learn = per_call_us(lambda i: learner.learn_one(*pairs[i]), TIMED)
    forecast = per_call_us(lambda i: forecaster.forecast(HORIZON), TIMED)
    return learn, forecast


def _print(rows: list[tuple[str, float, float]]) -> None:
    base_learn, base_forecast = next((lr, fc) for n, lr, fc in rows if n == "price persistence")
    table = Table(title=f"forecaster cost per call (forecast horizon {HORIZON}, "
                        f"target < {TARGET_US:.0f} µs)")
    for column in ("forecaster", "learn_one µs", "× persistence", f"forecast({HORIZON}) µs",
                   "× persistence"):
        table.add_column(column, justify="left" if column == "forecaster" else "right")
    for name, learn, forecast in rows:
        table.add_row(
            name, _us(learn), f"{learn / base_learn:.1f}", _us(forecast),
            "-" if np.isnan(forecast) else f"{forecast / base_forecast:.1f}",
        )
    Console(width=120).print(table)


def _us(value: float) -> str:
    if np.isnan(value):
        return "-"
    flag = "" if value < TARGET_US else " !"
    return f"{value:.1f}{flag}"


if __name__ == "__main__":
    main()
