"""What each model and baseline forecasts, on series whose answer is known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from solver.forecast import (
    HoltWintersPrice,
    LearnedDrift,
    MarkovAvailability,
    MovingAverage,
    Persistence,
    Seasonality,
    SeasonalNaive,
    SnarimaxPrice,
    slot_seasonality,
)


def learn(forecaster, values):
    for y in values:
        forecaster.learn_one(y)
    return forecaster


def test_baselines_forecast_by_hand():
    values = [1.0, 2.0, math.nan, 4.0, 5.0]
    np.testing.assert_array_equal(learn(Persistence(), values).forecast(3), [5.0] * 3)
    np.testing.assert_array_equal(learn(MovingAverage(3), values).forecast(2), [4.5, 4.5])
    # Season of 3: slots ahead repeat slots 2, 3, 4; slot 2 was unobserved, so the last value.
    np.testing.assert_array_equal(
        learn(SeasonalNaive(3), values).forecast(7), [5.0, 4.0, 5.0, 5.0, 4.0, 5.0, 5.0]
    )
    # Fewer values than a season: the slots before the data repeat the last value.
    np.testing.assert_array_equal(learn(SeasonalNaive(4), [1.0, 2.0]).forecast(4),
                                  [2.0, 2.0, 1.0, 2.0])


def test_learned_drift_starts_as_persistence_and_learns_a_steady_trend():
    model = LearnedDrift()
    learn(model, [2.0, 2.0])
    np.testing.assert_allclose(model.forecast(5), [2.0] * 5)
    growth = 0.002                                   # 20 basis points per slot
    prices = 2.0 * np.exp(growth * np.arange(400))
    learn(model, prices)
    ahead = model.forecast(24)
    truth = prices[-1] * np.exp(growth * np.arange(1, 25))
    persistence_error = abs(prices[-1] - truth[-1])
    assert abs(ahead[-1] - truth[-1]) < 0.2 * persistence_error
    assert np.all(np.diff(ahead) > 0)


def test_learned_drift_keeps_the_price_over_short_horizons_of_a_step_series():
    # A step of +1 % every 10 slots: within a slot or two a step is unlikely, so the median
    # keeps the price; a day ahead, two or three steps are certain and the forecast rises.
    prices = 1.0 * np.exp(0.01 * (np.arange(600) // 10))
    model = learn(LearnedDrift(), prices)
    ahead = model.forecast(24)
    assert ahead[0] == pytest.approx(prices[-1], rel=2e-3)
    assert prices[-1] * math.exp(0.01) < ahead[23] < prices[-1] * math.exp(0.03)


def test_learned_drift_counts_horizons_from_the_last_observed_slot():
    prices = 2.0 * np.exp(0.002 * np.arange(300))
    model = learn(LearnedDrift(), prices)
    before = model.forecast(6)
    learn(model, [math.nan, math.nan])
    np.testing.assert_allclose(model.forecast(4), before[2:])


def test_learned_drift_clips_a_regime_shift_to_max_step():
    model = learn(LearnedDrift(max_step=0.05), [1.0] * 50 + [10.0])
    assert model.forecast(24)[-1] < 10.0 * math.exp(24 * 0.05)


@pytest.mark.parametrize("model", [HoltWintersPrice(), SnarimaxPrice()], ids=repr)
def test_river_models_start_as_persistence_and_skip_unobserved_slots(model):
    model.learn_one(3.0)
    np.testing.assert_array_equal(model.forecast(4), [3.0] * 4)
    learn(model, 3.0 * np.exp(0.001 * np.arange(1, 200)))
    before = model.forecast(6)
    learn(model, [math.nan, math.nan])
    np.testing.assert_allclose(model.forecast(4), before[2:])


def test_markov_learns_the_time_of_day_of_capacity():
    # Capacity from 00:00 to 11:59, none after, for 20 days; the grid starts at 06:00.
    hours = (np.arange(20 * 24) + 6) % 24
    capacity = (hours < 12).astype(float)
    by_hour = learn(MarkovAvailability(period=24, phase=6), capacity)
    all_day = learn(MarkovAvailability(period=24, phase=6, buckets=1), capacity)
    # The last slot learned is 05:00, so the next ones are 06:00 ... 05:00.
    ahead = by_hour.forecast(24)
    next_hours = (np.arange(24) + 6) % 24
    assert ahead[next_hours < 12].min() > ahead[next_hours >= 12].max() + 0.3

    def brier(forecast):
        return float(np.mean((forecast - (next_hours < 12)) ** 2))

    assert brier(ahead) < 0.5 * brier(all_day.forecast(24))


def test_markov_tends_to_the_long_run_share_far_ahead():
    rng = np.random.default_rng(3)
    states = [1.0]
    for _ in range(3000):   # stay with probability 0.9 from either state: long-run share 1/2
        states.append(states[-1] if rng.random() < 0.9 else 1.0 - states[-1])
    model = learn(MarkovAvailability(period=1, phase=0, buckets=1, decay=1.0, bucket_decay=1.0),
                  states)
    ahead = model.forecast(200)
    assert ahead[0] == pytest.approx(0.9 if states[-1] else 0.1, abs=0.03)
    assert ahead[-1] == pytest.approx(0.5, abs=0.05)


def test_markov_counts_no_transition_across_an_unobserved_slot():
    model = learn(MarkovAvailability(period=1, phase=0, buckets=1, prior=1.0),
                  [1, math.nan, 0, math.nan, 1, math.nan, 0])
    # Nothing was counted, so the chain is the prior: 1/2 from either state.
    np.testing.assert_allclose(model.forecast(3), [0.5, 0.5, 0.5])


def test_markov_reads_counts_as_capacity_and_refuses_negative_ones():
    model = learn(MarkovAvailability(period=1, phase=0, buckets=1), [3, 3, 3])
    assert model.forecast(1)[0] > 0.5
    with pytest.raises(ValueError, match=r"availability=-1: expected a count >= 0"):
        model.learn_one(-1)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: LearnedDrift(anchors=(3, 1)), "anchors=\\(3, 1\\)"),
        (lambda: LearnedDrift(smoothing=0), "smoothing=0"),
        (lambda: LearnedDrift(max_step=-1), "max_step=-1"),
        (lambda: MarkovAvailability(period=24, phase=24), "phase=24"),
        (lambda: MarkovAvailability(decay=1.5), "decay=1.5"),
        (lambda: MarkovAvailability(bucket_decay=0), "bucket_decay=0"),
        (lambda: MarkovAvailability(prior=0), "prior=0"),
        (lambda: SeasonalNaive(0), "period=0"),
        (lambda: MovingAverage(0), "window=0"),
    ],
)
def test_bad_settings_are_refused_with_the_value_named(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_price_models_refuse_non_positive_prices():
    with pytest.raises(ValueError, match=r"price=0.0: expected a finite price > 0"):
        LearnedDrift().learn_one(0.0)


def test_the_slot_cycle_is_the_day_or_the_week():
    # Hourly slots from 01:00 UTC: a 24-slot day starting at its second slot.
    assert slot_seasonality(3600.0, 3600.0) == Seasonality(24, 1)
    # Daily slots from the Unix epoch (a Thursday) + 2 days: a 7-slot week at position 2.
    assert slot_seasonality(2 * 86400.0, 86400.0) == Seasonality(7, 2)
    # 195 s ticks: the day rounds to 443 slots.
    assert slot_seasonality(0.0, 195.0).period == 443
    with pytest.raises(ValueError, match="slot_seconds=0"):
        slot_seasonality(0.0, 0.0)
