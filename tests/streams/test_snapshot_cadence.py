"""When a stage partition is snapshotted: by slots of event time, no more often than the
minimum interval while it lags behind its log's end and a short delay after the batch that
made it due once caught up, or by records, whatever the interval."""

from __future__ import annotations

import asyncio
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
from streams.pipeline.trace_events import trace_events
from streams.pipeline.written import Written
from streams.runners.recovery import PartitionStages, RecoveryConfig
from streams.runners.tick_consumer import log_end
from streams.settings import Settings

CADENCE = RecoveryConfig.of(Settings(snapshot_every_epochs=6, snapshot_every_records=20_000,
                                     snapshot_min_interval_seconds=10.0,
                                     snapshot_delay_seconds=1.0))


@pytest.mark.parametrize(("records", "epochs", "seconds", "caught_up", "due_in"), [
    (240, 6, 3600.0 * 6, True, 1.0),  # live: six slots, hours apart; after the delay
    (240, 5, 3600.0 * 6, True, None),  # not yet six slots
    (1_440, 6, 0.05, False, None),  # catching up: six slots in a few milliseconds
    (1_440, 6, 10.0, False, 0.0),  # ... at once once the interval has passed
    (1_440, 6, 0.05, True, 1.0),  # ... or after the delay once caught up with the log
    (20_000, 0, 0.0, False, 0.0),  # the records bound holds whatever the interval
    (20_000, 6, 0.0, True, 0.0),  # ... and whatever the delay
    (19_999, 1_000, 9.9, False, None),
    (0, 6, 3600.0 * 6, True, None),  # nothing taken since the last snapshot
])
def test_a_stage_is_snapshotted_by_slots_no_faster_than_the_interval_or_by_records(
        records, epochs, seconds, caught_up, due_in):
    assert CADENCE.due_in(records, epochs, seconds, caught_up) == due_in


def test_a_zero_interval_and_delay_snapshot_every_few_slots_at_once_however_fast_they_pass():
    cadence = RecoveryConfig.of(Settings(snapshot_every_epochs=3, snapshot_delay_seconds=0,
                                         snapshot_min_interval_seconds=0))
    assert cadence.due_in(1, 3, 0.0, False) == cadence.due_in(1, 3, 0.0, True) == 0.0
    assert cadence.due_in(1, 2, 0.0, True) is None


class MemoryState:
    """What a worker's stages ask of the snapshot topics and the input log, for partitions
    that start empty: the snapshots written are kept, by partition, with their offsets."""

    def __init__(self) -> None:
        self.written: list[tuple[int, int]] = []
        self._wrote = asyncio.Condition()

    async def until_written(self, count: int) -> None:
        """Until ``count`` snapshots have been written."""
        async with asyncio.timeout(10), self._wrote:
            await self._wrote.wait_for(lambda: len(self.written) >= count)

    async def manifests(self, topic: str, partition: int) -> list[Manifest]:
        return []

    async def log_start(self, topic: str, partition: int) -> int:
        return 0

    async def read_log(self, topic: str, partition: int, start: int, end: int
                       ) -> AsyncIterator[list[ConsumerRecord]]:
        for _ in ():
            yield []

    async def write_snapshot(self, topic: str, partition: int, blob: bytes, offset: int,
                             sequence: int, taken: float, newest: Manifest | None) -> Manifest:
        async with self._wrote:
            self.written.append((partition, offset))
            self._wrote.notify_all()
        return Manifest("a", offset, sequence, (), len(blob), taken)

    async def trim(self, topic: str, partition: int, keep_from: int, margin_seconds: float
                   ) -> int | None:
        return None


class Clock:
    """Monotonic seconds that pass when the test says; a sleep ends once they have."""

    def __init__(self) -> None:
        self.now = 1_000.0
        self.sleeping = 0
        self._moved = asyncio.Condition()

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        end = self.now + seconds
        async with self._moved:
            self.sleeping += 1
            self._moved.notify_all()
            try:
                await self._moved.wait_for(lambda: self.now >= end)
            finally:
                self.sleeping -= 1

    async def until_sleeping(self) -> None:
        async with asyncio.timeout(10), self._moved:
            await self._moved.wait_for(lambda: self.sleeping > 0)

    async def advance(self, seconds: float) -> None:
        async with self._moved:
            self.now += seconds
            self._moved.notify_all()

    async def pass_delay(self) -> None:
        """Once a sleep has begun, let the snapshot delay pass."""
        await self.until_sleeping()
        await self.advance(DELAY)


async def settled() -> None:
    """Once every task that can run has run as far as it can."""
    for _ in range(20):
        await asyncio.sleep(0)


DELAY = 0.05


