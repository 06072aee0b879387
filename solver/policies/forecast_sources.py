"""What the planning policies plan on: the markets' coming slots, from the outlooks every policy
shares (:attr:`solver.observation.Observation.outlooks`), or from the realised market (the oracle).

A source answers two questions at a slot boundary:

* :meth:`ForecastSource.window` — a price and a spot capacity per market for the current slot
  and the ``horizon - 1`` after it, which the committed-horizon program plans on as if certain;
* :meth:`ForecastSource.transitions` — for the stochastic program of a job of ``instances``
  instances, the probability that each coming slot offers at least that many given whether the
  slot before did and the age bucket of the market's capacity run then, and the price path.

Sources are deterministic: the same observation (and seed) always gives the same answer. The
current slot's values are those the boundary shows, for every source but the oracle.
"""

from __future__ import annotations

import math
from typing import Literal, Protocol

import numpy as np

from solver.forecast.hazards import AGE_EDGES
from solver.forecast.outlook import MEDIAN, MarketOutlook
from solver.market import MarketData
from solver.observation import Observation

ForecastKind = Literal["distribution", "point", "oracle"]
FORECAST_KINDS: tuple[ForecastKind, ...] = ("distribution", "point", "oracle")
"""``distribution``: the learned distributions; ``point``: the learned forecasts read as
certain; ``oracle``: the realised market (a hindsight yardstick)."""


class ForecastSource(Protocol):
    """A view of the coming slots (module doc). ``exact``: it is the realised market, so
    spot planned on it is never lost."""

    exact: bool

    def window(self, obs: Observation, horizon: int) -> tuple[np.ndarray, np.ndarray]: ...

    def transitions(self, obs: Observation, market: int, horizon: int, instances: int
                    ) -> tuple[np.ndarray, np.ndarray]: ...


class OracleForecast:
    """The true slot prices and capacities (a perfect forecast); past the data's end the last
    slot is repeated."""

    exact = True

    def __init__(self, data: MarketData) -> None:
        self.data = data

    def window(self, obs: Observation, horizon: int) -> tuple[np.ndarray, np.ndarray]:
        cols = self._columns(obs.slot, horizon)
        return self.data.price[:, cols], self.data.availability[:, cols]

    def transitions(self, obs: Observation, market: int, horizon: int, instances: int
                    ) -> tuple[np.ndarray, np.ndarray]:
        cols = self._columns(obs.slot, horizon + 1)
        on = (self.data.availability[market, cols[1:]] >= instances).astype(float)
        return _state_free(on), self.data.price[market, cols[:-1]].astype(float)

    def _columns(self, first: int, horizon: int) -> np.ndarray:
        _check(horizon)
        return np.minimum(np.arange(first, first + horizon), self.data.n_slots - 1)


class NoisyOracleForecast:
    """The oracle with controlled errors, for sensitivity studies.

    Every forecast price is multiplied by ``exp(error * e)``, ``e`` standard normal; every
    forecast capacity flips with probability ``flip`` (a positive count to 0, a 0 to 1). The
    draws depend only on ``seed`` and the slot forecast from.
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

    def window(self, obs: Observation, horizon: int) -> tuple[np.ndarray, np.ndarray]:
        price, availability = self.oracle.window(obs, horizon)
        rng = np.random.default_rng([self.seed, obs.slot])
        noisy_price = price * np.exp(self.error * rng.standard_normal(price.shape))
        flipped = rng.random(availability.shape) < self.flip
        return noisy_price, np.where(flipped, (availability == 0).astype(np.int64), availability)

    def transitions(self, obs: Observation, market: int, horizon: int, instances: int
                    ) -> tuple[np.ndarray, np.ndarray]:
        price, availability = self.window(obs, horizon + 1)
        on = (availability[market, 1:] >= instances).astype(float)
        return _state_free(on), price[market, :-1]


class PointForecast:
    """The learned forecasts read as certain: the median price, and in each coming slot the
    market's last positive capacity where capacity is at least as likely as not, else none."""

    exact = False

    def window(self, obs: Observation, horizon: int) -> tuple[np.ndarray, np.ndarray]:
        _check(horizon)
        price = np.empty((len(obs.markets), horizon))
        availability = np.empty((len(obs.markets), horizon), dtype=np.int64)
        for m in range(len(obs.markets)):
            outlook, now = obs.outlooks[m], int(obs.availability_now[m])
            price[m] = _price_path(outlook, float(obs.price_now[m]), horizon)
            ahead = outlook.ahead(now, horizon - 1)
            last = now if now > 0 else max(1, outlook.levels.last)
            availability[m] = np.concatenate(([now], np.where(ahead.probability >= 0.5, last, 0)))
        return price, availability

    def transitions(self, obs: Observation, market: int, horizon: int, instances: int
                    ) -> tuple[np.ndarray, np.ndarray]:
        outlook, now = obs.outlooks[market], int(obs.availability_now[market])
        on = (outlook.ahead(now, horizon).at_least(instances) >= 0.5).astype(float)
        return _state_free(on), _price_path(outlook, float(obs.price_now[market]), horizon)


