"""A boundary reads the same forecasts several times (the error tracker's, the outlook's): they
are made once per slot learned, and the outlooks are those made afresh at every read, bit for
bit (compared on the same machine: the last bits of numpy's sums differ between CPUs)."""

from __future__ import annotations

import hashlib

from solver.forecast import market_factory, slot_seasonality
from solver.forecast.drift import LearnedDrift
from solver.forecast.market import MarketForecaster
from solver.forecast.semi_markov import SemiMarkovAvailability
from solver.market import build_market_data
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from streams.contract import PublishedForecast, dump_event
from streams.pipeline.market_stage import MarketStage
from streams.pipeline.trace_events import trace_events


def published(ticks: list) -> tuple[int, str]:
    """How many forecasts a market stage publishes on ``ticks``, and their digest."""
    stage = MarketStage([t.market for t in ticks], 3600.0)
    digest, count = hashlib.sha256(), 0
    for event in trace_events(ticks, []):
        for out in stage.handle(event):
            if isinstance(out, PublishedForecast):
                digest.update(dump_event(out))
                count += 1
    return count, digest.hexdigest()


def test_the_market_stage_publishes_the_outlooks_it_would_make_afresh_bit_for_bit(monkeypatch):
    ticks = synthetic_ticks(SyntheticMarketSpec(seed=11, n_markets=3, days=30))
    remembered = published(ticks)
    # The same forecasters made to forget what they made before each forecast.
    for cls, forget in ((MarketForecaster, lambda f: setattr(f, "_ahead", None)),
                        (SemiMarkovAvailability, lambda f: f._made.clear()),
                        (LearnedDrift, lambda f: f._made.clear())):
        def forecast(self, horizon, _made=cls.forecast, _forget=forget):
            _forget(self)
            return _made(self, horizon)

        monkeypatch.setattr(cls, "forecast", forecast)
    afresh = published(ticks)
    assert remembered == afresh and remembered[0] >= 3 * 30 * 24  # one a slot per market


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
