"""The contract every forecaster keeps, models and baselines alike."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solver.forecast as forecast
from solver.forecast import MarketForecaster
from tests.forecast.series import (
    AVAILABILITY_FORECASTERS,
    PRICE_FORECASTERS,
    capacity,
    market_forecaster,
    step_prices,
    with_gaps,
)
from tests.properties import examples

CASES = [
    *[pytest.param(make, step_prices, id=f"price-{name}")
      for name, make in PRICE_FORECASTERS.items()],
    *[pytest.param(make, capacity, id=f"availability-{name}")
      for name, make in AVAILABILITY_FORECASTERS.items()],
]
HORIZON = 24


def learn(forecaster, values) -> None:
    for y in values:
        forecaster.learn_one(y)


@pytest.mark.parametrize(("make", "series"), CASES)
def test_pickle_round_trip_restores_the_exact_state(make, series):
    values = with_gaps(series(200))
    forecaster = make()
    learn(forecaster, values[:150])
    restored = pickle.loads(pickle.dumps(forecaster))
    np.testing.assert_array_equal(restored.forecast(HORIZON), forecaster.forecast(HORIZON))
    learn(forecaster, values[150:])
    learn(restored, values[150:])
    np.testing.assert_array_equal(restored.forecast(HORIZON), forecaster.forecast(HORIZON))


@pytest.mark.parametrize(("make", "series"), CASES)
def test_same_inputs_give_the_same_forecasts(make, series):
    values = with_gaps(series(200))
    first, second = make(), make()
    learn(first, values)
    learn(second, values)
    np.testing.assert_array_equal(first.forecast(HORIZON), second.forecast(HORIZON))
    assert repr(first) == repr(second)


@pytest.mark.parametrize(("make", "series"), CASES)
def test_inputs_are_not_mutated(make, series):
    values = with_gaps(series(120))
    values.setflags(write=False)
    before = values.copy()
    forecaster = make()
    learn(forecaster, values)
    forecaster.forecast(HORIZON)
    np.testing.assert_array_equal(values, before)


@pytest.mark.parametrize(("make", "series"), CASES)
def test_a_forecast_made_is_a_value_not_a_view(make, series):
    values = series(200)
    forecaster = make()
    learn(forecaster, values[:100])
    made = forecaster.forecast(HORIZON)
    kept = made.copy()
    learn(forecaster, values[100:])
    np.testing.assert_array_equal(made, kept)
    made[:] = -1.0
    again = forecaster.forecast(HORIZON)
    assert not np.any(again == -1.0)


@pytest.mark.parametrize(("make", "series"), CASES)
def test_warm_up_never_crashes(make, series):
    forecaster = make()
    assert np.isnan(forecaster.forecast(HORIZON)).all()
    learn(forecaster, [math.nan] * 3)
    assert np.isnan(forecaster.forecast(1)).all()
    first = series(1)[0]
    forecaster.learn_one(first)
    ahead = forecaster.forecast(HORIZON)
    assert ahead.shape == (HORIZON,) and np.isfinite(ahead).all()
    learn(forecaster, [math.nan, first, math.nan])
    assert np.isfinite(forecaster.forecast(HORIZON)).all()


@pytest.mark.parametrize(("make", "series"), CASES)
def test_bad_inputs_are_refused_with_the_value_named(make, series):
    forecaster = make()
    with pytest.raises(ValueError, match="horizon=0"):
        forecaster.forecast(0)
    with pytest.raises(ValueError, match="inf"):
        forecaster.learn_one(math.inf)


@pytest.mark.parametrize(("make", "series"), CASES)
def test_repr_rebuilds_an_equal_forecaster(make, series):
    forecaster = make()
    rebuilt = eval(repr(forecaster), vars(forecast))
    assert repr(rebuilt) == repr(forecaster)


@pytest.mark.parametrize("price", list(PRICE_FORECASTERS))
@given(
    steps=st.lists(
        st.one_of(st.just(math.nan), st.floats(-0.3, 0.3), st.just(0.0)), min_size=1,
        max_size=80,
    ),
    start=st.floats(0.01, 100.0),
)
@settings(max_examples=examples(25), deadline=None)
def test_price_forecasts_stay_finite_and_positive_on_any_steps(price, steps, start):
    forecaster = PRICE_FORECASTERS[price]()
    level, seen = start, False
    for step in steps:
        if math.isnan(step):
            forecaster.learn_one(math.nan)
        else:
            level *= math.exp(step)
            forecaster.learn_one(level)
            seen = True
    ahead = forecaster.forecast(HORIZON)
    if seen:
        assert np.isfinite(ahead).all() and (ahead > 0).all()
    else:
        assert np.isnan(ahead).all()


@given(st.lists(st.sampled_from([0.0, 1.0, 3.0, math.nan]), max_size=80))
@settings(max_examples=examples(40), deadline=None)
def test_availability_probabilities_stay_in_the_unit_interval(counts):
    forecaster = AVAILABILITY_FORECASTERS["markov"]()
    learn(forecaster, counts)
    ahead = forecaster.forecast(HORIZON)
    if any(not math.isnan(c) for c in counts):
        assert ((ahead >= 0) & (ahead <= 1)).all()
    else:
        assert np.isnan(ahead).all()


def test_market_forecaster_keeps_the_contract():
    prices, counts = with_gaps(step_prices(150)), with_gaps(capacity(150) * 2)
    prices.setflags(write=False)
    first, second = market_forecaster(), market_forecaster()
    for p, a in zip(prices, counts, strict=True):
        first.learn_one(p, a)
        second.learn_one(p, a)
    made = first.forecast(HORIZON)
    restored: MarketForecaster = pickle.loads(pickle.dumps(first))
    np.testing.assert_array_equal(restored.forecast(HORIZON).price, made.price)
    np.testing.assert_array_equal(second.forecast(HORIZON).availability, made.availability)
    np.testing.assert_array_equal(restored.errors.price_mape, first.errors.price_mape)
    kept = copy.deepcopy(made)
    first.learn_one(1.0, 1)
    np.testing.assert_array_equal(made.price, kept.price)
    with pytest.raises(ValueError):
        made.price[0] = 0.0
