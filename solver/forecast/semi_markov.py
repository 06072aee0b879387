"""An online semi-Markov model of spot capacity: run lengths by age and time of day.

Spot capacity switches between runs of "some" and "none". How long a run lasts depends on how
long it has lasted already (runs are heavy-tailed: a long run is likely to go on) and on the
time of day. The model learns the *hazard* ``h(state, age, day bucket)``, the probability that
a run of ``state`` which has lasted ``age`` slots ends at the next slot, which starts in
``day bucket`` of the cycle.

Learning counts, per (state, age bucket, day bucket), the slots of exposure and the runs that
ended, with exponential forgetting (half-life ``half_life_cycles`` cycles of the seasonality,
so the model follows regime shifts). Estimates shrink towards coarser ones, each with a prior
of a few slots of exposure: a run's first age bucket towards the state's overall rate, each
older bucket towards the one before it (hazards change smoothly with age), and each
(age, day) cell towards its age bucket (``age_prior``, ``day_prior``).

Forecasts propagate the exact age of the current run through the hazards: the probability of
capacity in each slot ahead, and the whole :class:`HazardTable`, which a planner uses to price
the risk of losing a spot run. Unobserved slots (``NaN``) break a run: nothing is counted across
them and horizons count from the last observed slot.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from solver.forecast.base import Described, check_cycle, check_horizon, unknown
from solver.forecast.hazards import AGE_EDGES, HazardTable, age_bucket

_RESCALE_ABOVE = 1e12


class SemiMarkovAvailability(Described):
    """Probability that each slot ahead has spot capacity (count > 0), from run hazards by age
    and time of day (module doc). ``period`` slots per cycle, slot 0 at ``phase``,
    ``day_buckets`` equal parts of the cycle."""

    def __init__(
        self,
        period: int = 24,
        phase: int = 0,
        day_buckets: int = 6,
        half_life_cycles: float = 7.0,
        age_prior: float = 16.0,
        day_prior: float = 64.0,
    ) -> None:
        check_cycle("SemiMarkovAvailability", period, phase)
        if day_buckets < 1:
            raise ValueError(
                f"SemiMarkovAvailability day_buckets={day_buckets!r}: expected at least 1")
        for name, value in (("half_life_cycles", half_life_cycles), ("age_prior", age_prior),
                            ("day_prior", day_prior)):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"SemiMarkovAvailability {name}={value!r}: expected a number > 0")
        self.period = period
        self.phase = phase
        self.day_buckets = day_buckets
        self.half_life_cycles = half_life_cycles
        self.age_prior = age_prior
        self.day_prior = day_prior
        self._growth = 0.5 ** (-1.0 / (half_life_cycles * period))
        shape = (2, len(AGE_EDGES), min(day_buckets, period))
        self._exposure = np.zeros(shape)
        self._ended = np.zeros(shape)
        self._weight = 1.0
        self._slot = 0
        self._state = -1
        self._age = 0
        self._since = 0
        self._table: HazardTable | None = None
        self._made: dict[int, np.ndarray] = {}
        """The hazards and the forecasts (by horizon) made since the last slot learned: a
        boundary asks for the same ones several times."""

    @property
    def state(self) -> int:
        """1 (capacity) or 0 (none) in the last observed slot; -1 before any."""
        return self._state

    @property
    def age(self) -> int:
        """Slots the current run has lasted, the last observed one included."""
        return self._age

    @property
    def since(self) -> int:
        """Unobserved slots after the last observed one."""
        return self._since

    def learn_one(self, y: float) -> None:
        count = float(y)
        if not (math.isnan(count) or (math.isfinite(count) and count >= 0)):
            raise ValueError(
                f"availability={y!r}: expected a count >= 0, or NaN for an unobserved slot")
        if math.isnan(count):
            self._since += 1
        else:
            state = int(count > 0)
            if self._state >= 0 and self._since == 0:
                cell = (self._state, age_bucket(self._age), self._day(self._slot))
                self._exposure[cell] += self._weight
                if state != self._state:
                    self._ended[cell] += self._weight
            continues = state == self._state and self._since == 0
            self._age = self._age + 1 if continues else 1
            self._state = state
            self._since = 0
        self._slot += 1
        self._table = None
        self._made.clear()
        self._weight *= self._growth
        if self._weight > _RESCALE_ABOVE:
            self._exposure /= self._weight
            self._ended /= self._weight
            self._weight = 1.0

    def hazards(self) -> HazardTable:
        """The estimated hazards, with the slot cycle position of the next slot."""
        if self._table is None:
            self._table = self._estimate()
        return self._table

    def _estimate(self) -> HazardTable:
        hazard = _shrunk_hazards(self._exposure, self._ended, self._weight, self.age_prior,
                                 self.day_prior)
        return HazardTable(hazard=hazard, period=self.period,
                           next_position=(self._slot + self.phase) % self.period)

    def forecast(self, horizon: int) -> np.ndarray:
        horizon = check_horizon(horizon)
        if self._state < 0:
            return unknown(horizon)
        made = self._made.get(horizon)
        if made is None:
            made = self._made[horizon] = self.hazards().capacity_probability(
                self._state, self._age, horizon, self._since)
        return made.copy()

    def _day(self, slot: int) -> int:
        return (slot + self.phase) % self.period * self._exposure.shape[2] // self.period


@njit(cache=True)
def _shrunk_hazards(exposure: np.ndarray, ended: np.ndarray, weight: float, age_prior: float,
                    day_prior: float) -> np.ndarray:
    """Hazards ``(state, age bucket, day bucket)`` from the weighted counts, each shrunk
    towards the coarser estimate (module doc): a state's first age bucket towards its overall
    rate, each older bucket towards the one before it, each day cell towards its age bucket."""
    exposure, ended = exposure / weight, ended / weight
    states, ages, days = exposure.shape
    hazard = np.empty(exposure.shape)
    for s in range(states):
        prior = (ended[s].sum() + 0.5) / (exposure[s].sum() + 1.0)
        for b in range(ages):
            rate = (ended[s, b].sum() + age_prior * prior) / (exposure[s, b].sum() + age_prior)
            for d in range(days):
                hazard[s, b, d] = (ended[s, b, d] + day_prior * rate) / (
                    exposure[s, b, d] + day_prior)
            prior = rate
    return hazard
