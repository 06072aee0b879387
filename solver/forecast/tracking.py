"""Online forecast errors by horizon, scored as the true values arrive."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from numba import njit

CALIBRATION_BINS = 10
LOG_LOSS_FLOOR = 1e-4
_ABS, _APE, _BRIER, _LOG_LOSS = range(4)  # rows of the per-horizon sums
_SUMS, _COUNTS = 4, 3  # rows of sums and of counts (the log-loss is over the Brier count)


class ErrorTracker:
    """Scores the forecasts of one market against the slots that follow.

    After each slot, :meth:`record` keeps the forecasts for the next ``window`` slots; when a
    slot's true values arrive, :meth:`observe` scores every kept forecast of that slot at its
    horizon (1 for the forecast made one slot before, …). Per horizon it keeps the running
    price MAE, price MAPE (percent; slots priced 0 are left out), and the availability Brier
    score, log-loss and calibration counts, with "capacity > 0" as the event. Unobserved values
    (``NaN``) on either side are not scored.

    ``price_error`` and ``availability_error`` sum each market up in one number for policy
    selection: the exponentially weighted mean (rate ``rate`` per slot) of the horizon-averaged
    absolute percentage error and Brier score of the forecasts scored at each slot.

    The last ``residuals`` log-ratios of true to forecast price are kept per horizon, from
    which :meth:`price_quantile_offsets` gives the price forecast's empirical error quantiles.
    """

    def __init__(self, window: int = 24, rate: float = 0.05, residuals: int = 500) -> None:
        if window < 1:
            raise ValueError(f"ErrorTracker window={window!r}: expected at least 1 slot")
        if not 0 < rate <= 1:
            raise ValueError(f"ErrorTracker rate={rate!r}: expected 0 < rate <= 1")
        if residuals < 1:
            raise ValueError(f"ErrorTracker residuals={residuals!r}: expected at least 1")
        self.window = window
        self.rate = rate
        self.residuals = residuals
        self._residuals = np.full((window, residuals), math.nan)  # per horizon, a ring
        self._ordered = np.full((window, residuals), math.nan)  # the same, sorted, NaN last
        self._residual_n = np.zeros(window, dtype=np.int64)
        # The kept forecasts, a ring of ``window`` (oldest at ``_kept_first``): the slot after
        # which each was made, its prices and its capacity probabilities.
        self._kept_made = np.zeros(window, dtype=np.int64)
        self._kept_price = np.zeros((window, window))
        self._kept_probability = np.zeros((window, window))
        self._kept_first = 0
        self._kept_n = 0
        self._next = 0
        # Per horizon: sums and counts of absolute and percentage price errors and of Brier
        # scores, and the log-loss sum (over the Brier count).
        self._sums = np.zeros((_SUMS, window))
        self._counts = np.zeros((_COUNTS, window), dtype=np.int64)
        self._calibration = np.zeros((window, CALIBRATION_BINS, 3))  # sum p, sum y, count
        self._price_error = math.nan
        self._availability_error = math.nan

    def __repr__(self) -> str:
        return (f"ErrorTracker(window={self.window}, rate={self.rate}, "
                f"residuals={self.residuals})")

    def record(self, price: np.ndarray, availability: np.ndarray) -> None:
        """Keep the forecasts (at least ``window`` slots each) made after the last observed
        slot (the oldest kept one goes once ``window`` are kept)."""
        for name, values in (("price", price), ("availability", availability)):
            if len(values) < self.window:
                raise ValueError(
                    f"{name} forecast of {len(values)} slots: expected at least "
                    f"window={self.window}"
                )
        if self._kept_n < self.window:
            at = (self._kept_first + self._kept_n) % self.window
            self._kept_n += 1
        else:
            at = self._kept_first
            self._kept_first = (at + 1) % self.window
        self._kept_made[at] = self._next - 1
        self._kept_price[at] = np.asarray(price, dtype=float)[: self.window]
        self._kept_probability[at] = np.asarray(availability, dtype=float)[: self.window]

    def observe(self, price: float, availability: float) -> None:
        """Score the kept forecasts of the next slot against its true price and capacity."""
        slot = self._next
        self._next += 1
        ape_sum, ape_n, brier_sum, brier_n = _score(
            float(price), float(availability), slot, self._kept_made, self._kept_price,
            self._kept_probability, self._kept_first, self._kept_n, self._residuals,
            self._ordered, self._residual_n, self._sums, self._counts, self._calibration)
        if ape_n < 0:
            raise ValueError("math domain error: a price ratio of 0 has no logarithm")
        if ape_n:
            self._price_error = _smooth(self._price_error, ape_sum / ape_n, self.rate)
        if brier_n:
            self._availability_error = _smooth(
                self._availability_error, brier_sum / brier_n, self.rate
            )

    @property
    def price_error(self) -> float:
        """Smoothed horizon-averaged absolute percentage price error, percent (``NaN`` until
        a forecast has been scored)."""
        return self._price_error

    @property
    def availability_error(self) -> float:
        """Smoothed horizon-averaged Brier score (``NaN`` until a forecast has been scored)."""
        return self._availability_error

    @property
    def price_mae(self) -> np.ndarray:
        """Mean absolute price error by horizon 1 .. window (``NaN`` where none was scored)."""
        return _mean(self._sums[_ABS], self._counts[_ABS])

    @property
    def price_mape(self) -> np.ndarray:
        """Mean absolute percentage price error by horizon, in percent."""
        return _mean(self._sums[_APE], self._counts[_APE])

    @property
    def availability_log_loss(self) -> np.ndarray:
        """Log-loss of the capacity probability by horizon (probabilities clipped to
        ``[LOG_LOSS_FLOOR, 1 - LOG_LOSS_FLOOR]``)."""
        return _mean(self._sums[_LOG_LOSS], self._counts[_BRIER])

    @property
    def calibration(self) -> np.ndarray:
        """``(window, bins, 3)``: per horizon and bin of forecast probability (tenths), the
        sum of the probabilities, the number of slots with capacity, and the count."""
        return self._calibration.copy()

    def price_quantile_offsets(self, levels: tuple[float, ...]) -> np.ndarray:
        """``(len(levels), window)``: quantiles of the log-ratio of true to forecast price by
        horizon (0 where nothing was scored yet)."""
        return _quantiles(self._ordered, np.minimum(self._residual_n, self.residuals),
                          np.asarray(levels, dtype=float))

    @property
    def availability_brier(self) -> np.ndarray:
        """Brier score of the capacity probability by horizon."""
        return _mean(self._sums[_BRIER], self._counts[_BRIER])


def combined_error(price_errors: Iterable[float], availability_errors: Iterable[float]
                   ) -> float:
    """Several markets' running errors in one number: the larger of the mean price error (in
    percent, as a share) and the mean availability Brier score, each over the markets scored so
    far (NaN while none is)."""
    price = [e / 100.0 for e in price_errors if not math.isnan(e)]
    brier = [e for e in availability_errors if not math.isnan(e)]
    if not price and not brier:
        return math.nan
    return max(float(np.mean(price)) if price else 0.0, float(np.mean(brier)) if brier else 0.0)


def _mean(totals: np.ndarray, counts: np.ndarray) -> np.ndarray:
    means = np.full(len(totals), math.nan)
    np.divide(totals, counts, out=means, where=counts > 0)
    return means


def _smooth(mean: float, value: float, rate: float) -> float:
    return value if math.isnan(mean) else mean + rate * (value - mean)


@njit(cache=True)
def _score(price: float, availability: float, slot: int, made: np.ndarray,
           kept_price: np.ndarray, kept_probability: np.ndarray, first: int, kept: int,
           residuals: np.ndarray, ordered: np.ndarray, residual_n: np.ndarray,
           sums: np.ndarray, counts: np.ndarray, calibration: np.ndarray,
           ) -> tuple[float, int, float, int]:
    """:meth:`ErrorTracker.observe`'s scoring of the kept forecasts, oldest first, in place;
    the sums and counts of the percentage errors and Brier scores it scored (a count of -1:
    a price ratio of 0, whose logarithm is undefined)."""
    window = kept_price.shape[1]
    price_known = not math.isnan(price)
    percent = price_known and price > 0
    event_known = not math.isnan(availability)
    event = (1.0 if availability > 0 else 0.0) if event_known else math.nan
    ape_sum, ape_n, brier_sum, brier_n = 0.0, 0, 0.0, 0
    for i in range(kept):
        at = (first + i) % window
        k = slot - made[at] - 1
        if k >= window:
            continue
        forecast = kept_price[at, k]
        if price_known and not math.isnan(forecast):
            error = abs(forecast - price)
            sums[_ABS, k] += error
            counts[_ABS, k] += 1
            if percent and forecast > 0:
                ratio = price / forecast
                if ratio == 0.0:
                    return 0.0, -1, 0.0, 0
                _replace(residuals[k], ordered[k], residual_n[k], math.log(ratio))
                residual_n[k] += 1
            if percent:
                ape = 100.0 * error / price
                sums[_APE, k] += ape
                counts[_APE, k] += 1
                ape_sum += ape
                ape_n += 1
        probability = kept_probability[at, k]
        if event_known and not math.isnan(probability):
            miss = probability - event
            brier = miss * miss
            sums[_BRIER, k] += brier
            counts[_BRIER, k] += 1
            clipped = min(max(probability, LOG_LOSS_FLOOR), 1.0 - LOG_LOSS_FLOOR)
            sums[_LOG_LOSS, k] -= math.log(clipped if event else 1.0 - clipped)
            b = min(int(probability * CALIBRATION_BINS), CALIBRATION_BINS - 1)
            calibration[k, b, 0] += probability
            calibration[k, b, 1] += event
            calibration[k, b, 2] += 1.0
            brier_sum += brier
            brier_n += 1
    return ape_sum, ape_n, brier_sum, brier_n


@njit(cache=True)
def _quantiles(ordered: np.ndarray, counts: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Each ``levels`` quantile of each row's first ``counts`` (sorted) entries, interpolated
    linearly between the two nearest ranks; 0 for a row without any."""
    out = np.zeros((len(levels), ordered.shape[0]))
    for k in range(ordered.shape[0]):
        last = counts[k] - 1
        if last < 0:
            continue
        for q in range(len(levels)):
            position = levels[q] * last
            low = math.floor(position)
            below, above = ordered[k, low], ordered[k, min(low + 1, last)]
            out[q, k] = below + (position - low) * (above - below)
    return out


@njit(cache=True)
def _replace(ring: np.ndarray, ordered: np.ndarray, written: int,
             value: float) -> None:
    """Write ``value`` over the oldest of a horizon's residual ``ring`` (``written`` so far),
    keeping ``ordered`` (its filled entries sorted, NaN after) the ring sorted."""
    size = len(ring)
    filled = min(written, size)
    if filled == size:  # the oldest goes: close its gap
        old = ring[written % size]
        at = np.searchsorted(ordered[:filled], old)
        ordered[at:filled - 1] = ordered[at + 1:filled].copy()
        filled -= 1
    at = np.searchsorted(ordered[:filled], value)
    ordered[at + 1:filled + 1] = ordered[at:filled].copy()
    ordered[at] = value
    ring[written % size] = value
