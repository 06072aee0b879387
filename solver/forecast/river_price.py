"""What the price forecasters built on a river time-series model share: they feed it the log
price (or a rescaled one), skip unobserved slots and start from the last price."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from solver.forecast.base import Described, check_horizon, check_price, unknown


class RiverLogPrice(Described):
    """A river time-series ``model`` on :meth:`_scale` of the log price.

    Unobserved slots are skipped (the model sees only observed prices); horizons count from the
    last observed slot. Until ``warmup`` prices have been observed the forecast is the last
    price.
    """

    def __init__(self, model: Any, warmup: int) -> None:
        self._model = model
        self._warmup = warmup
        self._observed = 0
        self._last = math.nan
        self._since = 0

    def learn_one(self, y: float) -> None:
        price = check_price(y)
        if math.isnan(price):
            self._since += 1
            return
        self._model.learn_one(self._scale(math.log(price)))
        self._observed += 1
        self._last = price
        self._since = 0

    def forecast(self, horizon: int) -> np.ndarray:
        horizon = check_horizon(horizon)
        if math.isnan(self._last):
            return unknown(horizon)
        if self._observed < self._warmup:
            return np.full(horizon, self._last)
        scaled = np.array(self._model.forecast(self._since + horizon)[self._since :])
        prices: np.ndarray = np.exp(self._unscale(scaled))
        return prices

    def _scale(self, log_price: float) -> float:
        """What the model learns from a log price (itself by default)."""
        return log_price

    def _unscale(self, scaled: np.ndarray) -> np.ndarray:
        """Log prices from what the model forecasts (the inverse of :meth:`_scale`)."""
        return scaled
