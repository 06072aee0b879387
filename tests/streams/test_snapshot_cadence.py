"""When a stage partition is snapshotted: by slots of event time, no more often than the
minimum interval while it lags behind its log's end, or by records, whatever the interval."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncIterator

import pytest
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from prometheus_client import CollectorRegistry

from solver.market import build_market_data
from solver.policies import PolicySpec
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from streams.contract import dump_event
from streams.kafka.state import Manifest
from streams.metrics import PipelineMetrics
from streams.pipeline.declaration import PIPELINE, PipelineConfig
from streams.pipeline.stage import Message
from streams.replay import trace_events
from streams.runners.recovery import PartitionStages, RecoveryConfig
from streams.runners.tick_consumer import log_end
from streams.settings import Settings

CADENCE = RecoveryConfig.of(Settings(snapshot_every_epochs=6, snapshot_every_records=20_000,
                                     snapshot_min_interval_seconds=10.0))


@pytest.mark.parametrize(("records", "epochs", "seconds", "caught_up", "due"), [
    (240, 6, 3600.0 * 6, True, True),  # live: six slots, hours apart
    (240, 5, 3600.0 * 6, True, False),  # not yet six slots
    (1_440, 6, 0.05, False, False),  # catching up: six slots in a few milliseconds
    (1_440, 6, 10.0, False, True),  # ... once the interval has passed
    (1_440, 6, 0.05, True, True),  # ... or once caught up with the log
    (20_000, 0, 0.0, False, True),  # the records bound holds whatever the interval
    (19_999, 1_000, 9.9, False, False),
    (0, 6, 3600.0 * 6, True, False),  # nothing taken since the last snapshot
])
def test_a_stage_is_snapshotted_by_slots_no_faster_than_the_interval_or_by_records(
        records, epochs, seconds, caught_up, due):
    assert CADENCE.due(records, epochs, seconds, caught_up) is due


def test_a_zero_interval_snapshots_every_few_slots_however_fast_they_pass():
    cadence = RecoveryConfig.of(Settings(snapshot_every_epochs=3,
                                         snapshot_min_interval_seconds=0))
    assert cadence.due(1, 3, 0.0, False) and not cadence.due(1, 2, 0.0, False)


class MemoryState:
    """What a worker's stages ask of the snapshot topics and the input log, for partitions
    that start empty: the snapshots written are kept, by partition, with their offsets."""

    def __init__(self) -> None:
        self.written: list[tuple[int, int]] = []

    async def manifests(self, topic: str, partition: int) -> list[Manifest]:
        return []

    async def log_start(self, topic: str, partition: int) -> int:
        return 0

    async def read_log(self, topic: str, partition: int, start: int, end: int
                       ) -> AsyncIterator[list[ConsumerRecord]]:
        for _ in ():
            yield []

    async def write_snapshot(self, topic: str, partition: int, blob: bytes, offset: int,
                             taken: float, newest: Manifest | None) -> Manifest:
        self.written.append((partition, offset))
        return Manifest("a", offset, (), len(blob), taken)

    async def trim(self, topic: str, partition: int, keep_from: int, margin_seconds: float
                   ) -> int | None:
        return None


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


async def test_a_stage_is_held_back_by_the_interval_only_while_it_lags_behind_its_log():
    ticks = synthetic_ticks(SyntheticMarketSpec(seed=3, n_markets=1, days=1))
    data = build_market_data(ticks, 3600.0)
    config = PipelineConfig(data.markets, 3600.0, PolicySpec("greedy"))
    settings = Settings(snapshot_every_epochs=2, snapshot_min_interval_seconds=10.0)
    state, clock = MemoryState(), Clock()
    market = next(spec for spec in PIPELINE if spec.name == "market")
    stages = PartitionStages(market, settings, config, state, {"config": config},
                             PipelineMetrics(CollectorRegistry(), markets=[], topics=[],
                                             slot_seconds=3600.0, started=0.0).recovery,
                             clock=clock)
    slots = defaultdict(list)
    for event in trace_events(ticks, []):
        slots[int(event.event_time.timestamp() // 3600)].append(event)
    order = sorted(slots)
    batches = [[e for s in order[i:i + 3] for e in slots[s]] for i in range(0, 15, 3)]
    log_end = sum(map(len, batches))
    await stages.recover(0, 0)
    offset = 0

    async def take(events: list, end: int | None = log_end) -> None:
        nonlocal offset
        async with stages.batch():
            for event in events:
                stages.process(Message(settings.topics.market_ticks, dump_event(event),
                                       event.key.encode(), 0, offset, None))
                offset += 1
            await stages.checkpoint({0: end})

    await take(batches[0])  # two slots passed: the first snapshot is due at once
    assert state.written == [(0, offset)]
    await take(batches[1])  # two more slots within the interval, far from the log's end
    await take(batches[2], end=None)  # (or the end unknown)
    assert state.written == [(0, len(batches[0]))]
    clock.now += 10.0  # the interval has passed
    await take(batches[3])
    assert state.written[1:] == [(0, offset)]
    await take(batches[4])  # within the interval again, but the log's end is reached
    assert state.written[2:] == [(0, offset)] and offset == log_end


async def test_the_log_end_of_a_partition_the_consumer_does_not_hold_is_unknown():
    consumer = AIOKafkaConsumer(bootstrap_servers="127.0.0.1:9")  # never started
    assert log_end(consumer.highwater, TopicPartition("market-ticks", 0)) is None
