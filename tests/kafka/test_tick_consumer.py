"""The market-ticks loop on a real broker: offsets follow deliveries, and a bad tick in the
middle of a batch is dead-lettered while the rest of the batch flows."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition

from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from streams.contract import MarketBoundary, dump_event
from streams.kafka.clients import publish_replay
from streams.kafka.partitions import partition_for
from streams.kafka.topics import ensure_topics
from streams.pipeline.market_stage import MarketStage
from streams.pipeline.trace_events import trace_events
from streams.runners.tick_consumer import TickLoop, group_id
from streams.settings import Settings, Topics
from tests.kafka.pipeline_harness import Pipeline, wait_for
from tests.kafka_fixture import TopicFactory
from tests.streams.ready_stages import ReadyStages

pytestmark = pytest.mark.kafka


async def committed(settings: Settings, partitions: int) -> dict[int, int | None]:
    """The market-ticks group's committed offset of each partition."""
    consumer = AIOKafkaConsumer(**settings.kafka_options(), group_id=group_id(settings),
                                enable_auto_commit=False)
    await consumer.start()
    try:
        return {p: await consumer.committed(TopicPartition(settings.topics.market_ticks, p))
                for p in range(partitions)}
    finally:
        await consumer.stop()


async def test_a_batch_is_committed_only_after_its_deliveries_and_stop_waits_for_them(
    kafka_bootstrap: str, fresh_topic_factory: TopicFactory, unique_name: Callable[[str], str]
) -> None:
    topic = await fresh_topic_factory(partitions=2)
    settings = Settings(bootstrap_servers=kafka_bootstrap, app_id=unique_name("app"),
                        topics=Topics(market_ticks=topic))
    async with AIOKafkaProducer(bootstrap_servers=kafka_bootstrap) as producer:
        for partition, count in ((0, 7), (1, 3)):
            for n in range(count):
                await producer.send(topic, b"tick %d" % n, partition=partition)
        await producer.flush()
    handled: list[tuple[int, int]] = []
    deliveries: list[asyncio.Future[None]] = []
    first = asyncio.Event()

    async def handle(records: Sequence[ConsumerRecord]) -> list[asyncio.Future[None]]:
        handled.extend((r.partition, r.offset) for r in records)
        deliveries.append(asyncio.get_running_loop().create_future())
        first.set()
        return [deliveries[-1]]

    checkpoints: list[bool] = []
    ends: list[dict[int, int | None]] = []

    def checkpointed(log_ends: Mapping[int, int | None]) -> None:
        checkpoints.append(all(delivery.done() for delivery in deliveries))
        ends.append(dict(log_ends))

    ticks = TickLoop(settings, handle, ReadyStages(checkpointed))
    await ticks.start()
    try:
        await asyncio.wait_for(first.wait(), 30)
        # The batch stays in flight (uncommitted, not checkpointed) until its deliveries are
        # acknowledged; the next one is fetched only after it.
        assert await committed(settings, 2) == {0: None, 1: None}
        assert checkpoints == [] and len(deliveries) == 1
        stopping = asyncio.ensure_future(ticks.stop())
        with pytest.raises(TimeoutError):  # stopping waits for it too
            await asyncio.wait_for(asyncio.shield(stopping), 1.0)
        assert checkpoints == [] and len(deliveries) == 1
        deliveries[0].set_result(None)
        await asyncio.wait_for(stopping, 30)
    finally:
        await ticks.stop()
    offsets = {p: [o for q, o in handled if q == p] for p in (0, 1)}
    assert all(offsets[p] == list(range(len(offsets[p]))) for p in (0, 1))
    assert await committed(settings, 2) == {p: len(offsets[p]) or None for p in (0, 1)}
    assert checkpoints == [True]  # once its deliveries are done
    # ... told where the log of each partition of the batch ends
    assert ends == [{p: {0: 7, 1: 3}[p] for p in (0, 1) if offsets[p]}]


@pytest.mark.slow  # a worker process, and a replay through it
def test_a_bad_tick_in_the_middle_of_a_batch_is_dead_lettered_and_the_rest_flows(
    kafka_bootstrap: str, tmp_path
) -> None:
    ticks = synthetic_ticks(SyntheticMarketSpec(seed=3, n_markets=2, days=2))
    events = list(trace_events(ticks, []))
    pipeline = Pipeline(kafka_bootstrap, tmp_path, tuple(t.market for t in ticks))
    settings = pipeline.settings
    asyncio.run(ensure_topics(settings))
    half = len(events) // 2
    bad_key = events[half].key
    bad_partition = partition_for(bad_key, pipeline.market_partitions)
    asyncio.run(publish_replay(settings, iter(events[:half])))
    bad = asyncio.run(_send(settings, bad_key, bad_partition, b"{not json"))
    asyncio.run(publish_replay(settings, iter(events[half:])))
    stage = MarketStage([t.market for t in ticks], settings.slot_seconds)
    outputs = [out for event in events for out in stage.handle(event)]
    expected = sorted(dump_event(o) for o in outputs if isinstance(o, MarketBoundary))
    try:
        pipeline.start_worker()  # every tick is published first: the bad one lands mid-batch
        boundaries = wait_for(  # the topic carries the forecasts too
            lambda: [b for b in pipeline.read(settings.topics.market_boundaries)
                     if isinstance(b, MarketBoundary)],
            lambda seen: len(seen) >= len(expected))
        assert sorted(dump_event(b) for b in boundaries) == expected
        (letter,) = pipeline.dead_letters()
        assert (letter.partition, letter.offset, letter.original()) == (
            bad_partition, bad.offset, b"{not json")
        assert letter.event_time.timestamp() == pytest.approx(bad.timestamp / 1000)
        ends = {p: end or None for p, end in asyncio.run(_end_offsets(settings)).items()}
        wait_for(lambda: asyncio.run(committed(settings, pipeline.market_partitions)),
                  lambda offsets: offsets == ends)
    finally:
        pipeline.stop_workers()


async def _send(settings: Settings, key: str, partition: int, raw: bytes):
    async with AIOKafkaProducer(**settings.kafka_options()) as producer:
        return await producer.send_and_wait(settings.topics.market_ticks, raw,
                                            key=key.encode(), partition=partition)


async def _end_offsets(settings: Settings) -> dict[int, int]:
    consumer = AIOKafkaConsumer(**settings.kafka_options())
    await consumer.start()
    try:
        tps = [TopicPartition(settings.topics.market_ticks, p)
               for p in range(settings.market_partitions)]
        return {tp.partition: offset for tp, offset in (await consumer.end_offsets(tps)).items()}
    finally:
        await consumer.stop()


