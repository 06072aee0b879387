"""Online forecast errors by horizon, scored as the true values arrive."""

from __future__ import annotations

import math
from collections import deque

import numpy as np

CALIBRATION_BINS = 10
LOG_LOSS_FLOOR = 1e-4


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
        self._residuals = np.full((window, residuals), math.nan)
        self._residual_n = [0] * window
        # (slot after which it was made, price forecast, availability forecast), newest last.
        self._kept: deque[tuple[int, list[float], list[float]]] = deque(maxlen=window)
        self._next = 0
        self._abs = [0.0] * window
        self._ape = [0.0] * window
        self._brier = [0.0] * window
        self._abs_n = [0] * window
        self._ape_n = [0] * window
        self._brier_n = [0] * window
        self._log_loss = [0.0] * window
        self._calibration = np.zeros((window, CALIBRATION_BINS, 3))  # sum p, sum y, count
        self._price_error = math.nan
        self._availability_error = math.nan

    def __repr__(self) -> str:
        return (f"ErrorTracker(window={self.window}, rate={self.rate}, "
                f"residuals={self.residuals})")

    def record(self, price: np.ndarray, availability: np.ndarray) -> None:
        """Keep the forecasts (at least ``window`` slots each) made after the last observed
        slot."""
        for name, values in (("price", price), ("availability", availability)):
            if len(values) < self.window:
                raise ValueError(
                    f"{name} forecast of {len(values)} slots: expected at least "
                    f"window={self.window}"
                )
        self._kept.append((
            self._next - 1,
            np.asarray(price, dtype=float)[: self.window].tolist(),
            np.asarray(availability, dtype=float)[: self.window].tolist(),
        ))

    def observe(self, price: float, availability: float) -> None:
        """Score the kept forecasts of the next slot against its true price and capacity."""
        slot = self._next
        self._next += 1
        price_known = not math.isnan(price)
        percent = price_known and price > 0
        event_known = not math.isnan(availability)
        event = float(availability > 0) if event_known else math.nan
        window, size = self.window, self.residuals
        residuals, residual_n = self._residuals, self._residual_n
        calibration = self._calibration
        ape_sum, ape_n, brier_sum, brier_n = 0.0, 0, 0.0, 0
        for made, prices, probabilities in self._kept:
            k = slot - made - 1
            if k >= window:
                continue
            forecast = prices[k]
            if price_known and not math.isnan(forecast):
                error = abs(forecast - price)
                self._abs[k] += error
                self._abs_n[k] += 1
                if percent and forecast > 0:
                    residuals[k, residual_n[k] % size] = math.log(price / forecast)
                    residual_n[k] += 1
                if percent:
                    ape = 100.0 * error / price
                    self._ape[k] += ape
                    self._ape_n[k] += 1
                    ape_sum += ape
                    ape_n += 1
            probability = probabilities[k]
            if event_known and not math.isnan(probability):
                brier = (probability - event) ** 2
                self._brier[k] += brier
                self._brier_n[k] += 1
                clipped = min(max(probability, LOG_LOSS_FLOOR), 1.0 - LOG_LOSS_FLOOR)
                self._log_loss[k] -= math.log(clipped if event else 1.0 - clipped)
                b = min(int(probability * CALIBRATION_BINS), CALIBRATION_BINS - 1)
                calibration[k, b, 0] += probability
                calibration[k, b, 1] += event
                calibration[k, b, 2] += 1.0
                brier_sum += brier
                brier_n += 1
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
        return _mean(self._abs, self._abs_n)

    @property
    def price_mape(self) -> np.ndarray:
        """Mean absolute percentage price error by horizon, in percent."""
        return _mean(self._ape, self._ape_n)

    @property
    def availability_log_loss(self) -> np.ndarray:
        """Log-loss of the capacity probability by horizon (probabilities clipped to
        ``[LOG_LOSS_FLOOR, 1 - LOG_LOSS_FLOOR]``)."""
        return _mean(self._log_loss, self._brier_n)

    @property
    def calibration(self) -> np.ndarray:
        """``(window, bins, 3)``: per horizon and bin of forecast probability (tenths), the
        sum of the probabilities, the number of slots with capacity, and the count."""
        return self._calibration.copy()

    def price_quantile_offsets(self, levels: tuple[float, ...]) -> np.ndarray:
        """``(len(levels), window)``: quantiles of the log-ratio of true to forecast price by
        horizon (0 where nothing was scored yet)."""
        counts = np.minimum(np.array(self._residual_n), self.residuals)
        ordered = np.sort(self._residuals, axis=1)  # unfilled entries (NaN) sort last
        position = np.asarray(levels, dtype=float)[:, None] * np.maximum(counts - 1, 0)
        low = np.floor(position).astype(np.int64)
        high = np.minimum(low + 1, np.maximum(counts - 1, 0))
        rows = np.arange(self.window)[None, :]
        below, above = ordered[rows, low], ordered[rows, high]
        out = below + (position - low) * (above - below)
        return np.where(counts > 0, out, 0.0)

    @property
    def availability_brier(self) -> np.ndarray:
        """Brier score of the capacity probability by horizon."""
        return _mean(self._brier, self._brier_n)


def _mean(totals: list[float], counts: list[int]) -> np.ndarray:
    return np.array([t / n if n else math.nan for t, n in zip(totals, counts, strict=True)])


def _smooth(mean: float, value: float, rate: float) -> float:
    return value if math.isnan(mean) else mean + rate * (value - mean)
