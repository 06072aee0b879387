"""river ``SNARIMAX`` on the log price, in basis points of the first observed price."""

from __future__ import annotations

import math

import numpy as np
from river import base, linear_model, optim, time_series

from solver.forecast.base import Described, check_horizon, check_price, unknown
from solver.forecast.drift import BASIS_POINTS


def scaled_regressor() -> base.Regressor:
    """The default regressor: linear, no intercept, squared loss, AdaGrad steps (plain SGD on
    raw prices diverges)."""
    return linear_model.LinearRegression(optimizer=optim.AdaGrad(0.1), intercept_lr=0.0)


class SnarimaxPrice(Described):
    """river's ``SNARIMAX(p, d, q)`` on ``10⁴ · log(price / first price)``.

    The log scale in basis points keeps the regressor's inputs near 1. Unobserved slots are
    skipped; horizons count from the last observed slot. Until ``p + d + q + 1`` prices have
    been observed the forecast is the last price.
    """

    def __init__(
        self, p: int = 1, d: int = 1, q: int = 0, regressor: base.Regressor | None = None
    ) -> None:
        self.p = p
        self.d = d
        self.q = q
        self.regressor = regressor
        self._model = time_series.SNARIMAX(
            p=p, d=d, q=q, regressor=scaled_regressor() if regressor is None else regressor.clone()
        )
        self._reference = math.nan
        self._observed = 0
        self._last = math.nan
        self._since = 0

    def learn_one(self, y: float) -> None:
        price = check_price(y)
        if math.isnan(price):
            self._since += 1
            return
        if math.isnan(self._reference):
            self._reference = math.log(price)
        self._model.learn_one((math.log(price) - self._reference) * BASIS_POINTS)
        self._observed += 1
        self._last = price
        self._since = 0

    def forecast(self, horizon: int) -> np.ndarray:
        horizon = check_horizon(horizon)
        if math.isnan(self._last):
            return unknown(horizon)
        if self._observed <= self.p + self.d + self.q:
            return np.full(horizon, self._last)
        scaled = np.array(self._model.forecast(self._since + horizon)[self._since :])
        return np.exp(self._reference + scaled / BASIS_POINTS)
