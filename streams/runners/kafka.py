"""The worker: decode each input message, call a pipeline stage, and encode its outputs.

The market stage runs on a batched consumer of its own inside the worker
(:class:`streams.runners.tick_consumer.TickConsumer`, group ``<app id>.market-ticks``); the epoch
coordinator and the scheduler are Faust agents (group ``<app id>``).

Each of them keeps one stage per partition it owns. When a worker takes over a partition in
the middle of its log (a restart, or a rebalance), it first rebuilds the stage by re-reading
the partition from the beginning up to that point, so no job state is lost; anything
re-emitted carries the same idempotency key as before.

Every message goes through a :class:`streams.pipeline.driver.Driver`, live and in the rebuild alike:
whatever it makes its stage raise is dead-lettered (and counted as a stage error), and the
stage goes on with the next message.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import faust
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from prometheus_client import CollectorRegistry

from solver.policies import make_policy
from streams.contract.events import MarketBoundary, dump_event
from streams.kafka.connect import start_client
from streams.metrics import PipelineMetrics
from streams.pipeline import EpochCoordinator, MarketStage, PartitionScheduler
from streams.pipeline.driver import Driver, Outcome, dead_letter, is_stage_error
from streams.pipeline.stage import Message
from streams.replay import partition_for
from streams.runners.tick_consumer import TickConsumer
from streams.runtime import rate_limit_handlers
from streams.settings import Settings

log = logging.getLogger(__name__)

BATCH = 500
"""Events an agent takes from its stream at once; their outputs are delivered before the next
batch."""
BATCH_WAIT_SECONDS = 0.05


def record_message(record: ConsumerRecord) -> Message:
    """An aiokafka record as a stage's message (Kafka timestamps are in milliseconds)."""
    return Message(record.topic, bytes(record.value or b""), record.key, record.partition,
                   record.offset, record.timestamp / 1000.0 if record.timestamp else None)


