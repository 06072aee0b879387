"""A trace's markets redrawn from the capacity model fitted to them: what planning loses when
the market is exactly as predictable as the learned model assumes.

Each market's availability is replaced by one draw of the semi-Markov model
(:class:`~solver.forecast.semi_markov.SemiMarkovAvailability`: run hazards by age and time of
day) and, while capacity lasts, of the level model
(:class:`~solver.forecast.levels.CapacityLevels`), both fitted to all of the market's ticks
without forgetting. A run starts at a level drawn from the level shares; while it lasts, the
level is drawn again at the rate that makes it repeat from one tick to the next as often as the
fitted persistence says (a draw may land on the same level). Prices and times are kept. Ticks
are read as a grid of the trace's median tick spacing, which fixes the time of day of each
tick.

On such a market the forecasters learn the model that drew it, so a planner's distance to the
hindsight optimum is what planning under that uncertainty costs; on the real trace, the extra
distance is what the market reveals to hindsight and not to the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from solver.forecast.base import slot_seasonality
from solver.forecast.hazards import HazardTable, age_bucket
from solver.forecast.levels import CapacityLevels
from solver.forecast.semi_markov import SemiMarkovAvailability
from solver.market import MarketTicks

NO_FORGETTING = 1e9
"""Half-life, in cycles, of the fitted models: the whole trace counts alike."""


def resample_availability(ticks: Sequence[MarketTicks], seed: int) -> list[MarketTicks]:
    """Every market of ``ticks`` with its availability redrawn (module doc); the same
    ``seed`` gives the same draw."""
    rng = np.random.default_rng(seed)
    return [replace(t, available=_draw(t, rng)) for t in ticks]


def _draw(ticks: MarketTicks, rng: np.random.Generator) -> np.ndarray:
    spacing = float(np.median(np.diff(ticks.times))) if len(ticks.times) > 1 else 3600.0
    season = slot_seasonality(float(ticks.times[0]), spacing)
    runs = SemiMarkovAvailability(season.period, season.phase, half_life_cycles=NO_FORGETTING)
    levels = CapacityLevels(season.period, half_life_cycles=NO_FORGETTING)
    for count in ticks.available:
        runs.learn_one(count)
        levels.learn_one(count)
    hazard = runs.hazards().hazard
    n = len(ticks.available)
    days = HazardTable(hazard, season.period, season.phase).days(1, n)
    level = levels.snapshot()
    shares = level.shares / level.shares.sum() if level.shares.sum() > 0 else np.ones(1)
    repeat_by_chance = float(shares @ shares)
    redraw = (min(1.0, (1.0 - level.persistence) / (1.0 - repeat_by_chance))
              if repeat_by_chance < 1.0 else 0.0)
    out = np.zeros(n, dtype=np.int64)
    first = int(ticks.available[0])
    state, age, current = int(first > 0), 1, first
    for i in range(n):
        out[i] = current if state else 0
        if rng.random() < hazard[state, age_bucket(age), days[i]]:
            state, age = 1 - state, 1
            current = _level(shares, rng) if state else 0
        else:
            age += 1
            if state and rng.random() < redraw:
                current = _level(shares, rng)
    return out


def _level(shares: np.ndarray, rng: np.random.Generator) -> int:
    return int(rng.choice(len(shares), p=shares)) + 1
