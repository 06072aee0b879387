"""The online error tracker, on values small enough to check by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.forecast import ErrorTracker
from solver.forecast.tracking import combined_error


def test_each_forecast_is_scored_at_its_horizon_when_its_slot_arrives():
    tracker = ErrorTracker(window=2, rate=0.5)
    tracker.observe(2.0, 1)                       # slot 0: nothing kept yet
    tracker.record([2.0, 2.5], [1.0, 0.5])        # made after slot 0 for slots 1, 2
    tracker.observe(4.0, 0)                       # slot 1: horizon 1 of that forecast
    tracker.record([3.0, 5.0], [0.2, 0.6])        # made after slot 1 for slots 2, 3
    tracker.observe(5.0, 2)                       # slot 2: horizon 2 (2.5) and horizon 1 (3.0)
    # Horizon 1: |2 - 4| = 2 (50 %), |3 - 5| = 2 (40 %); horizon 2: |2.5 - 5| = 2.5 (50 %).
    np.testing.assert_allclose(tracker.price_mae, [2.0, 2.5])
    np.testing.assert_allclose(tracker.price_mape, [45.0, 50.0])
    # Brier, capacity > 0 as the event: horizon 1: (1 - 0)², (0.2 - 1)²; horizon 2: (0.5 - 1)².
    np.testing.assert_allclose(tracker.availability_brier, [(1.0 + 0.64) / 2, 0.25])
    # Smoothed errors: slot 1 gives 50 % and 1.0; slot 2 averages its horizons (45 %, 0.445)
    # and moves halfway there.
    assert tracker.price_error == pytest.approx(50.0 + 0.5 * (45.0 - 50.0))
    assert tracker.availability_error == pytest.approx(1.0 + 0.5 * ((0.64 + 0.25) / 2 - 1.0))


def test_unobserved_values_and_unknown_forecasts_are_not_scored():
    tracker = ErrorTracker(window=1)
    tracker.record([math.nan], [0.5])
    tracker.observe(3.0, math.nan)
    assert np.isnan(tracker.price_mae).all() and np.isnan(tracker.availability_brier).all()
    assert math.isnan(tracker.price_error) and math.isnan(tracker.availability_error)
    tracker.record([3.0], [0.5])
    tracker.observe(0.0, 0)
    # A price of 0 has an absolute error but no percentage error.
    np.testing.assert_allclose(tracker.price_mae, [3.0])
    assert np.isnan(tracker.price_mape).all()
    np.testing.assert_allclose(tracker.availability_brier, [0.25])


def test_a_slot_without_a_recorded_forecast_leaves_older_forecasts_at_their_own_horizon():
    tracker = ErrorTracker(window=3)
    tracker.record([1.0, 2.0, 3.0], [1.0, 1.0, 1.0])   # made before slot 0
    tracker.observe(1.0, 1)                             # slot 0, horizon 1: exact
    tracker.observe(1.0, 1)                             # slot 1, horizon 2: off by 1
    tracker.observe(1.0, 1)                             # slot 2, horizon 3: off by 2
    tracker.observe(1.0, 1)                             # slot 3: beyond the window
    np.testing.assert_allclose(tracker.price_mae, [0.0, 1.0, 2.0])


def test_bad_settings_and_short_forecasts_are_refused():
    with pytest.raises(ValueError, match="window=0"):
        ErrorTracker(window=0)
    with pytest.raises(ValueError, match="rate=0"):
        ErrorTracker(rate=0)
    with pytest.raises(ValueError, match="price forecast of 1 slots: expected at least window=2"):
        ErrorTracker(window=2).record([1.0], [1.0, 1.0])


@given(st.integers(1, 3), st.integers(1, 5),
       st.lists(st.tuples(st.sampled_from([0.5, 1.0, 2.0, 3.0]), st.sampled_from([1.0, 2.0])),
                min_size=1, max_size=40))
def test_the_quantiles_are_those_of_the_latest_residuals_at_each_horizon(window, size, slots):
    """Each horizon's offsets are the quantiles of its last ``size`` log-ratios of true to
    forecast price, however many came before (ties included)."""
    tracker = ErrorTracker(window=window, residuals=size)
    by_horizon: list[list[float]] = [[] for _ in range(window)]
    kept: list[tuple[int, float]] = []  # (slot after which made, flat forecast)
    for slot, (price, forecast) in enumerate(slots):
        tracker.observe(price, 1)
        for made, value in kept[-window:]:
            if (k := slot - made - 1) < window:
                by_horizon[k].append(math.log(price / value))
        tracker.record([forecast] * window, [0.5] * window)
        kept.append((slot, forecast))
    levels = (0.0, 0.1, 0.5, 0.9, 1.0)
    offsets = tracker.price_quantile_offsets(levels)
    for k, residuals in enumerate(by_horizon):
        expected = np.quantile(residuals[-size:], levels) if residuals else np.zeros(len(levels))
        np.testing.assert_allclose(offsets[:, k], expected, atol=1e-12)


def test_the_combined_error_is_the_larger_mean_over_the_markets_scored():
    nan = math.nan
    assert math.isnan(combined_error([nan, nan], [nan, nan]))
    assert combined_error([10.0, nan, 30.0], [nan, 0.1, nan]) == pytest.approx(0.2)
    assert combined_error([nan, 4.0], [0.3, 0.1]) == pytest.approx(0.2)
    assert combined_error([], [0.25]) == 0.25