class PartitionStages:
    """One stage (behind its driver) per partition of a topic, rebuilt from the log when taken
    over mid-way."""

    def __init__(self, settings: Settings, topic: str, make_stage: Callable[[], Any]) -> None:
        self.settings = settings
        self.topic = topic
        self.make_stage = make_stage
        self._drivers: dict[int, Driver] = {}
        self._next_offset: dict[int, int] = {}

    async def driver(self, partition: int, offset: int) -> Driver:
        if self._next_offset.get(partition) != offset:
            self._drivers[partition] = await self._rebuild(partition, offset)
        self._next_offset[partition] = offset + 1
        return self._drivers[partition]

    def current(self, partition: int) -> Any:
        """The stage of a partition already taken over with :meth:`driver`."""
        return self._drivers[partition].stage

    def stages(self) -> list[Any]:
        """The stages of every partition taken over so far."""
        return [driver.stage for driver in self._drivers.values()]

    async def _rebuild(self, partition: int, until: int) -> Driver:
        """A driver whose stage has seen offsets ``0 .. until - 1``: they are processed as when
        first seen (rejected ones included) and their outputs discarded."""
        driver = Driver(self.make_stage())
        if until <= 0:
            return driver
        log.info("rebuilding %s[%d] from offsets 0..%d", self.topic, partition, until - 1)
        consumer = await start_client(
            lambda: AIOKafkaConsumer(**self.settings.kafka_options(), enable_auto_commit=False),
            self.settings, f"rebuilding {self.topic}[{partition}]")
        try:
            tp = TopicPartition(self.topic, partition)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            position = 0
            while position < until:
                batch = await consumer.getmany(tp, timeout_ms=1000)
                for record in batch.get(tp, []):
                    position = record.offset + 1
                    if record.offset >= until:
                        break
                    driver.process(record_message(record))
        finally:
            await consumer.stop()
        return driver


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

    markets = PartitionStages(
        settings, topics.market_ticks,
        lambda: MarketStage(catalogue, settings.slot_seconds,
                            max_future_skew=settings.max_future_skew_seconds))
    coordinators = PartitionStages(settings, topics.market_boundaries,
                                   lambda: EpochCoordinator(catalogue, settings.slot_seconds))
    schedulers = PartitionStages(
        settings, topics.job_events,
        lambda: PartitionScheduler(catalogue, settings.slot_seconds,
                                   lambda: metrics.timed(make_policy(settings.policy))))

    async def process(stages: PartitionStages, message: Message,
                      deliveries: list[Awaitable[Any]]) -> list:
        """One message through its partition's stage; returns the stage's outputs. Rejected
        messages are dead-lettered (their deliveries added to ``deliveries``), faults counted."""
        metrics.consumed(stages.topic)
        assert message.partition is not None and message.offset is not None
        driver = await stages.driver(message.partition, message.offset)
        outcome = driver.process(message)
        await report(driver.stage.name, outcome, deliveries)
        return outcome.outputs

    async def report(stage: str, outcome: Outcome, deliveries: list[Awaitable[Any]]) -> None:
        if outcome.event is not None:
            metrics.accepted(outcome.event)
        for fault in outcome.faults:
            metrics.stage_failed(fault.stage, fault.error)
            log.error("stage %s: %s: %s", fault.stage, type(fault.error).__name__, fault.error)
        for rejected in outcome.rejections:
            letter = dead_letter(rejected)
            if is_stage_error(rejected.error):
                metrics.stage_failed(stage, rejected.error)
                log.error("stage %s raised %s on %s[%s]@%s: %s", stage,
                          type(rejected.error).__name__, letter.source_topic, letter.partition,
                          letter.offset, letter.reason)
            log.warning("dead letter from %s[%s]@%s: %s", letter.source_topic, letter.partition,
                        letter.offset, letter.reason)
            metrics.dead_lettered(letter.source_topic, rejected.error)
            deliveries.append(await send(dead_letters, letter.key, dump_event(letter), 0))

    async def process_event(stages: PartitionStages, event: faust.EventT,
                            deliveries: list[Awaitable[Any]]) -> list:
        """:func:`process` for an agent's event (Faust gives timestamps in seconds)."""
        m = event.message
        return await process(stages, Message(m.topic, bytes(event.value or b""), m.key,
                                             m.partition, m.offset, m.timestamp), deliveries)

    async def cut_market_slots(records: Sequence[ConsumerRecord]) -> list[Awaitable[Any]]:
        """The market stage over a batch of ticks; returns the deliveries of its outputs."""
        deliveries: list[Awaitable[Any]] = []
        for record in records:
            for out in await process(markets, record_message(record), deliveries):
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
        async with _crash_on_error(app, "coordinator"):
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
        async with _crash_on_error(app, "scheduler"):
            async for batch in stream.take_events(BATCH, within=BATCH_WAIT_SECONDS):
                deliveries = []
                for event in batch:
                    made = await process_event(schedulers, event, deliveries)
                    for decision in made:
                        deliveries.append(await send(
                            decisions, decision.key, dump_event(decision),
                            partition_for(decision.job_id, settings.job_partitions)))
                    if made:
                        try:
                            metrics.scheduled(
                                schedulers.current(event.message.partition).engine, made,
                                time.time())
                        except Exception as exc:  # figures are not worth stopping for
                            metrics.stage_failed("metrics", exc)
                            log.error("job metrics: %s: %s", type(exc).__name__, exc)
                metrics.jobs_to_decide.set(sum(s.jobs_to_decide for s in schedulers.stages()))
                await asyncio.gather(*deliveries)

    return app


class RateLimitedWorker(faust.Worker):
    """The Faust worker, its log handlers rate-limited (:mod:`streams.runtime`)."""

    def on_setup_root_logger(self, logger: logging.Logger, level: int) -> None:
        super().on_setup_root_logger(logger, level)
        rate_limit_handlers(logger)


@contextlib.asynccontextmanager
async def _crash_on_error(app: faust.App, stage: str) -> AsyncIterator[None]:
    """An agent that fails stops the worker (to be restarted, rebuilding from the log) rather
    than leave it up and silent; the stages themselves never raise on a message."""
    try:
        yield
    except Exception as exc:
        log.critical("%s agent failed, stopping the worker: %s: %s", stage,
                     type(exc).__name__, exc)
        await app.crash(exc)
        raise


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
