"""Progressive validation of forecasters on market data: learn a slot, forecast the slots
ahead, score each forecast when its slot arrives."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from solver.forecast.base import slot_seasonality
from solver.forecast.market import MarketForecast, MarketForecaster
from solver.forecast.registry import MarketFactory
from solver.market import MarketData

DEFAULT_HORIZONS = (1, 6, 12, 24)


@dataclass(frozen=True)
class SeriesScores:
    """Errors of one forecaster on one market at the reported horizons (``NaN`` where nothing
    was scored): price MAE (USD per instance-hour), price MAPE (percent), availability Brier
    score and log-loss, the tracker's final smoothed errors, and the calibration counts per
    horizon (:attr:`~solver.forecast.tracking.ErrorTracker.calibration`)."""

    price_mae: Mapping[int, float]
    price_mape: Mapping[int, float]
    availability_brier: Mapping[int, float]
    price_error: float
    availability_error: float
    availability_log_loss: Mapping[int, float] = field(default_factory=dict)
    calibration: Mapping[int, np.ndarray] = field(default_factory=dict)


def check_horizons(horizons: Sequence[int]) -> tuple[int, ...]:
    """Distinct whole horizons >= 1, ascending."""
    if not horizons or any(
        isinstance(h, bool) or not isinstance(h, int | np.integer) or h < 1 for h in horizons
    ):
        raise ValueError(f"horizons={horizons!r}: expected one or more whole numbers of slots >= 1")
    return tuple(sorted({int(h) for h in horizons}))


def evaluate_series(
    price: np.ndarray,
    availability: np.ndarray,
    forecaster: MarketForecaster,
    horizons: Sequence[int] = DEFAULT_HORIZONS,
) -> SeriesScores:
    """Replay one market's slots through ``forecaster`` (which learns in place) and read its
    errors at ``horizons``; ``forecaster.window`` must reach the longest horizon."""
    horizons = check_horizons(horizons)
    if forecaster.window < horizons[-1]:
        raise ValueError(
            f"forecaster window={forecaster.window}: expected at least the longest horizon "
            f"{horizons[-1]}"
        )
    if len(price) != len(availability):
        raise ValueError(
            f"price of {len(price)} slots and availability of {len(availability)} slots: "
            "expected the same length"
        )
    for p, a in zip(price.tolist(), availability.tolist(), strict=True):
        forecaster.learn_one(p, a)
    errors = forecaster.errors

    def at(values: np.ndarray) -> dict[int, float]:
        return {h: float(values[h - 1]) for h in horizons}

    return SeriesScores(
        price_mae=at(errors.price_mae),
        price_mape=at(errors.price_mape),
        availability_brier=at(errors.availability_brier),
        price_error=errors.price_error,
        availability_error=errors.availability_error,
        availability_log_loss=at(errors.availability_log_loss),
        calibration={h: errors.calibration[h - 1] for h in horizons},
    )


def evaluate_markets(
    markets: MarketData,
    factories: Mapping[str, MarketFactory],
    horizons: Sequence[int] = DEFAULT_HORIZONS,
) -> dict[str, dict[str, SeriesScores]]:
    """Scores by forecaster name, then market key: every market replayed through a fresh
    forecaster from each factory (slot-mean prices, whole-slot availability)."""
    horizons = check_horizons(horizons)
    season = slot_seasonality(markets.origin, markets.slot_seconds)
    return {
        name: {
            market.key: evaluate_series(
                markets.price[row], markets.availability[row], factory(season, horizons[-1]),
                horizons,
            )
            for row, market in enumerate(markets.markets)
        }
        for name, factory in factories.items()
    }


def forecast_from(
    price: np.ndarray, availability: np.ndarray, forecaster: MarketForecaster, slot: int,
    horizon: int,
) -> MarketForecast:
    """The forecast of ``horizon`` slots made after learning slots ``0 .. slot``."""
    if not 0 <= slot < len(price):
        raise ValueError(f"slot={slot!r}: expected 0 <= slot < {len(price)}")
    for p, a in zip(price[: slot + 1].tolist(), availability[: slot + 1].tolist(), strict=True):
        forecaster.learn_one(p, a)
    return forecaster.forecast(horizon)


def mean_over_markets(scores: Mapping[str, SeriesScores], field: str) -> dict[int, float]:
    """The mean of one per-horizon field over markets, ignoring markets with nothing scored."""
    by_market = [getattr(s, field) for s in scores.values()]
    horizons = by_market[0].keys() if by_market else ()
    return {h: _nanmean([m[h] for m in by_market]) for h in horizons}


def _nanmean(values: list[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return math.fsum(kept) / len(kept) if kept else math.nan
