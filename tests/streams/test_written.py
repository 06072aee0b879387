import dataclasses
import math
from datetime import datetime

import numpy as np
import pytest
from pydantic import BaseModel

from solver.forecast.outlook import MarketOutlook
from solver.market import build_market_data
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from solver.workload import WorkloadSpec, generate_jobs
from streams.contract import EpochClosed, MarketBoundary, PublishedForecast, parse_event
from streams.contract.codec import read_forecast_envelope
from streams.pipeline.coordinator import EpochCoordinator
from streams.pipeline.outlooks import MADE
from streams.pipeline.scheduler import PartitionScheduler
from streams.pipeline.trace_events import trace_events
from streams.pipeline.written import WRITTEN, Newest
from streams.runners.memory import run_in_memory

SLOT = 3600.0


@pytest.fixture(scope="module")
def market():
    """Three markets for four days, a tick every 15 minutes, and 12 short jobs."""
    ticks = synthetic_ticks(SyntheticMarketSpec(seed=5, n_markets=3, days=4, tick_seconds=900))
    data = build_market_data(ticks, SLOT)
    return ticks, data, generate_jobs(data, 12, WorkloadSpec(seed=5, workload_range=(4.0, 12.0)))


@pytest.fixture
def written(monkeypatch):
    """The process's written events and made outlooks, emptied for the test."""
    monkeypatch.setattr(WRITTEN, "_kept", {})
    monkeypatch.setattr(MADE, "_made", Newest(WRITTEN.capacity))
    return WRITTEN


def assert_identical(a, b, path="event"):
    """Equal field by field, and of the same type all the way down."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, BaseModel):
        assert a.__pydantic_extra__ == b.__pydantic_extra__, path
        for name in type(a).model_fields:
            assert_identical(getattr(a, name), getattr(b, name), f"{path}.{name}")
    elif isinstance(a, tuple | list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_identical(x, y, f"{path}[{i}]")
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            assert_identical(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    elif isinstance(a, np.ndarray):
        assert (a.dtype, a.shape, a.flags.writeable) == (b.dtype, b.shape, b.flags.writeable), path
        assert np.array_equal(a, b, equal_nan=True), path
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), path
    elif isinstance(a, datetime):
        assert (a, a.utcoffset()) == (b, b.utcoffset()), path
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def test_the_newest_events_are_kept_by_their_bytes():
    kept = Newest(capacity=2)
    a, b, c, d = (object() for _ in range(4))
    kept.put(b"a", a)
    kept.put(b"b", b)
    kept.put(b"c", c)
    assert kept.get(b"a") is None and kept.get(b"b") is b and kept.get(b"c") is c
    kept.put(b"b", b)  # written again: the newest
    kept.put(b"d", d)
    assert kept.get(b"c") is None and kept.get(b"b") is b and kept.get(b"d") is d
    assert len(kept) == 2


def test_what_the_stages_read_back_is_what_decoding_gives(market, written):
    ticks, data, jobs = market
    run_in_memory(trace_events(ticks, jobs), data.markets, SLOT, "greedy", partitions=2)
    kept = dict(written._kept)
    assert {type(e) for e in kept.values()} == {MarketBoundary, PublishedForecast, EpochClosed}
    for value, event in kept.items():
        assert_identical(event, parse_event(value))
        assert_identical(PartitionScheduler.decode(value), parse_event(value))
        if isinstance(event, PublishedForecast):
            assert event.outlook is not None  # the encoded forecast, not the relayed envelope
            assert_identical(EpochCoordinator.decode(value), read_forecast_envelope(value))


def test_decisions_do_not_depend_on_what_was_kept(market, written, monkeypatch):
    ticks, data, jobs = market
    reads = []
    get = written.get
    monkeypatch.setattr(written, "get", lambda value: reads.append(get(value)) or reads[-1])
    kept = run_in_memory(trace_events(ticks, jobs), data.markets, SLOT, "greedy",
                         partitions=2)
    assert sum(event is not None for event in reads) > 0.9 * len(reads)
    monkeypatch.setattr(written, "capacity", 0)
    monkeypatch.setattr(written, "_kept", {})
    monkeypatch.setattr(MADE, "_made", Newest(0))
    decoded = run_in_memory(trace_events(ticks, jobs), data.markets, SLOT, "greedy",
                            partitions=2)
    assert len(written) == len(MADE) == 0
    assert kept == decoded and len(kept) > 0


def test_schedulers_plan_on_the_outlooks_their_market_stage_made(market, written):
    ticks, data, jobs = market
    run_in_memory(trace_events(ticks, jobs), data.markets, SLOT, "greedy")
    forecasts = [(v, e) for v, e in written._kept.items() if isinstance(e, PublishedForecast)]
    assert forecasts and len(MADE) > 0
    for value, forecast in forecasts:
        made = MADE.outlook(forecast.outlook)
        decoded = parse_event(value).outlook  # the same outlook, read from elsewhere
        assert made is MADE.outlook(forecast.outlook) and MADE.outlook(decoded) is not made
        assert_identical(made, MarketOutlook.from_wire(forecast.outlook.model_dump()))
        assert_identical(made, MADE.outlook(decoded))
