"""What every forecaster shares: the two-method interface, input checks and the slot cycle.

A forecaster follows one series of a market, one slot at a time. ``learn_one(y)`` takes the
value of the next slot (``NaN`` when the slot went unobserved); ``forecast(horizon)`` returns a
new array of the values expected for the ``horizon`` slots after the last one learned. Before
any value has been observed there is nothing to forecast from, and every entry is ``NaN``.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

SECONDS_PER_DAY = 86400.0
SECONDS_PER_WEEK = 7 * SECONDS_PER_DAY


class Described:
    """Mixin: ``repr`` rebuilt from the constructor arguments, which are stored as given."""

    def __repr__(self) -> str:
        names = [n for n in inspect.signature(type(self).__init__).parameters if n != "self"]
        args = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__name__}({args})"


class Forecaster(Protocol):
    """An online forecaster of one slotted series."""

    def learn_one(self, y: float) -> None: ...

    def forecast(self, horizon: int) -> np.ndarray: ...


@dataclass(frozen=True, slots=True)
class Seasonality:
    """The cycle of a slot grid: ``period`` slots per cycle, slot 0 at position ``phase``."""

    period: int
    phase: int

    def __post_init__(self) -> None:
        check_cycle("seasonality", self.period, self.phase)


def check_cycle(owner: str, period: int, phase: int = 0) -> None:
    """``period`` is at least one slot and ``phase`` a position within it (errors name
    ``owner``)."""
    if period < 1:
        raise ValueError(f"{owner} period={period!r}: expected at least 1 slot")
    if not 0 <= phase < period:
        raise ValueError(f"{owner} phase={phase!r}: expected 0 <= phase < period={period}")


def slot_seasonality(origin: float, slot_seconds: float) -> Seasonality:
    """The cycle of a grid starting at ``origin`` (Unix seconds) with slots of ``slot_seconds``:
    the UTC day, or the week (from Thursday, as Unix time 0) when slots last a day or more;
    the period is rounded to whole slots."""
    if not (math.isfinite(slot_seconds) and slot_seconds > 0):
        raise ValueError(f"slot_seconds={slot_seconds!r}: expected a positive number of seconds")
    cycle = SECONDS_PER_DAY if slot_seconds < SECONDS_PER_DAY else SECONDS_PER_WEEK
    period = max(1, round(cycle / slot_seconds))
    phase = math.floor((origin % cycle) / slot_seconds) % period
    return Seasonality(period, phase)


def check_horizon(horizon: int) -> int:
    """``horizon`` as an int, or a ``ValueError`` unless it is a whole number of slots >= 1."""
    if isinstance(horizon, bool) or not isinstance(horizon, int | np.integer) or horizon < 1:
        raise ValueError(f"horizon={horizon!r}: expected a whole number of slots >= 1")
    return int(horizon)


def check_value(y: float) -> float:
    """``y`` as a float: a finite value, or ``NaN`` for an unobserved slot."""
    value = float(y)
    if math.isinf(value):
        raise ValueError(f"y={y!r}: expected a finite value, or NaN for an unobserved slot")
    return value


def check_price(y: float) -> float:
    """``y`` as a float: a price > 0, or ``NaN`` for an unobserved slot."""
    value = float(y)
    if not (math.isnan(value) or (math.isfinite(value) and value > 0)):
        raise ValueError(
            f"price={y!r}: expected a finite price > 0, or NaN for an unobserved slot"
        )
    return value


def unknown(horizon: int) -> np.ndarray:
    """The forecast of a forecaster that has observed nothing yet."""
    return np.full(horizon, math.nan)
