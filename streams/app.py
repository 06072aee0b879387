"""The worker: decode each input message, call a pipeline stage, and encode its outputs.

The market stage runs on a batched consumer of its own inside the worker
(:class:`streams.tick_consumer.TickConsumer`, group ``<app id>.market-ticks``); the epoch
coordinator and the scheduler are Faust agents (group ``<app id>``).

Each of them keeps one stage per partition it owns. When a worker takes over a partition in
the middle of its log (a restart, or a rebalance), it first rebuilds the stage by re-reading
the partition from the beginning up to that point, so no job state is lost; anything
re-emitted carries the same idempotency key as before.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import faust
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from prometheus_client import CollectorRegistry

from solver.policies import make_policy
from streams.events import (
    AvailabilityTick,
    DeadLetter,
    EpochClosed,
    EventError,
    JobCancelled,
    JobFinished,
    JobProgress,
    JobSubmitted,
    MarketBoundary,
    PriceTick,
    dump_event,
    parse_event,
)
from streams.metrics import PipelineMetrics
from streams.pipeline import EpochCoordinator, MarketStage, PartitionScheduler, RejectedEvent
from streams.replay_events import partition_for
from streams.settings import Settings
from streams.tick_consumer import TickConsumer

log = logging.getLogger(__name__)

TICKS = (PriceTick, AvailabilityTick)
BATCH = 500
"""Events an agent takes from its stream at once; their outputs are delivered before the next
batch."""
BATCH_WAIT_SECONDS = 0.05
JOB_EVENTS = (JobSubmitted, JobProgress, JobCancelled, JobFinished, EpochClosed)


class PartitionStages:
    """One stage per partition of a topic, rebuilt from the log when taken over mid-way."""

    def __init__(
        self,
        settings: Settings,
        topic: str,
        make_stage: Callable[[], Any],
        accepts: tuple[type, ...],
    ) -> None:
        self.settings = settings
        self.topic = topic
        self.make_stage = make_stage
        self.accepts = accepts
        self._stages: dict[int, Any] = {}
        self._next_offset: dict[int, int] = {}

    async def stage(self, partition: int, offset: int) -> Any:
        if self._next_offset.get(partition) != offset:
            self._stages[partition] = await self._rebuild(partition, offset)
        self._next_offset[partition] = offset + 1
        return self._stages[partition]

    def _replay(self, stage: Any, raw: bytes) -> None:
        """Feed one logged message to a stage being rebuilt, discarding its outputs."""
        try:
            event = parse_event(raw)
            if isinstance(event, self.accepts):
                stage.handle(event)
        except (EventError, RejectedEvent):
            pass  # dead-lettered when it was first seen

    def current(self, partition: int) -> Any:
        """The stage of a partition already taken over with :meth:`stage`."""
        return self._stages[partition]

    async def _rebuild(self, partition: int, until: int) -> Any:
        stage = self.make_stage()
        if until <= 0:
            return stage
        log.info("rebuilding %s[%d] from offsets 0..%d", self.topic, partition, until - 1)
        consumer = AIOKafkaConsumer(**self.settings.kafka_options(), enable_auto_commit=False)
        await consumer.start()
        try:
            tp = TopicPartition(self.topic, partition)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            position = 0
            while position < until:
                batch = await consumer.getmany(tp, timeout_ms=1000)
                for message in batch.get(tp, []):
                    position = message.offset + 1
                    if message.offset >= until:
                        break
                    self._replay(stage, message.value)
        finally:
            await consumer.stop()
        return stage


def create_app(settings: Settings, registry: CollectorRegistry | None = None) -> faust.App:
    """The worker's Faust app over the configured topics and catalogue; its metrics go to
    ``registry`` (a private one when not given)."""
    catalogue = settings.catalogue()
    make_policy(settings.policy)  # fail at start, not at the first epoch
    app = faust.App(
        settings.app_id,
        broker=";".join(f"kafka://{s}" for s in settings.bootstrap_servers.split(",")),
        broker_credentials=_credentials(settings),
        value_serializer="raw",
        key_serializer="raw",
        topic_partitions=settings.job_partitions,
        topic_allow_declare=False,
        topic_disable_leader=True,
        consumer_auto_offset_reset="earliest",
        producer_acks=-1,
        web_enabled=False,
        broker_max_poll_records=2000,
        consumer_max_fetch_size=4 * 1024 * 1024,
        stream_buffer_maxsize=16384,
        datadir=str(settings.data_dir),
        store="memory://",
    )
    topics = settings.topics
    boundaries = app.topic(topics.market_boundaries, partitions=1)
    job_events = app.topic(topics.job_events, partitions=settings.job_partitions)
    decisions = app.topic(topics.decisions, partitions=settings.job_partitions)
    dead_letters = app.topic(topics.dead_letters, partitions=1)
    forecasts = app.topic(topics.forecasts, partitions=settings.market_partitions)
    metrics = PipelineMetrics(
        registry or CollectorRegistry(), markets=[m.key for m in catalogue],
        topics=(topics.market_ticks, topics.market_boundaries, topics.job_events),
        slot_seconds=settings.slot_seconds, started=time.time())

    async def send(topic: faust.TopicT, key: str, value: bytes, partition: int) -> Any:
        """Hand a message to the producer; returns its delivery, to await per batch."""
        return await topic.send(key=key.encode(), value=value, partition=partition)

    async def dead_letter(raw: bytes, error: Exception, source: str, partition: int,
                          offset: int, timestamp: float | None) -> Awaitable[Any]:
        """Send a rejected message (``timestamp`` in Unix seconds) to the dead-letter topic;
        returns its delivery."""
        letter = DeadLetter.from_raw(raw, error, source_topic=source,
                                     event_time=timestamp or 0.0, partition=partition,
                                     offset=offset)
        log.warning("dead letter from %s[%d]@%d: %s", source, partition, offset, letter.reason)
        metrics.dead_lettered(source, error)
        return await send(dead_letters, letter.key, dump_event(letter), 0)

    markets = PartitionStages(settings, topics.market_ticks,
                              lambda: MarketStage(catalogue, settings.slot_seconds), TICKS)
    coordinators = PartitionStages(settings, topics.market_boundaries,
                                   lambda: EpochCoordinator(catalogue, settings.slot_seconds),
                                   (MarketBoundary,))
    schedulers = PartitionStages(
        settings, topics.job_events,
        lambda: PartitionScheduler(catalogue, settings.slot_seconds,
                                   lambda: metrics.timed(make_policy(settings.policy))),
        JOB_EVENTS,
    )

    async def process(stages: PartitionStages, raw: bytes, partition: int, offset: int,
                      timestamp: float | None, deliveries: list[Awaitable[Any]]) -> list:
        """One message through its partition's stage; returns the stage's outputs. A rejected
        message is dead-lettered, its delivery added to ``deliveries``."""
        metrics.consumed(stages.topic)
        stage = await stages.stage(partition, offset)
        try:
            decoded = parse_event(raw)
            if not isinstance(decoded, stages.accepts):
                raise RejectedEvent(
                    f"type={decoded.type!r}: expected one of "
                    f"{', '.join(c.model_fields['type'].default for c in stages.accepts)} on "
                    f"{stages.topic}"
                )
            outputs = stage.handle(decoded)
            metrics.accepted(decoded)
            return outputs
        except (EventError, RejectedEvent) as exc:
            deliveries.append(
                await dead_letter(raw, exc, stages.topic, partition, offset, timestamp))
            return []

    async def process_event(stages: PartitionStages, event: faust.EventT,
                            deliveries: list[Awaitable[Any]]) -> list:
        """:func:`process` for an agent's event (Faust gives timestamps in seconds)."""
        message = event.message
        return await process(stages, bytes(event.value or b""), message.partition,
                             message.offset, message.timestamp, deliveries)

    async def cut_market_slots(records: Sequence[ConsumerRecord]) -> list[Awaitable[Any]]:
        """The market stage over a batch of ticks; returns the deliveries of its outputs."""
        deliveries: list[Awaitable[Any]] = []
        for record in records:
            timestamp = record.timestamp / 1000.0 if record.timestamp else None
            for out in await process(markets, record.value or b"", record.partition,
                                     record.offset, timestamp, deliveries):
                if isinstance(out, MarketBoundary):
                    metrics.market_boundary(out)
                    deliveries.append(await send(boundaries, out.key, dump_event(out), 0))
                else:
                    metrics.market_forecast(out)
                    deliveries.append(await send(
                        forecasts, out.key, dump_event(out),
                        partition_for(out.key, settings.market_partitions)))
        return deliveries

    app.service(TickConsumer(settings, cut_market_slots, beacon=app.beacon))

    @app.agent(boundaries)
    async def close_epochs(stream: faust.StreamT) -> None:
        async for batch in stream.take_events(BATCH, within=BATCH_WAIT_SECONDS):
            deliveries = []
            for event in batch:
                for epoch in await process_event(coordinators, event, deliveries):
                    metrics.epoch_closed(epoch, time.time())
                    for partition in range(settings.job_partitions):
                        deliveries.append(
                            await send(job_events, epoch.key, dump_event(epoch), partition))
            await asyncio.gather(*deliveries)

    @app.agent(job_events)
    async def schedule(stream: faust.StreamT) -> None:
        async for batch in stream.take_events(BATCH, within=BATCH_WAIT_SECONDS):
            deliveries = []
            for event in batch:
                made = await process_event(schedulers, event, deliveries)
                for decision in made:
                    deliveries.append(await send(
                        decisions, decision.key, dump_event(decision),
                        partition_for(decision.job_id, settings.job_partitions)))
                if made:
                    metrics.scheduled(schedulers.current(event.message.partition).engine, made)
            await asyncio.gather(*deliveries)

    return app


def _credentials(settings: Settings) -> Any:
    if settings.security_protocol == "PLAINTEXT":
        return None
    options = settings.kafka_options()
    if settings.security_protocol.startswith("SASL"):
        return faust.SASLCredentials(
            username=settings.sasl_username,
            password=str(options["sasl_plain_password"]),
            mechanism=settings.sasl_mechanism,
            ssl_context=options.get("ssl_context"),
        )
    return faust.SSLCredentials(options["ssl_context"])
