"""One forecaster per market of a slot grid, learned once per closed slot, and the outlooks
every policy plans on at a boundary."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from solver.forecast.base import slot_seasonality
from solver.forecast.outlook import MarketOutlook
from solver.forecast.registry import MarketFactory, market_factory

OUTLOOK_HORIZON = 24
"""Slots whose marginals an outlook carries; planners extend it through its models."""


class Outlooks:
    """The outlooks of every market at one boundary, indexed by market: computed on first use
    by ``make(market)``, or given ready (e.g. decoded from the forecasts topic). Either way,
    every policy at that boundary sees the same outlooks."""

    def __init__(self, markets: int, make: Callable[[int], MarketOutlook] | None = None,
                 ready: Sequence[MarketOutlook] | None = None) -> None:
        if (make is None) == (ready is None):
            raise ValueError("outlooks: expected either a maker or ready outlooks")
        self._cache: list[MarketOutlook | None] = (
            list(ready) if ready is not None else [None] * markets)
        if len(self._cache) != markets:
            raise ValueError(f"outlooks: {len(self._cache)} given, expected {markets}")
        self._make = make

    def __len__(self) -> int:
        return len(self._cache)

    def __getitem__(self, market: int) -> MarketOutlook:
        outlook = self._cache[market]
        if outlook is None:  # only when made lazily
            assert self._make is not None, "outlooks are either given or made"
            outlook = self._cache[market] = self._make(market)
        return outlook

    def ready(self) -> tuple[MarketOutlook, ...]:
        """Every outlook, computed."""
        return tuple(self[m] for m in range(len(self)))


class MarketModels:
    """Forecasters for ``markets`` markets on a grid from ``origin`` with slots of
    ``slot_seconds``. :meth:`learn` takes each closed slot; :meth:`outlooks` gives a boundary's
    outlooks, first learning (only when one is read) the closed slots not learned yet."""

    def __init__(self, markets: int, origin: float, slot_seconds: float,
                 factory: MarketFactory | None = None, horizon: int = OUTLOOK_HORIZON) -> None:
        season = slot_seasonality(origin, slot_seconds)
        make = factory or market_factory()
        self.origin = float(origin)
        self.slot_seconds = float(slot_seconds)
        self.horizon = horizon
        self.forecasters = [make(season, horizon) for _ in range(markets)]
        self.learned = 0

    def learn(self, price: np.ndarray, availability: np.ndarray) -> None:
        """Learn the next slot of every market (slot-mean price, whole-slot capacity; ``NaN``
        where unobserved)."""
        for forecaster, p, a in zip(self.forecasters, np.asarray(price, dtype=float).tolist(),
                                    np.asarray(availability, dtype=float).tolist(), strict=True):
            forecaster.learn_one(p, a)
        self.learned += 1

    def outlooks(self, price: np.ndarray, availability: np.ndarray, origin: float) -> Outlooks:
        """The outlooks at the boundary after the closed slots ``price`` and ``availability``
        (``(markets, slots)``, the slots of a grid from ``origin`` on, which may start after
        this one's: slots already learned are skipped, slots in between learned as unobserved).
        """
        offset = round((origin - self.origin) / self.slot_seconds)
        if offset < 0 or not np.isclose(self.origin + offset * self.slot_seconds, origin):
            raise ValueError(
                f"origin={origin!r}: expected a slot boundary at or after the forecasters' grid "
                f"origin {self.origin!r} (slots of {self.slot_seconds!r} s)")
        closed = offset + price.shape[1]
        if closed < self.learned:
            raise ValueError(
                f"closed slots={closed}: expected at least the {self.learned} already learned")
        return Outlooks(len(self.forecasters),
                        make=_CatchUp(self, price, availability, offset, closed))


class _CatchUp:
    """Makes one market's outlook at a boundary, first learning the closed slots the models
    have not learned yet (those before the history's grid as unobserved)."""

    def __init__(self, models: MarketModels, price: np.ndarray, availability: np.ndarray,
                 offset: int, closed: int) -> None:
        self.models, self.price, self.availability = models, price, availability
        self.offset, self.closed = offset, closed

    def __call__(self, market: int) -> MarketOutlook:
        models = self.models
        if models.learned > self.closed:
            raise RuntimeError(
                f"outlook of market {market} read after slot {models.learned - 1} was learned; "
                f"it was made at the boundary after slot {self.closed - 1}")
        unobserved = np.full(len(models.forecasters), np.nan)
        for s in range(models.learned, self.closed):
            t = s - self.offset
            if t < 0:
                models.learn(unobserved, unobserved)
            else:
                models.learn(self.price[:, t], self.availability[:, t])
        return models.forecasters[market].outlook(models.horizon)


class OutlookTape:
    """Every market's outlook at every boundary of ``data``'s grid, made once by ``models``
    (trained on what came before, or fresh; or a function making them, called when the first
    outlook is read) and read by any number of runs over the same data: the forecasts do not
    depend on the policy."""

    def __init__(self, models: MarketModels | Callable[[], MarketModels], price: np.ndarray,
                 availability: np.ndarray, origin: float) -> None:
        self._models = models
        self._price = price
        self._availability = availability
        self._origin = origin
        self._made: list[Outlooks] = []

    def __getitem__(self, slot: int) -> Outlooks:
        """The outlooks at the boundary of ``slot``, made (in slot order, once) when one of
        them is first read: a run that reads none makes none."""
        if slot < len(self._made):
            return self._made[slot]
        return Outlooks(self._price.shape[0], make=lambda market: self._make(slot)[market])

    def _make(self, slot: int) -> Outlooks:
        if not isinstance(self._models, MarketModels):
            self._models = self._models()
        while len(self._made) <= slot:
            t = len(self._made)
            ready = self._models.outlooks(self._price[:, :t], self._availability[:, :t],
                                          self._origin).ready()
            self._made.append(Outlooks(len(ready), ready=ready))
        return self._made[slot]
