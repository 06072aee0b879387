"""How many instances a market offers while it offers any: the capacity level model.

Probe traces only say "some" or "none" (level 1); cluster traces count instances. While a
market has capacity, its level tends to stay where it is for a while and otherwise follows the
market's usual levels. The model keeps a histogram of the positive counts seen (faded with a
half-life of ``half_life_cycles`` cycles) and the probability ``persistence`` that the level of
one slot with capacity repeats in the next (also faded), and forecasts the level ``k`` slots
ahead as the last positive level with weight ``persistence ** k``, the histogram otherwise.
Counts above ``max_level`` are counted as ``max_level``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solver.forecast.base import Described, check_cycle


@dataclass(frozen=True)
class LevelModel:
    """A snapshot of the level model: ``shares[l - 1]`` is the share of level ``l`` among
    slots with capacity, ``last`` the last positive level (0 before any), ``persistence`` the
    chance that a level repeats from one slot with capacity to the next."""

    shares: np.ndarray
    last: int
    persistence: float

    def __post_init__(self) -> None:
        shares = np.asarray(self.shares, dtype=float)
        if shares.ndim != 1 or len(shares) < 1 or np.any(shares < 0):
            raise ValueError("level shares: expected a non-empty vector of shares >= 0")
        if not 0 <= self.persistence <= 1:
            raise ValueError(f"persistence={self.persistence!r}: expected a probability")
        shares.setflags(write=False)
        object.__setattr__(self, "shares", shares)

    def share_at_least(self, count: int) -> float:
        """The share of slots with capacity that offer at least ``count`` instances (level 1
        before any count is seen)."""
        total = float(self.shares.sum())
        if count <= 1:
            return 1.0
        return float(self.shares[count - 1:].sum()) / total if total > 0 else 0.0

    def keeps_at_least(self, count: int) -> float:
        """The chance that a slot offering at least ``count`` instances is followed, when the
        next slot has capacity, by one that does too: the level repeats, or the next level is
        drawn from the shares and is at least ``count``."""
        return self.persistence + (1.0 - self.persistence) * self.share_at_least(count)

    def distribution(self, steps: np.ndarray) -> np.ndarray:
        """``(len(steps), levels)``: the level distribution ``steps`` slots after the last one
        observed, given capacity then."""
        weight = self.persistence ** np.asarray(steps, dtype=float)[:, None]
        base = self.shares / self.shares.sum() if self.shares.sum() > 0 else self.shares
        out: np.ndarray = (1.0 - weight) * base[None, :]
        if self.last > 0:
            out[:, min(self.last, len(base)) - 1] += weight[:, 0]
        elif self.shares.sum() == 0:
            out[:, 0] = 1.0
        return out


class CapacityLevels(Described):
    """Online level model of one market's capacity counts (module doc)."""

    def __init__(self, period: int = 24, half_life_cycles: float = 7.0,
                 max_level: int = 256) -> None:
        check_cycle("CapacityLevels", period)
        if not (math.isfinite(half_life_cycles) and half_life_cycles > 0):
            raise ValueError(
                f"CapacityLevels half_life_cycles={half_life_cycles!r}: expected a number > 0")
        if max_level < 1:
            raise ValueError(f"CapacityLevels max_level={max_level!r}: expected at least 1")
        self.period = period
        self.half_life_cycles = half_life_cycles
        self.max_level = max_level
        self._fade = 0.5 ** (1.0 / (half_life_cycles * period))
        self._counts = np.zeros(1)
        self._repeats = 0.0
        self._pairs = 0.0
        self._last = 0
        self._previous = 0

    def learn_one(self, y: float) -> None:
        """Learn one slot's count (``NaN``: unobserved)."""
        count = float(y)
        if not (math.isnan(count) or (math.isfinite(count) and count >= 0)):
            raise ValueError(
                f"availability={y!r}: expected a count >= 0, or NaN for an unobserved slot")
        level = 0 if math.isnan(count) else min(int(count), self.max_level)
        self._counts *= self._fade
        self._repeats *= self._fade
        self._pairs *= self._fade
        if level > 0:
            if level > len(self._counts):
                self._counts = np.append(self._counts, np.zeros(level - len(self._counts)))
            self._counts[level - 1] += 1.0
            if self._previous > 0:
                self._pairs += 1.0
                self._repeats += float(level == self._previous)
            self._last = level
        self._previous = level

    def snapshot(self) -> LevelModel:
        persistence = (self._repeats + 1.0) / (self._pairs + 2.0)
        return LevelModel(self._counts.copy(), self._last, persistence)