class Partition:
    """A market-ticks partition of a day of one market's ticks, in batches of three slots,
    taken by a worker's stages that write their snapshots to memory."""

    def __init__(self, **settings: float) -> None:
        ticks = synthetic_ticks(SyntheticMarketSpec(seed=3, n_markets=1, days=1))
        data = build_market_data(ticks, 3600.0)
        config = PipelineConfig(data.markets, 3600.0, PolicySpec("greedy"))
        self.settings = Settings(**{"snapshot_every_epochs": 2, "snapshot_key": "k" * 16,
                                    "snapshot_min_interval_seconds": 10.0,
                                    "snapshot_delay_seconds": DELAY, **settings})
        self.state, self.clock = MemoryState(), Clock()
        market = next(spec for spec in PIPELINE if spec.name == "market")
        self.stages = PartitionStages(
            market, self.settings, config, self.state, Written(), {"config": config},
            PipelineMetrics(CollectorRegistry(), markets=[], topics=[], slot_seconds=3600.0,
                            started=0.0).recovery, clock=self.clock, sleep=self.clock.sleep)
        slots = defaultdict(list)
        for event in trace_events(ticks, []):
            slots[int(event.event_time.timestamp() // 3600)].append(event)
        order = sorted(slots)
        self.batches = [[e for s in order[i:i + 3] for e in slots[s]] for i in range(0, 15, 3)]
        self.log_end = sum(map(len, self.batches))
        self.offset = 0

    async def take(self, events: list, end: int | None = -1) -> None:
        """A batch of ``events``, checkpointed with the log's end ``end`` (by default, that of
        every batch)."""
        await self.stages.recover(0, self.offset)
        async with self.stages.batch():
            self.feed(events)
            await self.stages.checkpoint({0: self.log_end if end == -1 else end})

    def feed(self, events: list) -> None:
        for event in events:
            self.stages.process(Message(self.settings.topics.market_ticks, dump_event(event),
                                        event.key.encode(), 0, self.offset, None))
            self.offset += 1


async def test_a_stage_is_held_back_by_the_interval_only_while_it_lags_behind_its_log():
    partition = Partition()
    batches, written = partition.batches, partition.state.written
    await partition.take(batches[0])  # two slots passed: the first snapshot is due at once
    assert written == [(0, partition.offset)]
    await partition.take(batches[1])  # two more slots within the interval, far from the end
    await partition.take(batches[2], end=None)  # (or the end unknown)
    assert written == [(0, len(batches[0]))]
    partition.clock.now += 10.0  # the interval has passed
    await partition.take(batches[3])
    assert written[1:] == [(0, partition.offset)]
    await partition.take(batches[4])  # within the interval again, but the log's end is reached:
    assert written[2:] == [] and partition.offset == partition.log_end  # not in the decisions'
    await partition.clock.pass_delay()  # way, but once the delay has passed
    await partition.state.until_written(3)
    assert written[2:] == [(0, partition.offset)]


async def test_a_deferred_snapshot_waits_for_the_batch_in_flight_and_covers_it():
    partition = Partition()
    head = partition.batches[0] + partition.batches[1]
    partition.log_end = len(head)
    await partition.take(head)  # caught up and due by slots: deferred
    async with partition.stages.batch():  # a batch that outlasts the delay
        partition.feed(partition.batches[2])
        await partition.clock.pass_delay()
        with pytest.raises(TimeoutError):  # not written while the batch is in flight
            await asyncio.wait_for(partition.state.until_written(1), 0.5)
    await partition.state.until_written(1)  # taken once the batch is done, at its end
    assert partition.state.written == [(0, partition.offset)]


async def test_a_stop_within_the_delay_snapshots_the_stage_once():
    partition = Partition()
    await partition.take(partition.batches[0] + partition.batches[1], end=None)
    partition.log_end = partition.offset + len(partition.batches[2])
    await partition.take(partition.batches[2])  # caught up and due by slots: deferred
    await partition.clock.until_sleeping()
    written = partition.state.written[:]
    await partition.stages.snapshot_all()
    assert partition.state.written == [*written, (0, partition.offset)]
    await partition.clock.advance(DELAY)
    await settled()
    assert partition.state.written == [*written, (0, partition.offset)]


async def test_a_zero_delay_snapshots_a_caught_up_stage_at_once():
    partition = Partition(snapshot_delay_seconds=0)
    await partition.take(partition.batches[0] + partition.batches[1])
    assert partition.state.written == [(0, partition.offset)]


async def test_the_log_end_of_a_partition_the_consumer_does_not_hold_is_unknown():
    consumer = AIOKafkaConsumer(bootstrap_servers="127.0.0.1:9")  # never started
    assert log_end(consumer.highwater, TopicPartition("market-ticks", 0)) is None
