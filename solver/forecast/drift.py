"""Persistence plus a learned drift: the default price model.

Spot prices move in rare small steps that follow slow trends. Under absolute error the best
forecast of such a series is its conditional median: no change for the next few slots (a step
is unlikely to fall in them), a share of the recent trend further ahead. The model learns that
share online, per horizon, with a river regressor under quantile (median) loss.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from river import base, linear_model, optim

from solver.forecast.base import Described, check_horizon, check_price, unknown

Features = dict[Hashable, Any]
"""One slot's regressor inputs, as river takes them."""

BASIS_POINTS = 1e4
"""Log-price changes are learned in basis points so that the regressors see values near 1."""


def median_regressor() -> base.Regressor:
    """The default regressor: linear, no intercept, median loss, AdaGrad steps."""
    return linear_model.LinearRegression(
        optimizer=optim.AdaGrad(0.1), loss=optim.losses.Quantile(0.5), intercept_lr=0.0
    )


class LearnedDrift(Described):
    """``log p(t+k) = log p(t) + k · g_k(s_t)``: the last price moved by a learned drift.

    ``s_t`` is the exponentially weighted mean (rate ``smoothing``) of the per-slot change of
    the log price, each change clipped to ``±max_step``. For each horizon in ``anchors`` a clone
    of ``regressor`` (default :func:`median_regressor`) learns ``g_k``, the mean per-slot change
    over the next ``k`` slots, from ``{"slope": s_t}``; horizons between anchors interpolate
    linearly, horizons beyond the last anchor keep its drift. Untrained regressors predict no
    drift, so the model starts as persistence. After unobserved slots, horizons count from the
    last observed one.
    """

    def __init__(
        self,
        anchors: Sequence[int] = (1, 3, 6, 12, 24),
        smoothing: float = 0.1,
        max_step: float = 0.05,
        regressor: base.Regressor | None = None,
    ) -> None:
        steps = list(anchors)
        if not steps or any(
            not isinstance(k, int) or k < 1 or (i and k <= steps[i - 1])
            for i, k in enumerate(steps)
        ):
            raise ValueError(
                f"LearnedDrift anchors={anchors!r}: expected increasing whole horizons >= 1"
            )
        if not 0 < smoothing <= 1:
            raise ValueError(f"LearnedDrift smoothing={smoothing!r}: expected 0 < smoothing <= 1")
        if not (math.isfinite(max_step) and max_step > 0):
            raise ValueError(f"LearnedDrift max_step={max_step!r}: expected a log change > 0")
        self.anchors = anchors
        self.smoothing = smoothing
        self.max_step = max_step
        self.regressor = regressor
        prototype = median_regressor() if regressor is None else regressor
        self._anchors = np.array(steps)
        self._regressors = [prototype.clone() for _ in steps]
        # (log price, features) of the last slots, newest last; (NaN, None) when unobserved.
        self._history: deque[tuple[float, Features | None]] = deque(maxlen=steps[-1])
        self._log_price = math.nan
        self._since = 0
        self._slope = math.nan
        self._made: dict[int, np.ndarray] = {}
        """Forecasts made since the last slot learned, by horizon."""

    def learn_one(self, y: float) -> None:
        self._made.clear()
        price = check_price(y)
        if math.isnan(price):
            self._history.append((math.nan, None))
            self._since += 1
            return
        log_price = math.log(price)
        for k, regressor in zip(self.anchors, self._regressors, strict=True):
            if len(self._history) >= k:
                past, features = self._history[-k]
                if features is not None:
                    regressor.learn_one(features, (log_price - past) * BASIS_POINTS / k)
        if not math.isnan(self._log_price):
            step = (log_price - self._log_price) / (self._since + 1)
            step = min(self.max_step, max(-self.max_step, step)) * BASIS_POINTS
            if math.isnan(self._slope):
                self._slope = step
            else:
                self._slope += self.smoothing * (step - self._slope)
        self._log_price = log_price
        self._since = 0
        features = None if math.isnan(self._slope) else {"slope": self._slope}
        self._history.append((log_price, features))

    def forecast(self, horizon: int) -> np.ndarray:
        horizon = check_horizon(horizon)
        if math.isnan(self._log_price):
            return unknown(horizon)
        if math.isnan(self._slope):
            return np.full(horizon, math.exp(self._log_price))
        made = self._made.get(horizon)
        if made is None:
            made = self._made[horizon] = self._drifted(horizon)
        return made.copy()

    def _drifted(self, horizon: int) -> np.ndarray:
        features: Features = {"slope": self._slope}
        drift = [regressor.predict_one(features) for regressor in self._regressors]
        ahead = np.arange(self._since + 1, self._since + horizon + 1)
        rate = np.interp(ahead, self._anchors, drift)
        return np.exp(self._log_price + ahead * rate / BASIS_POINTS)
