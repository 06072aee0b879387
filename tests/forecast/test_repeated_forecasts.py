"""Forecasts asked for again before the next slot is learned are the same, bit for bit, as
those of a forecaster asked once: what a boundary reads several times is made once."""

from __future__ import annotations

import numpy as np

from solver.forecast import market_factory, slot_seasonality
from solver.market import build_market_data
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks


def test_outlooks_do_not_depend_on_what_was_asked_before():
    data = build_market_data(synthetic_ticks(SyntheticMarketSpec(seed=4, n_markets=2,
                                                                 days=20)), 3600.0)
    season = slot_seasonality(data.origin, data.slot_seconds)
    asked_often, asked_once = (market_factory()(season, 24) for _ in range(2))
    for t in range(data.n_slots):
        price = float(data.price[0, t])
        available = float(data.availability[0, t])
        for horizon in (24, 6, 24):  # before learning: must not linger after it
            asked_often.forecast(horizon)
            asked_often.availability.forecast(horizon)[:] = -1.0  # the caller's own array
            asked_often.price.forecast(horizon)[:] = -1.0
        asked_often.outlook(24)
        asked_often.learn_one(price, available)
        asked_once.learn_one(price, available)
        often, once = asked_often.outlook(24), asked_once.outlook(24)
        assert often.to_wire() == once.to_wire()
        assert np.array_equal(asked_often.forecast(12).price, asked_once.forecast(12).price,
                              equal_nan=True)