class DistributionForecast:
    """The learned distributions, for planners that need them.

    :meth:`transitions` gives the outlook's run hazards (the probability of capacity depends on
    the run's state and age), combined with its level model for jobs of several instances
    (:meth:`~solver.forecast.outlook.MarketOutlook.transitions`). :meth:`window`, for programs
    that plan on one path, gives in each coming slot the capacity reached with probability
    ``confidence`` (a chance constraint: spot is planned only where it is that likely), and
    prices spot with the expected cost of losing it: the hazard that the current run ends at the
    next slot, times one restart overhead billed at the on-demand price.
    """

    exact = False

    def __init__(self, confidence: float = 0.9) -> None:
        if not 0 < confidence < 1:
            raise ValueError(f"confidence={confidence!r}: expected a probability in (0, 1)")
        self.confidence = confidence

    def window(self, obs: Observation, horizon: int) -> tuple[np.ndarray, np.ndarray]:
        _check(horizon)
        n_markets = len(obs.markets)
        price = np.empty((n_markets, horizon))
        availability = np.empty((n_markets, horizon), dtype=np.int64)
        overhead_hours = max((v.job.restart_overhead_hours for v in obs.jobs), default=0.0)
        for m, market in enumerate(obs.markets):
            outlook, now = obs.outlooks[m], int(obs.availability_now[m])
            ahead = outlook.ahead(now, horizon - 1)
            availability[m] = np.concatenate(([now], ahead.quantile(1.0 - self.confidence)))
            lost = _loss_hazard(outlook, now, horizon)
            premium = lost * overhead_hours / obs.slot_hours * market.on_demand_price
            price[m] = _price_path(outlook, float(obs.price_now[m]), horizon) + premium
        return price, availability

    def transitions(self, obs: Observation, market: int, horizon: int, instances: int
                    ) -> tuple[np.ndarray, np.ndarray]:
        outlook = obs.outlooks[market]
        price = _price_path(outlook, float(obs.price_now[market]), horizon)
        on = outlook.transitions(instances, horizon)
        if on is None:
            return PointForecast().transitions(obs, market, horizon, instances)[0], price
        return on, price


FORECAST_SOURCES: dict[str, type[DistributionForecast] | type[PointForecast]
                       | type[OracleForecast]] = {
    "distribution": DistributionForecast, "point": PointForecast, "oracle": OracleForecast}
"""The source of each of :data:`FORECAST_KINDS`."""


def make_source(kind: str, data: MarketData | None = None) -> ForecastSource:
    """A source by kind (one of :data:`FORECAST_KINDS`, as a spec gives it); an exact one (the
    oracle) needs the realised market ``data``."""
    source = FORECAST_SOURCES.get(kind)
    if source is None:
        raise ValueError(f"forecast={kind!r}: expected one of {', '.join(FORECAST_KINDS)}")
    if issubclass(source, OracleForecast):
        if data is None:
            raise ValueError(f"forecast={kind!r}: expected the realised market data")
        return source(data)
    return source()


def _price_path(outlook: MarketOutlook, now: float, horizon: int) -> np.ndarray:
    """The boundary's price for the current slot, then the median forecast (its last value
    beyond the outlook; the boundary's price where nothing is known)."""
    median = outlook.price[MEDIAN]
    ahead = median[np.minimum(np.arange(1, horizon), len(median) - 1)]
    return np.concatenate(([now], np.where(np.isnan(ahead), now, ahead)))


def _loss_hazard(outlook: MarketOutlook, available_now: int, horizon: int) -> np.ndarray:
    """Per slot of the window, the probability that spot held in it is gone in the next: the
    hazard of the current run as it ages (0 without run hazards)."""
    if outlook.hazards is None or outlook.run is None or available_now <= 0:
        return np.zeros(horizon)
    run = outlook.run.at_boundary(True)
    ages = np.minimum(run.age + np.arange(horizon), AGE_EDGES[-1])
    buckets = np.searchsorted(AGE_EDGES, ages, side="right") - 1
    days = outlook.hazards.days(1, horizon)
    hazard: np.ndarray = outlook.hazards.hazard[1, buckets, days]
    return hazard


def _state_free(on: np.ndarray) -> np.ndarray:
    """Probabilities of capacity that do not depend on the run before: ``(slots, 2, buckets)``."""
    return np.repeat(np.asarray(on, dtype=float)[:, None, None], 2, axis=1).repeat(
        len(AGE_EDGES), axis=2)


def _check(horizon: int) -> None:
    if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
        raise ValueError(f"horizon={horizon!r}: expected a whole number of slots >= 1")
