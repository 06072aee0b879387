"""One market's forecaster: a price model, an availability model, a capacity level model and
their error tracker; it learns slot by slot and gives the market's :class:`MarketOutlook`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solver.forecast.base import Described, Forecaster, check_horizon, check_price
from solver.forecast.levels import CapacityLevels
from solver.forecast.outlook import QUANTILE_LEVELS, CapacityForecast, MarketOutlook, RunState
from solver.forecast.semi_markov import SemiMarkovAvailability
from solver.forecast.tracking import ErrorTracker


@dataclass(frozen=True)
class MarketForecast:
    """What one market is expected to do over the next slots (read-only arrays).

    ``price``: slot-mean spot price, USD per instance-hour; ``availability``: probability that
    the slot has spot capacity for its whole length. ``NaN`` where nothing is known yet.
    """

    price: np.ndarray
    availability: np.ndarray

    def __post_init__(self) -> None:
        if self.price.shape != self.availability.shape:
            raise ValueError(
                f"market forecast price shape {self.price.shape} and availability shape "
                f"{self.availability.shape}: expected the same horizon"
            )
        self.price.setflags(write=False)
        self.availability.setflags(write=False)


class MarketForecaster(Described):
    """Forecasts one market, slot by slot, and tracks its own errors.

    ``price`` learns the slot-mean spot price; ``availability`` learns the indicator of spot
    capacity (1.0 when the slot's count is > 0, 0.0 when it is 0) and forecasts its probability.
    After each slot the forecaster forecasts ``window`` slots ahead and ``errors`` scores those
    forecasts as the true slots arrive. The two models learn in place.
    """

    def __init__(self, price: Forecaster, availability: Forecaster, window: int = 24,
                 levels: CapacityLevels | None = None) -> None:
        self.price = price
        self.availability = availability
        self.window = window
        self.levels = levels if levels is not None else CapacityLevels()
        self._errors = ErrorTracker(window)
        self._ahead: MarketForecast | None = None  # the next ``window`` slots, once forecast

    @property
    def errors(self) -> ErrorTracker:
        """The errors of this forecaster's own forecasts so far."""
        return self._errors

    def learn_one(self, price: float, availability: float) -> None:
        """Learn the next slot: its mean spot price and its spot capacity (``NaN`` when
        unobserved)."""
        price = check_price(price)
        count = float(availability)
        if not (math.isnan(count) or (math.isfinite(count) and count >= 0)):
            raise ValueError(
                f"availability={availability!r}: expected a count >= 0, or NaN for an "
                "unobserved slot"
            )
        self._errors.observe(price, count)
        self._ahead = None
        self.price.learn_one(price)
        self.availability.learn_one(count if math.isnan(count) else float(count > 0))
        self.levels.learn_one(count)
        ahead = self.forecast(self.window)
        self._errors.record(ahead.price, ahead.availability)

    def forecast(self, horizon: int) -> MarketForecast:
        """The next ``horizon`` slots (those of the error-tracking window forecast once per
        slot learned: the error tracker and the outlook read the same)."""
        horizon = check_horizon(horizon)
        if self._ahead is not None and len(self._ahead.price) == horizon:
            return self._ahead
        ahead = MarketForecast(self.price.forecast(horizon), self.availability.forecast(horizon))
        if horizon == self.window:
            self._ahead = ahead
        return ahead

    def outlook(self, horizon: int) -> MarketOutlook:
        """The probabilistic forecast of the next ``horizon`` slots (:mod:`.outlook`)."""
        horizon = check_horizon(horizon)
        ahead = self.forecast(horizon)
        offsets = self._errors.price_quantile_offsets(QUANTILE_LEVELS)
        offsets = offsets[:, np.minimum(np.arange(horizon), self.window - 1)]
        model = self.availability
        run = hazards = None
        since = 0
        if isinstance(model, SemiMarkovAvailability) and model.state >= 0:
            run = RunState(model.state, model.age, model.since)
            hazards = model.hazards()
            since = model.since
        levels = self.levels.snapshot()
        capacity = CapacityForecast(
            np.where(np.isnan(ahead.availability), 0.0, ahead.availability),
            levels.distribution(np.arange(since + 1, since + horizon + 1)))
        return MarketOutlook(
            price=ahead.price[None, :] * np.exp(offsets), capacity=capacity, levels=levels,
            hazards=hazards, run=run, price_error=self._errors.price_error,
            availability_error=self._errors.availability_error)
