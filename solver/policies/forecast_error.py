"""The online error of a forecast source, as the number policy selection's fallback reads."""

from __future__ import annotations

import math

import numpy as np

from solver.forecast import ErrorTracker
from solver.forecast.tracking import combined_error
from solver.observation import Observation
from solver.policies.forecast_sources import ForecastSource


class ForecastErrorMonitor:
    """Scores a forecast source against the slots that follow, one market at a time.

    Called at a boundary, it first scores the forecasts it recorded at earlier boundaries
    against the slots closed since (one :class:`~solver.forecast.ErrorTracker` per market over
    ``horizon`` slots), then records the source's forecast from this boundary. The error is
    :func:`~solver.forecast.tracking.combined_error` of the markets' smoothed absolute
    percentage price errors and availability Brier scores (the forecast read as "capacity >
    0"); ``prior`` (say, the error a monitor of the same source ended with on earlier data) until
    something has been scored. Observations must come in increasing slot order.
    """

    def __init__(self, source: ForecastSource, horizon: int = 12, rate: float = 0.05,
                 prior: float = 0.0) -> None:
        self.source = source
        self.horizon = horizon
        self.rate = rate
        self.error = prior
        self._trackers: list[ErrorTracker] = []
        self._observed = 0

    def __call__(self, obs: Observation) -> float:
        if not self._trackers:
            self._trackers = [ErrorTracker(self.horizon, self.rate) for _ in obs.markets]
        if obs.slot < self._observed:
            raise ValueError(
                f"observation slot={obs.slot}: expected slots in increasing order (already "
                f"observed up to slot {self._observed})"
            )
        for t in range(self._observed, obs.slot):
            for m, tracker in enumerate(self._trackers):
                tracker.observe(float(obs.price_history[m, t]),
                                float(obs.availability_history[m, t]))
        self._observed = obs.slot
        price, availability = self.source.window(obs, self.horizon)
        for m, tracker in enumerate(self._trackers):
            tracker.record(np.asarray(price[m], dtype=float),
                           (np.asarray(availability[m]) > 0).astype(float))
        error = combined_error([t.price_error for t in self._trackers],
                               [t.availability_error for t in self._trackers])
        if not math.isnan(error):
            self.error = error
        return self.error
