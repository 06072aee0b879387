"""Baselines every model must beat: persistence, seasonal naive and moving average.

They forecast any series: a price, or the 0/1 indicator of spot capacity (their forecast of
the indicator is then a probability). An unobserved slot (``NaN``) is skipped over.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from solver.forecast.base import Described, check_cycle, check_horizon, check_value, unknown


class Persistence(Described):
    """The last observed value, for every slot ahead."""

    def __init__(self) -> None:
        self._last = math.nan

    def learn_one(self, y: float) -> None:
        value = check_value(y)
        if not math.isnan(value):
            self._last = value

    def forecast(self, horizon: int) -> np.ndarray:
        return np.full(check_horizon(horizon), self._last)


class _Recent(Described):
    """The last ``size`` values (unobserved ones as ``NaN``) and the last observed one."""

    def __init__(self, size: int) -> None:
        self._values: deque[float] = deque(maxlen=size)
        self._last = math.nan

    def learn_one(self, y: float) -> None:
        value = check_value(y)
        self._values.append(value)
        if not math.isnan(value):
            self._last = value


class SeasonalNaive(_Recent):
    """The value one season (``period`` slots) before each slot ahead; the last observed value
    where that one is unobserved or older than the data."""

    def __init__(self, period: int = 24) -> None:
        check_cycle("SeasonalNaive", period)
        super().__init__(period)
        self.period = period

    def forecast(self, horizon: int) -> np.ndarray:
        horizon = check_horizon(horizon)
        if math.isnan(self._last):
            return unknown(horizon)
        # The last `period` slots, oldest first, NaN before the data starts: slot ahead k
        # (0-based) repeats entry k % period.
        season = np.full(self.period, math.nan)
        season[self.period - len(self._values) :] = self._values
        out = season[np.arange(horizon) % self.period]
        out[np.isnan(out)] = self._last
        return out


class MovingAverage(_Recent):
    """The mean of the observed values among the last ``window`` slots, for every slot ahead."""

    def __init__(self, window: int = 24) -> None:
        if window < 1:
            raise ValueError(f"MovingAverage window={window!r}: expected at least 1 slot")
        super().__init__(window)
        self.window = window

    def forecast(self, horizon: int) -> np.ndarray:
        observed = [v for v in self._values if not math.isnan(v)]
        mean = math.fsum(observed) / len(observed) if observed else self._last
        return np.full(check_horizon(horizon), mean)
