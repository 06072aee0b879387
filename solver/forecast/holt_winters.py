"""Holt's linear trend (river ``HoltWinters`` without a season) on the log price."""

from __future__ import annotations

import math

import numpy as np
from river import time_series

from solver.forecast.base import Described, check_horizon, check_price, unknown


class HoltWintersPrice(Described):
    """river's ``HoltWinters(alpha, beta)`` on the log price: a smoothed level plus a smoothed
    trend, so the price forecast follows a constant growth rate and stays positive.

    Unobserved slots are skipped (the model sees only observed prices); horizons count from the
    last observed slot. Until river has the two prices it needs to start, the forecast is the
    last price.
    """

    def __init__(self, alpha: float = 0.8, beta: float | None = 0.05) -> None:
        self.alpha = alpha
        self.beta = beta
        self._model = time_series.HoltWinters(alpha=alpha, beta=beta)
        self._observed = 0
        self._last = math.nan
        self._since = 0

    def learn_one(self, y: float) -> None:
        price = check_price(y)
        if math.isnan(price):
            self._since += 1
            return
        self._model.learn_one(math.log(price))
        self._observed += 1
        self._last = price
        self._since = 0

    def forecast(self, horizon: int) -> np.ndarray:
        horizon = check_horizon(horizon)
        if math.isnan(self._last):
            return unknown(horizon)
        if self._observed < 2:
            return np.full(horizon, self._last)
        return np.exp(self._model.forecast(self._since + horizon)[self._since :])
