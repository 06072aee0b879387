from datetime import datetime

import pytest
from pydantic import BaseModel

from solver.market import build_market_data
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from solver.workload import WorkloadSpec, generate_jobs
from streams.contract import EpochClosed, MarketBoundary, PublishedForecast, parse_event
from streams.contract.codec import read_forecast_envelope
from streams.pipeline import EpochCoordinator, PartitionScheduler
from streams.pipeline.written import WRITTEN, WrittenEvents
from streams.replay import trace_events
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
    """The process's written events, emptied for the test."""
    monkeypatch.setattr(WRITTEN, "_events", {})
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
    elif isinstance(a, datetime):
        assert (a, a.utcoffset()) == (b, b.utcoffset()), path
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def test_the_newest_events_are_kept_by_their_bytes():
    kept = WrittenEvents(capacity=2)
    a, b, c, d = (object() for _ in range(4))
    kept.remember(b"a", a)
    kept.remember(b"b", b)
    kept.remember(b"c", c)
    assert kept.read(b"a") is None and kept.read(b"b") is b and kept.read(b"c") is c
    kept.remember(b"b", b)  # written again: the newest
    kept.remember(b"d", d)
    assert kept.read(b"c") is None and kept.read(b"b") is b and kept.read(b"d") is d
    assert len(kept) == 2


def test_what_the_stages_read_back_is_what_decoding_gives(market, written):
    ticks, data, jobs = market
    run_in_memory(trace_events(ticks, jobs), data.markets, SLOT, "greedy", partitions=2)
    kept = dict(written._events)
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
    read = written.read
    monkeypatch.setattr(written, "read", lambda value: reads.append(read(value)) or reads[-1])
    kept = run_in_memory(trace_events(ticks, jobs), data.markets, SLOT, "greedy",
                         partitions=2)
    assert sum(event is not None for event in reads) > 0.9 * len(reads)
    monkeypatch.setattr(written, "capacity", 0)
    monkeypatch.setattr(written, "_events", {})
    decoded = run_in_memory(trace_events(ticks, jobs), data.markets, SLOT, "greedy",
                            partitions=2)
    assert len(written) == 0
    assert kept == decoded and len(kept) > 0
