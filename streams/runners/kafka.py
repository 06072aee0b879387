"""The Kafka runner: the pipeline declaration (:mod:`streams.pipeline.declaration`) as a Faust
worker.

The batched stage (the market stage) runs on a consumer of its own inside the worker
(:class:`streams.runners.tick_consumer.TickConsumer`, group ``<app id>.market-ticks``); every
other stage is a Faust agent (group ``<app id>``). Each keeps one stage per partition it owns.
When a worker takes over a partition in the middle of its log (a restart, or a rebalance), it
first rebuilds the stage by re-reading the partition from the beginning up to that point, so
no state is lost; anything re-emitted carries the same idempotency key as before.

Every message goes through a :class:`streams.pipeline.driver.Driver`, live and in the rebuild
alike: whatever it makes its stage raise is dead-lettered (and counted as a stage error), and
the stage goes on with the next message.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Any

import faust
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from prometheus_client import CollectorRegistry

from streams.kafka.connect import start_client
from streams.metrics import PipelineMetrics
from streams.pipeline.declaration import (
    PIPELINE,
    PipelineConfig,
    StageSpec,
    partition_counts,
    sends,
    settings_topics,
)
from streams.pipeline.driver import Driver, Handling, dead_letter, is_stage_error
from streams.pipeline.stage import Message
from streams.runners.memory import Observer
from streams.runners.tick_consumer import TickConsumer
from streams.runtime import rate_limit_handlers
from streams.settings import Settings

log = logging.getLogger(__name__)

BATCH = 500
"""Events an agent takes from its stream at once; their outputs are delivered before the next
batch."""
BATCH_WAIT_SECONDS = 0.05


def create_app(settings: Settings, registry: CollectorRegistry | None = None) -> faust.App:
    """The worker's Faust app over the configured topics and catalogue, running every stage of
    the pipeline; its metrics go to ``registry`` (a private one when not given)."""
    catalogue = settings.catalogue()
    app = _faust_app(settings)
    metrics = PipelineMetrics(
        registry or CollectorRegistry(), markets=[m.key for m in catalogue],
        topics=[getattr(settings.topics, spec.topic) for spec in PIPELINE],
        slot_seconds=settings.slot_seconds, started=time.time())
    config = PipelineConfig(catalogue, settings.slot_seconds, settings.policy_spec(),
                            settings.max_future_skew_seconds, timed=metrics.timed)
    runner = KafkaRunner(app, settings, config, (metrics, HandlingLog()))
    for spec in PIPELINE:
        runner.run(spec)
    return app


class KafkaRunner:
    """Runs stages of the declaration in a Faust app: sends each stage's outputs where its
    routes say, and tells the observers what every message did."""

    def __init__(self, app: faust.App, settings: Settings, config: PipelineConfig,
                 observers: Sequence[Observer]) -> None:
        self.app, self.settings, self.config = app, settings, config
        self.observers = tuple(observers)
        self.partitions = partition_counts(settings_topics(settings))
        self._topics: dict[str, faust.TopicT] = {}

    def run(self, spec: StageSpec) -> None:
        """Run ``spec``'s stage on its topic: on the batched consumer, or as an agent."""
        topic = getattr(self.settings.topics, spec.topic)
        stages = PartitionStages(self.settings, topic, lambda: spec.make(self.config))
        if spec.batched:
            async def handle(records: Sequence[ConsumerRecord]) -> list[Awaitable[Any]]:
                return [d for record in records
                        for d in await self.process(spec, stages, record_message(record))]

            self.app.service(TickConsumer(self.settings, handle, beacon=self.app.beacon))
            return

        async def agent(stream: faust.StreamT) -> None:
            async with _crash_on_error(self.app, spec.name):
                async for batch in stream.take_events(BATCH, within=BATCH_WAIT_SECONDS):
                    await asyncio.gather(*[d for event in batch for d in await self.process(
                        spec, stages, event_message(event))])

        self.app.agent(self._topic(topic), name=f"spotsched.{spec.name}")(agent)

    async def process(self, spec: StageSpec, stages: PartitionStages,
                      message: Message) -> list[Awaitable[Any]]:
        """One message through its partition's stage; returns the deliveries of what it
        wrote."""
        assert message.partition is not None and message.offset is not None
        handling = (await stages.driver(message.partition, message.offset)).process(message)
        for observer in self.observers:
            observer.observe(spec.name, message, handling)
        return [await self._topic(out.topic).send(
                    key=out.key, value=out.value, partition=out.partition, headers=out.headers)
                for out in sends(spec, handling, self.settings.topics, self.partitions)]

    def _topic(self, name: str) -> faust.TopicT:
        if name not in self._topics:
            self._topics[name] = self.app.topic(name, partitions=self.partitions[name])
        return self._topics[name]


class HandlingLog:
    """Logs what went wrong with a message: stage errors, faults and dead letters."""

    def observe(self, stage: str, message: Message, handling: Handling) -> None:
        for fault in handling.faults:
            log.error("stage %s: %s: %s", fault.stage, type(fault.error).__name__, fault.error)
        for rejected in handling.rejections:
            letter = dead_letter(rejected)
            where = f"{letter.source_topic}[{letter.partition}]@{letter.offset}"
            if is_stage_error(rejected.error):
                log.error("stage %s raised %s on %s: %s", stage, type(rejected.error).__name__,
                          where, letter.reason)
            log.warning("dead letter from %s: %s", where, letter.reason)


def record_message(record: ConsumerRecord) -> Message:
    """An aiokafka record as a stage's message (Kafka timestamps are in milliseconds)."""
    return Message(record.topic, record.value, record.key, record.partition, record.offset,
                   record.timestamp / 1000.0 if record.timestamp else None)


def event_message(event: faust.EventT) -> Message:
    """A Faust event's raw message as a stage's message (Faust gives seconds)."""
    m = event.message
    return Message(m.topic, m.value, m.key, m.partition, m.offset, m.timestamp)


class PartitionStages:
    """One stage (behind its driver) per partition of a topic, rebuilt from the log when taken
    over mid-way."""

    def __init__(self, settings: Settings, topic: str, make_stage: Any) -> None:
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


class RateLimitedWorker(faust.Worker):
    """The Faust worker, its log handlers rate-limited (:mod:`streams.runtime`)."""

    def on_setup_root_logger(self, logger: logging.Logger, level: int) -> None:
        super().on_setup_root_logger(logger, level)
        rate_limit_handlers(logger)


def _faust_app(settings: Settings) -> faust.App:
    return faust.App(
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
