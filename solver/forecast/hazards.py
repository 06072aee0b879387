"""Run hazards of spot capacity: the table a forecaster learns and a planner plans on.

A run of state 1 (capacity) or 0 (none) that has lasted ``age`` slots ends at the next slot
with probability ``hazard[state, age_bucket(age), day]``, where ``day`` is the bucket of the
slot cycle (the day, cut into equal parts) in which that next slot starts. Ages are bucketed on
:data:`AGE_EDGES`; within a bucket a run ages into the next bucket with probability
``1 / width`` per slot (a geometric stay), so (state, age bucket) is a Markov chain.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

AGE_EDGES: tuple[int, ...] = (1, 2, 3, 5, 9, 17, 33, 65, 129, 257)
"""Bucket ``b`` holds run ages ``AGE_EDGES[b] .. AGE_EDGES[b + 1] - 1`` slots; the last bucket
is open. Narrow where hazards change fast (young runs), wide where they settle."""


def age_bucket(age: int) -> int:
    """The bucket of a run age (slots, >= 1)."""
    return max(0, bisect.bisect_right(AGE_EDGES, age) - 1)


def _age_advance() -> np.ndarray:
    widths = np.diff(AGE_EDGES).astype(float)
    advance = np.append(1.0 / widths, 0.0)
    advance.setflags(write=False)
    return advance


AGE_ADVANCE = _age_advance()
"""Per bucket, the probability that a surviving run moves to the next bucket (read-only)."""


@dataclass(frozen=True)
class HazardTable:
    """Hazards ``(2, len(AGE_EDGES), day buckets)`` of a slot cycle of ``period`` slots, and
    the cycle position of ``next``, the first slot after the last one learned."""

    hazard: np.ndarray
    period: int
    next_position: int

    def __post_init__(self) -> None:
        hazard = np.asarray(self.hazard, dtype=float)
        if hazard.ndim != 3 or hazard.shape[:2] != (2, len(AGE_EDGES)) or hazard.shape[2] < 1:
            raise ValueError(
                f"hazard shape {hazard.shape}: expected (2, {len(AGE_EDGES)}, day buckets)")
        if not np.all((hazard >= 0) & (hazard <= 1)):
            raise ValueError("hazard: expected probabilities in [0, 1]")
        if self.period < 1 or not 0 <= self.next_position < self.period:
            raise ValueError(
                f"hazard table period={self.period!r} next_position={self.next_position!r}: "
                "expected period >= 1 and 0 <= next_position < period")
        hazard.setflags(write=False)
        object.__setattr__(self, "hazard", hazard)

    @property
    def day_buckets(self) -> int:
        return int(self.hazard.shape[2])

    def days(self, first: int, count: int) -> np.ndarray:
        """Day buckets of slots ``next + first .. next + first + count - 1``."""
        position = (self.next_position + first + np.arange(count)) % self.period
        return position * self.day_buckets // self.period

    def on_probability(self, first: int, count: int) -> np.ndarray:
        """``(count, 2, buckets)``: probability of capacity in slot ``next + first + j`` given
        the state and age bucket of the slot before it."""
        hazard = self.hazard[:, :, self.days(first, count)].transpose(2, 0, 1)
        out = hazard.copy()
        out[:, 1, :] = 1.0 - hazard[:, 1, :]
        return out

    def capacity_probability(self, state: int, age: int, horizon: int, since: int = 0
                             ) -> np.ndarray:
        """Probability of capacity in each of the ``horizon`` slots from ``next``, for a run of
        ``state`` aged ``age`` in the last observed slot, ``since`` slots before ``next``."""
        if state not in (0, 1) or age < 1:
            raise ValueError(f"state={state!r} age={age!r}: expected state 0 or 1, age >= 1")
        on = self.on_probability(-since, since + horizon)
        return _propagate(on, AGE_ADVANCE, state, age_bucket(age))[since:]

    def to_wire(self) -> dict[str, Any]:
        """A JSON-ready form; :meth:`from_wire` restores an equal table."""
        return {"age_edges": list(AGE_EDGES), "period": self.period,
                "next_position": self.next_position, "hazard": self.hazard.tolist()}

    @staticmethod
    def from_wire(data: dict[str, Any]) -> HazardTable:
        if list(data["age_edges"]) != list(AGE_EDGES):
            raise ValueError(
                f"age_edges={data['age_edges']!r}: expected {list(AGE_EDGES)}")
        return HazardTable(np.array(data["hazard"], dtype=float), int(data["period"]),
                           int(data["next_position"]))


@njit(cache=True)
def _propagate(on: np.ndarray, advance: np.ndarray, state: int, bucket: int) -> np.ndarray:
    """Probability of capacity slot after slot, from one (state, age bucket)."""
    buckets = on.shape[2]
    mass = np.zeros((2, buckets))
    mass[state, bucket] = 1.0
    out = np.empty(on.shape[0])
    for j in range(on.shape[0]):
        to_on, to_off = 0.0, 0.0
        new = np.zeros((2, buckets))
        for b in range(buckets):
            stay_off = mass[0, b] * (1.0 - on[j, 0, b])
            stay_on = mass[1, b] * on[j, 1, b]
            to_on += mass[0, b] * on[j, 0, b]
            to_off += mass[1, b] * (1.0 - on[j, 1, b])
            for k, kept in ((0, stay_off), (1, stay_on)):
                moving = kept * advance[b]
                new[k, b] += kept - moving
                if moving > 0.0:
                    new[k, b + 1] += moving
        new[1, 0] += to_on
        new[0, 0] += to_off
        mass = new
        out[j] = mass[1].sum()
    return out
