"""Markets redrawn from the capacity model fitted to them."""

import numpy as np
import pytest

from solver.evaluation.resample import resample_availability
from solver.forecast.hazards import age_bucket
from solver.forecast.levels import CapacityLevels
from solver.forecast.semi_markov import SemiMarkovAvailability
from solver.market import Market, MarketTicks
from tests.forecast.series import PERIOD, semi_markov_series, true_hazard

MIDNIGHT = 1_735_689_600
"""2025-01-01 00:00 UTC: hourly ticks from here put slot 0 at the start of the day."""


def hourly(available, zone="us-east-1a") -> MarketTicks:
    n = len(available)
    market = Market("aws", "us-east-1", zone, "p3.2xlarge", 3.06)
    return MarketTicks(market, MIDNIGHT + 3600.0 * np.arange(n), np.linspace(0.9, 1.1, n),
                       np.asarray(available, dtype=np.int64))


def fitted(available) -> SemiMarkovAvailability:
    model = SemiMarkovAvailability(PERIOD, 0, day_buckets=2, half_life_cycles=1e6)
    for y in available:
        model.learn_one(y)
    return model


@pytest.fixture(scope="module")
def probe():
    return hourly(semi_markov_series(60_000, seed=3))


def test_a_redrawn_market_has_the_run_hazards_of_the_one_it_was_fitted_to(probe):
    (redrawn,) = resample_availability([probe], seed=7)
    assert set(np.unique(redrawn.available)) == {0, 1}
    assert not np.array_equal(redrawn.available, probe.available)
    table = fitted(redrawn.available).hazards()
    for state in (0, 1):
        for age in (1, 2, 3, 4, 6, 12):
            for day, position in ((0, 3), (1, 15)):
                got = table.hazard[state, age_bucket(age), day]
                assert got == pytest.approx(true_hazard(state, age, position), abs=0.03), (
                    state, age, day)


def test_redrawing_keeps_times_and_prices_and_is_seeded(probe):
    first, again, other = (resample_availability([probe], seed)[0] for seed in (1, 1, 2))
    np.testing.assert_array_equal(first.available, again.available)
    assert not np.array_equal(first.available, other.available)
    np.testing.assert_array_equal(first.times, probe.times)
    np.testing.assert_array_equal(first.prices, probe.prices)
    assert first.market == probe.market


def test_counted_capacity_is_redrawn_at_the_levels_seen_with_their_persistence():
    rng = np.random.default_rng(4)
    runs = semi_markov_series(40_000, seed=5)
    levels, level = np.empty(len(runs), dtype=np.int64), 16
    for t in range(len(runs)):
        if rng.random() < 0.1:
            level = int(rng.choice([4, 12, 16], p=[0.2, 0.3, 0.5]))
        levels[t] = level
    counts = (runs * levels).astype(np.int64)
    (redrawn,) = resample_availability([hourly(counts)], seed=3)
    assert set(np.unique(redrawn.available)) == {0, 4, 12, 16}
    original, drawn = CapacityLevels(PERIOD, 1e6), CapacityLevels(PERIOD, 1e6)
    for model, series in ((original, counts), (drawn, redrawn.available)):
        for y in series:
            model.learn_one(y)
    expected, got = original.snapshot(), drawn.snapshot()
    assert got.persistence == pytest.approx(expected.persistence, abs=0.02)
    np.testing.assert_allclose(got.shares / got.shares.sum(),
                               expected.shares / expected.shares.sum(), atol=0.03)
