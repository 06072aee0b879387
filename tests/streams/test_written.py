import dataclasses
import math
from datetime import datetime

import numpy as np
import pytest
from pydantic import BaseModel

from solver.forecast.outlook import MarketOutlook
from solver.policies import PolicySpec
from streams.contract import (
    Envelope,
    EpochClosed,
    JobSubmitted,
    MarketBoundary,
    PublishedForecast,
    dump_event,
    parse_event,
)
from streams.contract.codec import read_forecast_envelope
from streams.pipeline.declaration import PipelineConfig
from streams.pipeline.snapshot import pickle_state, restore, seal
from streams.pipeline.trace_events import trace_events
from streams.pipeline.written import MadeOutlooks, Newest, Written
from streams.runners.memory import MemoryPipeline
from tests.scenarios import synthetic

SLOT = 3600.0


@pytest.fixture(scope="module")
def market():
    """Three markets for four days, a tick every 15 minutes, and 12 short jobs."""
    return synthetic(5, 3, 4, 12, tick_seconds=900, slot=SLOT, workload_range=(4.0, 12.0))


class Recorded(Newest):
    """Keeps every event put, as a runner's written events (none forgotten)."""

    def __init__(self) -> None:
        super().__init__(capacity=1 << 30)
        self.reads: list[Envelope | None] = []

    def get(self, key):
        self.reads.append(super().get(key))
        return self.reads[-1]

    def kept(self) -> dict[bytes, Envelope]:
        return {key: self.get(key) for key in list(self._kept)}


def greedy(market) -> PipelineConfig:
    return PipelineConfig(market[1].markets, SLOT, PolicySpec("greedy"))


def pipeline_of(market, partitions: int = 2, config: PipelineConfig | None = None
                ) -> MemoryPipeline:
    """A pipeline over the market's ticks and jobs, its written events recorded."""
    ticks, _, jobs = market
    pipeline = MemoryPipeline(config or greedy(market), partitions)
    pipeline.between_stages.events = Recorded()
    feed(pipeline, trace_events(ticks, jobs))
    return pipeline


def feed(pipeline: MemoryPipeline, events) -> None:
    for event in events:
        topic = (pipeline.topics.job_events if isinstance(event, JobSubmitted)
                 else pipeline.topics.market_ticks)
        pipeline.send(topic, dump_event(event), event.key.encode())


def stage(pipeline: MemoryPipeline, topic: str):
    return pipeline.drivers[topic, 0].stage


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


def test_what_the_stages_read_back_is_what_decoding_gives(market):
    pipeline = pipeline_of(market)
    scheduler = stage(pipeline, pipeline.topics.job_events)
    coordinator = stage(pipeline, pipeline.topics.market_boundaries)
    kept = pipeline.between_stages.events.kept()
    assert {type(e) for e in kept.values()} == {MarketBoundary, PublishedForecast, EpochClosed}
    for value, event in kept.items():
        assert_identical(event, parse_event(value))
        assert_identical(scheduler.decode(value), parse_event(value))
        if isinstance(event, PublishedForecast):
            assert event.outlook is not None  # the encoded forecast, not the relayed envelope
            assert_identical(coordinator.decode(value), read_forecast_envelope(value))


def test_decisions_do_not_depend_on_what_was_kept(market):
    kept = pipeline_of(market)
    reads = kept.between_stages.events.reads
    assert sum(event is not None for event in reads) > 0.9 * len(reads)
    ticks, _, jobs = market
    forgetful = MemoryPipeline(greedy(market), 2)
    forgetful.between_stages.events = Newest(0)
    forgetful.between_stages.outlooks = MadeOutlooks(0)
    feed(forgetful, trace_events(ticks, jobs))
    assert len(forgetful.between_stages.events) == len(forgetful.between_stages.outlooks) == 0
    assert kept.decisions == forgetful.decisions and len(kept.decisions) > 0


def test_schedulers_plan_on_the_outlooks_their_market_stage_made(market):
    pipeline = pipeline_of(market, partitions=1)
    made = pipeline.between_stages.outlooks
    forecasts = [(v, e) for v, e in pipeline.between_stages.events.kept().items()
                 if isinstance(e, PublishedForecast)]
    assert forecasts and len(made) > 0
    for value, forecast in forecasts:
        outlook = made.outlook(forecast.outlook)
        decoded = parse_event(value).outlook  # the same outlook, read from elsewhere
        assert outlook is made.outlook(forecast.outlook) and made.outlook(decoded) is not outlook
        assert_identical(outlook, MarketOutlook.from_wire(forecast.outlook.model_dump()))
        assert_identical(outlook, made.outlook(decoded))


def test_each_runner_reads_back_only_what_its_own_stages_wrote(market):
    first = pipeline_of(market, partitions=1)
    second = MemoryPipeline(greedy(market))
    assert len(second.between_stages.events) == len(second.between_stages.outlooks) == 0
    scheduler = stage(second, second.topics.job_events)
    for value, event in first.between_stages.events.kept().items():
        read = scheduler.decode(value)
        assert read is not event
        assert_identical(read, event)


def test_a_snapshot_names_what_the_stages_wrote_and_the_restoring_runner_gives_its_own(market):
    config = greedy(market)
    pipeline = pipeline_of(market, partitions=1, config=config)
    scheduler = stage(pipeline, pipeline.topics.job_events)
    assert len(pipeline.between_stages.events) > 0
    pickled = pickle_state(scheduler, {"config": config, "written": pipeline.between_stages})
    pipeline.between_stages.events = Newest(0)
    assert pickled == pickle_state(scheduler, {"config": config,
                                               "written": pipeline.between_stages})
    own = Written()
    _, restored = restore(seal(pickled, stage="scheduler", partition=0, offset=0, sequence=0,
                               settings="", taken=0.0),
                          stage="scheduler", partition=0, settings="",
                          environment={"config": config, "written": own},
                          max_bytes=1 << 30)
    assert restored.written is own
