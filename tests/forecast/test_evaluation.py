"""Progressive validation on market data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from solver.forecast import (
    MarketForecaster,
    Persistence,
    Seasonality,
    baseline_factories,
    evaluate_markets,
    evaluate_series,
    forecast_from,
    market_factory,
)
from tests.forecast.series import capacity, markets, step_prices

SEASON = Seasonality(24, 0)


def test_persistence_scores_by_hand():
    price = np.array([1.0, 2.0, 2.0, 4.0])
    availability = np.array([1, 0, 0, 1])
    scores = evaluate_series(price, availability, MarketForecaster(Persistence(), Persistence(), 2),
                             horizons=(1, 2))
    # Horizon 1 forecasts slots 1..3 from slots 0..2: errors 1, 0, 2 on 2, 2, 4.
    assert scores.price_mae == {1: pytest.approx(1.0), 2: pytest.approx(1.5)}
    assert scores.price_mape[1] == pytest.approx(100 * (0.5 + 0.0 + 0.5) / 3)
    # Horizon 2 forecasts slots 2, 3 from slots 0, 1: errors 1, 2 on 2, 4.
    assert scores.price_mape[2] == pytest.approx(50.0)
    # Capacity: horizon 1 predicts 1, 0, 0 for 0, 0, 1; horizon 2 predicts 1, 0 for 0, 1.
    assert scores.availability_brier == {1: pytest.approx(2 / 3), 2: pytest.approx(1.0)}


def test_every_forecaster_is_scored_on_every_market():
    data = markets([step_prices(120, 1), step_prices(120, 2)],
                   [capacity(120, 1), capacity(120, 2)])
    factories = {"model": market_factory(), **baseline_factories()}
    scores = evaluate_markets(data, factories, horizons=(6, 1))
    assert list(scores) == ["model", "persistence", "seasonal-naive", "moving-average"]
    for by_market in scores.values():
        assert list(by_market) == [m.key for m in data.markets]
        for s in by_market.values():
            assert list(s.price_mape) == [1, 6]
            assert all(math.isfinite(v) for v in (*s.price_mape.values(),
                                                  *s.availability_brier.values()))


def test_evaluation_inputs_are_not_mutated():
    data = markets(step_prices(60), capacity(60))
    before = data.price.copy(), data.availability.copy()
    evaluate_markets(data, {"model": market_factory()})
    np.testing.assert_array_equal(data.price, before[0])
    np.testing.assert_array_equal(data.availability, before[1])


def test_forecast_from_a_slot_sees_only_the_slots_before():
    price, availability = step_prices(100), capacity(100)
    made = forecast_from(price, availability, market_factory()(SEASON, 24), 49, 24)
    changed = price.copy()
    changed[50:] *= 10.0
    again = forecast_from(changed, availability, market_factory()(SEASON, 24), 49, 24)
    np.testing.assert_array_equal(made.price, again.price)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: evaluate_series(np.ones(3), np.ones(3), market_factory()(SEASON, 6), (12,)),
         "window=6: expected at least the longest horizon 12"),
        (lambda: evaluate_series(np.ones(3), np.ones(2), market_factory()(SEASON, 6), (1,)),
         "price of 3 slots and availability of 2 slots"),
        (lambda: evaluate_markets(markets(np.ones(3), np.ones(3)), {}, horizons=(0,)),
         "horizons=\\(0,\\)"),
        (lambda: market_factory(price="oracle"), "price model='oracle'"),
        (lambda: forecast_from(np.ones(3), np.ones(3), market_factory()(SEASON, 6), 3, 1),
         "slot=3: expected 0 <= slot < 3"),
    ],
)
def test_bad_requests_are_refused_with_the_value_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
