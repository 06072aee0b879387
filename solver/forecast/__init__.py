"""Online per-market forecasters of spot price and availability, their baselines, online error
tracking, and progressive validation on market data."""

from solver.forecast.base import Forecaster, Seasonality, slot_seasonality
from solver.forecast.baselines import MovingAverage, Persistence, SeasonalNaive
from solver.forecast.drift import LearnedDrift
from solver.forecast.evaluation import (
    DEFAULT_HORIZONS,
    SeriesScores,
    evaluate_markets,
    evaluate_series,
    forecast_from,
)
from solver.forecast.holt_winters import HoltWintersPrice
from solver.forecast.market import MarketForecast, MarketForecaster
from solver.forecast.markov import MarkovAvailability
from solver.forecast.registry import (
    AVAILABILITY_MODELS,
    BASELINES,
    DEFAULT_AVAILABILITY_MODEL,
    DEFAULT_PRICE_MODEL,
    PRICE_MODELS,
    MarketFactory,
    baseline_factories,
    market_factory,
)
from solver.forecast.snarimax import SnarimaxPrice
from solver.forecast.tracking import ErrorTracker

__all__ = [
    "AVAILABILITY_MODELS",
    "BASELINES",
    "DEFAULT_AVAILABILITY_MODEL",
    "DEFAULT_HORIZONS",
    "DEFAULT_PRICE_MODEL",
    "PRICE_MODELS",
    "ErrorTracker",
    "Forecaster",
    "HoltWintersPrice",
    "LearnedDrift",
    "MarketFactory",
    "MarketForecast",
    "MarketForecaster",
    "MarkovAvailability",
    "MovingAverage",
    "Persistence",
    "SeasonalNaive",
    "Seasonality",
    "SeriesScores",
    "SnarimaxPrice",
    "baseline_factories",
    "evaluate_markets",
    "evaluate_series",
    "forecast_from",
    "market_factory",
    "slot_seasonality",
]
