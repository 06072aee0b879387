"""A boundary reads the same forecasts several times (the error tracker's, the outlook's): they
are made once per slot learned, and the outlooks stay what they were, bit for bit."""

from __future__ import annotations

import hashlib

from solver.forecast import market_factory, slot_seasonality
from solver.market import build_market_data
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from streams.contract import PublishedForecast, dump_event
from streams.pipeline import MarketStage
from streams.replay import trace_events

PUBLISHED_BEFORE = "9a3bea772f6f49d8cb06bc454c74342f4f4994ae6678954ec761e4d1b009c123"
"""The digest of the forecasts below as the market stage published them before its
forecasters remembered a boundary's forecasts (commit dffcc49): 2,163 forecasts."""


def test_the_market_stage_publishes_the_outlooks_it_published_before_bit_for_bit():
    ticks = synthetic_ticks(SyntheticMarketSpec(seed=11, n_markets=3, days=30))
    stage = MarketStage([t.market for t in ticks], 3600.0)
    digest, published = hashlib.sha256(), 0
    for event in trace_events(ticks, []):
        for out in stage.handle(event):
            if isinstance(out, PublishedForecast):
                digest.update(dump_event(out))
                published += 1
    assert (published, digest.hexdigest()) == (2163, PUBLISHED_BEFORE)


def test_what_a_caller_does_with_a_forecast_does_not_reach_the_next_one():
    data = build_market_data(synthetic_ticks(SyntheticMarketSpec(seed=4, n_markets=1,
                                                                 days=10)), 3600.0)
    season = slot_seasonality(data.origin, data.slot_seconds)
    meddled, left_alone = (market_factory()(season, 24) for _ in range(2))
    for t in range(data.n_slots):
        for forecaster in (meddled, left_alone):
            forecaster.learn_one(float(data.price[0, t]), float(data.availability[0, t]))
        meddled.availability.forecast(24)[:] = -1.0
        meddled.price.forecast(24)[:] = -1.0
        assert meddled.outlook(24).to_wire() == left_alone.outlook(24).to_wire()
