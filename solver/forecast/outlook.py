"""A market's probabilistic forecast at a slot boundary: what planners plan on and what the
forecasts topic carries.

A :class:`MarketOutlook` is made at the boundary of slot ``t`` from the slots before it. It
holds the marginals of the next ``horizon`` slots (``t .. t + horizon - 1``) — price quantiles,
the probability of spot capacity, the expected capacity — and the compact models behind them
(run hazards, the current run, capacity levels), from which a planner derives what it needs
given what the boundary shows (:meth:`MarketOutlook.ahead`). :meth:`MarketOutlook.to_wire`
gives a JSON-ready form that :meth:`MarketOutlook.from_wire` restores exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from solver.forecast.hazards import HazardTable
from solver.forecast.levels import LevelModel

QUANTILE_LEVELS: tuple[float, ...] = (0.1, 0.25, 0.5, 0.75, 0.9)
"""The quantiles an outlook gives of the price and of the capacity."""

MEDIAN = QUANTILE_LEVELS.index(0.5)


@dataclass(frozen=True, slots=True)
class RunState:
    """The run of capacity (``state`` 1) or none (0) in the last observed slot: how many slots
    it had lasted (``age``) and how many unobserved slots followed it (``since``)."""

    state: int
    age: int
    since: int = 0

    def at_boundary(self, available: bool) -> RunState:
        """The run including the slot that starts now, given whether the boundary shows
        capacity: one slot older if it goes on, a new run otherwise."""
        state = int(available)
        if state == self.state and self.since == 0:
            return RunState(state, self.age + 1)
        return RunState(state, 1)


@dataclass(frozen=True)
class CapacityForecast:
    """Spot capacity over consecutive slots: ``probability`` of at least one instance, and
    ``levels[j, l - 1]``, the probability of ``l`` instances in slot ``j`` given some."""

    probability: np.ndarray
    levels: np.ndarray

    def at_least(self, count: int) -> np.ndarray:
        """Probability of at least ``count`` instances in each slot."""
        if count <= 0:
            return np.ones(len(self.probability))
        at_least: np.ndarray = self.probability * self.levels[:, count - 1:].sum(axis=1)
        return at_least

    @property
    def mean(self) -> np.ndarray:
        levels = np.arange(1, self.levels.shape[1] + 1)
        mean: np.ndarray = self.probability * (self.levels @ levels)
        return mean

    def quantile(self, level: float) -> np.ndarray:
        """The ``level`` quantile of the count in each slot (a whole number of instances)."""
        cdf = np.concatenate((1.0 - self.probability[:, None],
                              (1.0 - self.probability)[:, None]
                              + self.probability[:, None] * np.cumsum(self.levels, axis=1)),
                             axis=1)
        first: np.ndarray = np.argmax(cdf >= level - 1e-12, axis=1)
        return first.astype(np.int64)


@dataclass(frozen=True)
class MarketOutlook:
    """The forecast of one market made at a boundary (module doc).

    ``price[q, j]``: the :data:`QUANTILE_LEVELS` ``q`` quantile of slot ``t + j``'s mean spot
    price, USD per instance-hour (``NaN`` while nothing is known). ``hazards`` and ``run`` are
    ``None`` when the availability model has no run hazards or nothing was observed yet.
    ``price_error`` (percent) and ``availability_error`` (Brier) are the running errors of the
    forecaster's earlier forecasts.
    """

    price: np.ndarray
    capacity: CapacityForecast
    levels: LevelModel
    hazards: HazardTable | None
    run: RunState | None
    price_error: float = math.nan
    availability_error: float = math.nan

    def __post_init__(self) -> None:
        price = np.asarray(self.price, dtype=float)
        if price.shape != (len(QUANTILE_LEVELS), len(self.capacity.probability)):
            raise ValueError(
                f"outlook price shape {price.shape}: expected ({len(QUANTILE_LEVELS)}, "
                f"{len(self.capacity.probability)})")
        price.setflags(write=False)
        object.__setattr__(self, "price", price)

    @property
    def horizon(self) -> int:
        return int(self.price.shape[1])

    @property
    def price_median(self) -> np.ndarray:
        median: np.ndarray = self.price[MEDIAN]
        return median

    def ahead(self, available_now: int, horizon: int) -> CapacityForecast:
        """Capacity in the ``horizon`` slots after the one starting now, given the count the
        boundary shows for it."""
        steps = np.arange(1, horizon + 1)
        last = available_now if available_now > 0 else self.levels.last
        level = LevelModel(self.levels.shares, last, self.levels.persistence)
        if self.hazards is None or self.run is None:
            known = self.capacity.probability[1: horizon + 1]
            probability = np.concatenate(
                (known, np.full(horizon - len(known), known[-1] if len(known) else 0.5)))
        else:
            run = self.run.at_boundary(available_now > 0)
            table = HazardTable(self.hazards.hazard, self.hazards.period,
                                (self.hazards.next_position + 1) % self.hazards.period)
            probability = table.capacity_probability(run.state, run.age, horizon)
        return CapacityForecast(probability, level.distribution(steps))

    def transitions(self, instances: int, horizon: int) -> np.ndarray | None:
        """``(horizon, 2, age buckets)``: the probability that slot ``t + j + 1`` offers at
        least ``instances`` given whether slot ``t + j`` did (0/1) and the age bucket of the
        market's capacity run then; ``None`` without run hazards.

        One instance is the run hazards' own chain. For more, the capacity run and the level
        combine as the two models assume, independently: a slot that offers enough is followed
        by one that does when the run goes on and the level stays at least ``instances``
        (:meth:`LevelModel.keeps_at_least`); a slot that does not, when capacity comes (the
        hazard of a gap of that age) at a level at least ``instances``
        (:meth:`LevelModel.share_at_least`).
        """
        if self.hazards is None:
            return None
        on = self.hazards.on_probability(1, horizon)
        if instances > 1:
            on[:, 1, :] *= self.levels.keeps_at_least(instances)
            on[:, 0, :] *= self.levels.share_at_least(instances)
        return on

    def to_wire(self) -> dict[str, Any]:
        """A JSON-ready dict (``None`` for unknown numbers)."""
        price = self.price.tolist()
        if np.isnan(self.price).any():
            price = [[_number(v) for v in row] for row in price]
        return {
            "quantile_levels": list(QUANTILE_LEVELS),
            "price": price,
            "capacity_probability": self.capacity.probability.tolist(),
            "capacity_levels": self.capacity.levels.tolist(),
            "level_shares": self.levels.shares.tolist(),
            "last_level": self.levels.last,
            "level_persistence": self.levels.persistence,
            "hazards": None if self.hazards is None else self.hazards.to_wire(),
            "run": None if self.run is None else [self.run.state, self.run.age, self.run.since],
            "price_error": _number(self.price_error),
            "availability_error": _number(self.availability_error),
        }

    @staticmethod
    def from_wire(data: dict[str, Any]) -> MarketOutlook:
        if list(data["quantile_levels"]) != list(QUANTILE_LEVELS):
            raise ValueError(f"quantile_levels={data['quantile_levels']!r}: expected "
                             f"{list(QUANTILE_LEVELS)}")
        run = data["run"]
        return MarketOutlook(
            price=np.array([[math.nan if v is None else v for v in row]
                            for row in data["price"]], dtype=float),
            capacity=CapacityForecast(np.array(data["capacity_probability"], dtype=float),
                                      np.array(data["capacity_levels"], dtype=float)),
            levels=LevelModel(np.array(data["level_shares"], dtype=float),
                              int(data["last_level"]), float(data["level_persistence"])),
            hazards=None if data["hazards"] is None else HazardTable.from_wire(data["hazards"]),
            run=None if run is None else RunState(*map(int, run)),
            price_error=_nan(data["price_error"]),
            availability_error=_nan(data["availability_error"]),
        )


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)
