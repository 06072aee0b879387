"""Where Committed Horizon Control gets its view of the coming slots.

A source answers, at a slot boundary, the spot price and availability of every market for the
current slot and the ``horizon - 1`` after it. Sources are deterministic: the same
observation (and seed) always gives the same forecast.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from solver.forecast import MarketFactory, MarketForecaster, market_factory, slot_seasonality
from solver.market import MarketData
from solver.policy import Observation


class ForecastSource(Protocol):
    """Forecasts ``(price, availability)``, each ``(markets, horizon)``, for slots
    ``obs.slot .. obs.slot + horizon - 1``. ``exact``: the forecasts are the realised market,
    so spot planned on them is never lost."""

    exact: bool

    def forecast(self, obs: Observation, horizon: int) -> tuple[np.ndarray, np.ndarray]: ...


class OracleForecast:
    """The true slot prices and availability (a perfect forecast); past the data's end the
    last slot is repeated."""

    exact = True

    def __init__(self, data: MarketData) -> None:
        self.data = data

    def forecast(self, obs: Observation, horizon: int) -> tuple[np.ndarray, np.ndarray]:
        _check(horizon)
        cols = np.minimum(np.arange(obs.slot, obs.slot + horizon), self.data.n_slots - 1)
        return self.data.price[:, cols], self.data.availability[:, cols]


class NoisyOracleForecast:
    """The oracle with controlled errors, for sensitivity studies.

    Every forecast price is multiplied by ``exp(error * e)``, ``e`` standard normal; every
    forecast availability flips with probability ``flip`` (a positive count to 0, a 0 to 1).
    The draws depend only on ``seed`` and the slot forecast from, so the same observation
    always gets the same forecast.
    """

    exact = False

    def __init__(self, data: MarketData, error: float = 0.1, flip: float = 0.0,
                 seed: int = 0) -> None:
        if not (math.isfinite(error) and error >= 0):
            raise ValueError(f"error={error!r}: expected a log-price standard deviation >= 0")
        if not 0 <= flip <= 1:
            raise ValueError(f"flip={flip!r}: expected a probability in [0, 1]")
        self.oracle = OracleForecast(data)
        self.error, self.flip, self.seed = error, flip, seed

    def forecast(self, obs: Observation, horizon: int) -> tuple[np.ndarray, np.ndarray]:
        price, availability = self.oracle.forecast(obs, horizon)
        rng = np.random.default_rng([self.seed, obs.slot])
        noisy_price = price * np.exp(self.error * rng.standard_normal(price.shape))
        flipped = rng.random(availability.shape) < self.flip
        noisy_availability = np.where(flipped, (availability == 0).astype(np.int64),
                                      availability)
        return noisy_price, noisy_availability


class LearnedForecast:
    """The online forecasters of :mod:`solver.forecast`, one per market, fed incrementally
    from the observation's history.

    The current slot is forecast by what the boundary shows (``price_now``,
    ``availability_now``); later slots by the forecasters. An availability probability of at
    least ``threshold`` forecasts the market's last positive count, otherwise 0. A price the
    forecaster cannot give yet is the current price.
    """

    exact = False

    def __init__(self, factory: MarketFactory | None = None, window: int = 24,
                 threshold: float = 0.5) -> None:
        if not 0 < threshold <= 1:
            raise ValueError(f"threshold={threshold!r}: expected a probability in (0, 1]")
        self.factory = factory or market_factory()
        self.window = window
        self.threshold = threshold
        self._markets: list[MarketForecaster] = []
        self._last_positive = np.ones(0, dtype=np.int64)
        self._learned = 0

    def forecast(self, obs: Observation, horizon: int) -> tuple[np.ndarray, np.ndarray]:
        _check(horizon)
        self._learn(obs)
        last_positive = np.where(obs.availability_now > 0, obs.availability_now,
                                 self._last_positive)
        price = np.empty((len(obs.markets), horizon))
        availability = np.empty((len(obs.markets), horizon), dtype=np.int64)
        price[:, 0] = obs.price_now
        availability[:, 0] = obs.availability_now
        if horizon > 1:
            for m, forecaster in enumerate(self._markets):
                ahead = forecaster.forecast(horizon - 1)
                price[m, 1:] = np.where(np.isnan(ahead.price), obs.price_now[m], ahead.price)
                likely = np.nan_to_num(ahead.availability) >= self.threshold
                availability[m, 1:] = np.where(likely, max(1, int(last_positive[m])), 0)
        return price, availability

    def _learn(self, obs: Observation) -> None:
        if not self._markets:
            season = slot_seasonality(obs.time - obs.slot * obs.slot_seconds, obs.slot_seconds)
            self._markets = [self.factory(season, self.window) for _ in obs.markets]
            self._last_positive = np.ones(len(obs.markets), dtype=np.int64)
        if obs.slot < self._learned:
            raise ValueError(
                f"observation slot={obs.slot}: expected slots in increasing order (already "
                f"learned up to slot {self._learned})"
            )
        for t in range(self._learned, obs.slot):
            for m, forecaster in enumerate(self._markets):
                count = int(obs.availability_history[m, t])
                forecaster.learn_one(float(obs.price_history[m, t]), count)
                if count > 0:
                    self._last_positive[m] = count
        self._learned = obs.slot


def _check(horizon: int) -> None:
    if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
        raise ValueError(f"horizon={horizon!r}: expected a whole number of slots >= 1")
