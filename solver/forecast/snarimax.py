"""river ``SNARIMAX`` on the log price, in basis points of the first observed price."""

from __future__ import annotations

import math

import numpy as np
from river import base, linear_model, optim, time_series

from solver.forecast.drift import BASIS_POINTS
from solver.forecast.river_price import RiverLogPrice


def scaled_regressor() -> base.Regressor:
    """The default regressor: linear, no intercept, squared loss, AdaGrad steps (plain SGD on
    raw prices diverges)."""
    return linear_model.LinearRegression(optimizer=optim.AdaGrad(0.1), intercept_lr=0.0)


class SnarimaxPrice(RiverLogPrice):
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
        model = time_series.SNARIMAX(
            p=p, d=d, q=q, regressor=scaled_regressor() if regressor is None else regressor.clone()
        )
        super().__init__(model, warmup=p + d + q + 1)
        self._reference = math.nan

    def _scale(self, log_price: float) -> float:
        """Basis points of the first observed log price, which the first call fixes."""
        if math.isnan(self._reference):
            self._reference = log_price
        return (log_price - self._reference) * BASIS_POINTS

    def _unscale(self, scaled: np.ndarray) -> np.ndarray:
        return self._reference + scaled / BASIS_POINTS
