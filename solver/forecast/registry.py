"""Forecasters by name, so that the model in use is a setting: price and availability models,
and the baselines reported beside them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from solver.forecast.base import Forecaster, Seasonality
from solver.forecast.baselines import MovingAverage, Persistence, SeasonalNaive
from solver.forecast.drift import LearnedDrift
from solver.forecast.holt_winters import HoltWintersPrice
from solver.forecast.levels import CapacityLevels
from solver.forecast.market import MarketForecaster
from solver.forecast.markov import MarkovAvailability
from solver.forecast.semi_markov import SemiMarkovAvailability
from solver.forecast.snarimax import SnarimaxPrice

SeriesFactory = Callable[[Seasonality], Forecaster]
MarketFactory = Callable[[Seasonality, int], MarketForecaster]
"""Builds a fresh market forecaster for a slot cycle and an error-tracking window."""

BASELINES: Mapping[str, SeriesFactory] = MappingProxyType({
    "persistence": lambda season: Persistence(),
    "seasonal-naive": lambda season: SeasonalNaive(season.period),
    "moving-average": lambda season: MovingAverage(season.period),
})
"""Baselines for either series; seasonal naive repeats the last cycle (day, or week for slots
of a day or more), the moving average spans one cycle."""

PRICE_MODELS: Mapping[str, SeriesFactory] = MappingProxyType({
    "learned-drift": lambda season: LearnedDrift(),
    "holt-winters": lambda season: HoltWintersPrice(),
    "snarimax": lambda season: SnarimaxPrice(),
    **BASELINES,
})

AVAILABILITY_MODELS: Mapping[str, SeriesFactory] = MappingProxyType({
    "semi-markov": lambda season: SemiMarkovAvailability(season.period, season.phase),
    "markov": lambda season: MarkovAvailability(season.period, season.phase),
    **BASELINES,
})

DEFAULT_PRICE_MODEL = "learned-drift"
DEFAULT_AVAILABILITY_MODEL = "semi-markov"


@dataclass(frozen=True, slots=True)
class NamedMarketFactory:
    """Builds market forecasters with the named price and availability models; a plain value,
    so a stage holding one can be snapshotted."""

    price: str = DEFAULT_PRICE_MODEL
    availability: str = DEFAULT_AVAILABILITY_MODEL

    def __call__(self, season: Seasonality, window: int) -> MarketForecaster:
        return MarketForecaster(
            PRICE_MODELS[self.price](season), AVAILABILITY_MODELS[self.availability](season),
            window, CapacityLevels(season.period),
        )


def market_factory(
    price: str = DEFAULT_PRICE_MODEL, availability: str = DEFAULT_AVAILABILITY_MODEL
) -> MarketFactory:
    """A factory of market forecasters with the named price and availability models."""
    for role, name, known in (
        ("price", price, PRICE_MODELS),
        ("availability", availability, AVAILABILITY_MODELS),
    ):
        if name not in known:
            raise ValueError(f"{role} model={name!r}: expected one of {', '.join(known)}")
    return NamedMarketFactory(price, availability)


def baseline_factories() -> dict[str, MarketFactory]:
    """Each baseline used for both series, by name."""
    return {name: market_factory(name, name) for name in BASELINES}
