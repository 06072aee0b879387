"""An online two-state Markov chain of spot capacity, by time of day: the availability model."""

from __future__ import annotations

import math

import numpy as np

from solver.forecast.base import Described, check_cycle, check_horizon, unknown


class MarkovAvailability(Described):
    """Probability that each slot ahead has spot capacity (count > 0).

    The chain moves between "none" and "some" capacity. Transitions are counted by the time of
    the cycle they start in (the ``period``-slot day or week, slot 0 at ``phase``), cut into
    ``buckets`` equal parts (one slot each when ``buckets >= period``), and over the whole
    cycle. A bucket's counts fade by ``bucket_decay`` each time the bucket counts a transition;
    the whole-cycle counts fade by ``decay`` at every transition, so that the chain follows
    regime shifts. A bucket's transition probability is its counts plus ``prior``
    pseudo-transitions at the whole-cycle rate (itself shrunk towards 1/2 by one
    pseudo-transition): a rarely seen bucket falls back to the whole-cycle chain. The forecast
    carries the last observed state through the buckets of the slots ahead. Unobserved slots
    (``NaN``) break the chain: no transition is counted across them, and horizons count from
    the last observed slot.
    """

    def __init__(self, period: int = 24, phase: int = 0, buckets: int = 24, decay: float = 0.98,
                 bucket_decay: float = 0.9, prior: float = 5.0) -> None:
        check_cycle("MarkovAvailability", period, phase)
        if buckets < 1:
            raise ValueError(f"MarkovAvailability buckets={buckets!r}: expected at least 1")
        for name, value in (("decay", decay), ("bucket_decay", bucket_decay)):
            if not 0 < value <= 1:
                raise ValueError(f"MarkovAvailability {name}={value!r}: expected 0 < {name} <= 1")
        if not (math.isfinite(prior) and prior > 0):
            raise ValueError(f"MarkovAvailability prior={prior!r}: expected a count > 0")
        self.period = period
        self.phase = phase
        self.buckets = buckets
        self.decay = decay
        self.bucket_decay = bucket_decay
        self.prior = prior
        # _counts[bucket, from, to] and _all_cycle[from, to]: faded transition counts.
        self._counts = np.zeros((buckets, 2, 2))
        self._all_cycle = np.zeros((2, 2))
        self._slot = 0
        self._state = -1
        self._since = 0

    def learn_one(self, y: float) -> None:
        count = float(y)
        if not (math.isnan(count) or (math.isfinite(count) and count >= 0)):
            raise ValueError(
                f"availability={y!r}: expected a count >= 0, or NaN for an unobserved slot"
            )
        if math.isnan(count):
            self._since += 1
        else:
            state = int(count > 0)
            if self._state >= 0 and self._since == 0:
                bucket = self._counts[self._bucket(self._slot - 1)]
                bucket *= self.bucket_decay
                bucket[self._state, state] += 1.0
                self._all_cycle *= self.decay
                self._all_cycle[self._state, state] += 1.0
            self._state = state
            self._since = 0
        self._slot += 1

    def forecast(self, horizon: int) -> np.ndarray:
        horizon = check_horizon(horizon)
        if self._state < 0:
            return unknown(horizon)
        all_cycle = (self._all_cycle[:, 1] + 0.5) / (self._all_cycle.sum(axis=1) + 1.0)
        to_some = (self._counts[:, :, 1] + self.prior * all_cycle) / (
            self._counts.sum(axis=2) + self.prior
        )
        from_none, from_some = to_some[:, 0].tolist(), to_some[:, 1].tolist()
        last = self._slot - 1 - self._since
        p = float(self._state)
        out = []
        for slot in range(last, last + self._since + horizon):
            b = self._bucket(slot)
            p = p * from_some[b] + (1.0 - p) * from_none[b]
            out.append(p)
        return np.array(out[self._since :])

    def _bucket(self, slot: int) -> int:
        return (slot + self.phase) % self.period * self.buckets // self.period
