"""The Kafka runner: the pipeline declaration (:mod:`streams.pipeline.declaration`) as a Faust
worker.

The batched stage (the market stage) runs on a consumer of its own inside the worker
(:class:`streams.runners.tick_consumer.TickLoop`, group ``<app id>.market-ticks``), which hands
each batch to :meth:`KafkaRunner.handle_ticks`; every other stage is a Faust agent (group
``<app id>``). Each keeps one stage per partition it owns
(:class:`streams.runners.recovery.PartitionStages`). When a worker takes over a partition in
the middle of its log (a restart, or a rebalance), it first restores the stage from its newest
snapshot and replays the log after it, so no state is lost; anything re-emitted carries the
same idempotency key as before. After each batch's outputs are delivered, the stages due are
snapshotted.

Every message goes through a :class:`streams.pipeline.driver.Driver`, live and in a restore
alike: whatever it makes its stage raise is dead-lettered (and counted as a stage error), and
the stage goes on with the next message. What the stages write for one another is the runner's
:attr:`KafkaRunner.between_stages`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Iterable, Sequence
from typing import Any

import faust
from aiokafka import ConsumerRecord
from mode import Service
from prometheus_client import CollectorRegistry

from streams.kafka.state import KafkaState
from streams.metrics import PipelineMetrics
from streams.pipeline.declaration import (
    PIPELINE,
    PipelineConfig,
    StageSpec,
    partition_counts,
    sends,
    settings_topics,
)
from streams.pipeline.driver import Batch, dead_letter, is_stage_error
from streams.pipeline.stage import Message
from streams.pipeline.written import Written
from streams.runners.collector import QuietCollector
from streams.runners.memory import Observer
from streams.runners.recovery import PartitionStages, record_message
from streams.runners.tick_consumer import TickLoop, log_end
from streams.runtime import guard_handlers
from streams.settings import Settings, env_name

log = logging.getLogger(__name__)

BATCH = 500
"""Events an agent takes from its stream at once; their outputs are delivered before the next
batch."""
BATCH_WAIT_SECONDS = 0.01
"""How often an agent hands on what it took: a message waits up to this long before its stage
sees it, at each of the two agents an epoch marker passes through."""
PRODUCER_BATCH_BYTES = 512 * 1024
"""Bytes of one partition's messages the producer sends in one request. The producer has one
request in flight per broker, and a request holds one batch per partition: at Kafka's default,
16 KiB (some 20 decisions), an epoch's 1,000 decisions took 40 round trips to the broker."""


def create_app(settings: Settings, registry: CollectorRegistry | None = None) -> faust.App:
    """The worker's Faust app over the configured topics and catalogue, running every stage of
    the pipeline; its metrics go to ``registry`` (a private one when not given)."""
    catalogue = settings.catalogue()
    if not settings.snapshot_keys():  # none only when told to run without one
        log.warning("insecure unsigned snapshots (%s): snapshots are written and restored "
                    "unauthenticated; anyone who can write the snapshot topics can set the "
                    "stages' state (docs/operations.md, Trust)",
                    env_name("insecure_unsigned_snapshots"))
    app = _faust_app(settings)
    metrics = PipelineMetrics(
        registry or CollectorRegistry(), markets=[m.key for m in catalogue],
        topics=[getattr(settings.topics, spec.topic) for spec in PIPELINE],
        slot_seconds=settings.slot_seconds, started=time.time(),
        snapshot_every_epochs=settings.snapshot_every_epochs)
    config = PipelineConfig(catalogue, settings.slot_seconds, settings.policy_spec(),
                            settings.max_future_skew_seconds, timed=metrics.timed)
    state = KafkaState(settings)
    collector = QuietCollector()
    runner = KafkaRunner(app, settings, config, state, metrics,
                         (metrics, HandlingLog(), collector), collector)
    app.service(_StateClients(state, runner.stages, beacon=app.beacon))  # type: ignore[arg-type]  # faust annotates App.service for classes; it starts instances too
    for spec in PIPELINE:
        runner.run(spec)
    return app


class KafkaRunner:
    """Runs stages of the declaration in a Faust app: sends each stage's outputs where its
    routes say, and tells the observers what every message did. Its stages are built with
    :attr:`between_stages`, where they find what the others wrote."""

    def __init__(self, app: faust.App, settings: Settings, config: PipelineConfig,
                 state: KafkaState, metrics: PipelineMetrics,
                 observers: Sequence[Observer], collector: QuietCollector | None = None
                 ) -> None:
        self.app, self.settings, self.config = app, settings, config
        self.state, self.metrics = state, metrics
        self.observers = tuple(observers)
        self.collector = collector
        """Told when each batch is delivered (full garbage collections then)."""
        self.partitions = partition_counts(settings_topics(settings))
        self._topics: dict[str, faust.TopicT] = {}
        self.stages: list[PartitionStages] = []
        """The stages of every stage run, in the order of :meth:`run`."""
        self.between_stages = Written()

    def run(self, spec: StageSpec) -> None:
        """Run ``spec``'s stage on its topic: on the batched consumer, or as an agent."""
        topic = getattr(self.settings.topics, spec.topic)
        stages = PartitionStages(
            spec, self.settings, self.config, self.state, self.between_stages,
            {"config": self.config, "solve_seconds": self.metrics.solve_seconds},
            self.metrics.recovery)
        self.stages.append(stages)
        if spec.batched:
            ticks = TickLoop(self.settings, functools.partial(self.handle_ticks, spec, stages),
                             stages, beacon=self.app.beacon)
            self.app.service(ticks)  # type: ignore[arg-type]  # faust annotates App.service for classes; it starts instances too
            return

        async def agent(stream: faust.StreamT) -> None:
            async with _crash_on_error(self.app, spec.name):
                async for batch in stream.take_events(BATCH, within=BATCH_WAIT_SECONDS):  # type: ignore[attr-defined]  # faust's StreamT omits take_events, which its Stream has
                    async with stages.batch():
                        await asyncio.gather(*await self.process(
                            spec, stages, map(event_message, batch)))
                        await stages.checkpoint(self._log_ends(batch))
                    self._delivered()

        self.app.agent(self._topic(topic), name=f"spotsched.{spec.name}")(agent)

    async def handle_ticks(self, spec: StageSpec, stages: PartitionStages,
                           records: Sequence[ConsumerRecord]) -> list[Awaitable[Any]]:
        """The batched stage's handler (:class:`TickLoop`): a batch of records through
        :meth:`process`; the batch before had its deliveries awaited by now."""
        self._delivered()
        return await self.process(spec, stages, map(record_message, records))

    async def process(self, spec: StageSpec, stages: PartitionStages,
                      messages: Iterable[Message]) -> list[Awaitable[Any]]:
        """A batch of messages, each through its partition's stage (recovered first when the
        partition was taken over; a message it took before is skipped); returns the deliveries
        of what they wrote. The outputs go straight to the producer (Faust's ``Topic.send``
        costs a future and its callbacks per message, and took 0.2-1.5 s to queue an epoch's
        600 decisions that the producer queues in a few milliseconds) and are on their way
        before the observers are told, once, what the batch did."""
        producer = self.app.producer
        deliveries = []
        batch = Batch(spec.name, stages.topic)
        for message in messages:
            assert message.partition is not None and message.offset is not None
            if not stages.ready(message.partition, message.offset):
                await stages.recover(message.partition, message.offset)
            handling = stages.process(message)
            if handling is None:
                continue
            batch.add(message, handling)
            if handling.outputs or handling.rejections:
                deliveries += [await producer.send(out.topic, out.key, out.value, out.partition,
                                                   None, out.headers)
                               for out in sends(spec, handling, self.settings.topics,
                                                self.partitions, self.between_stages)]
        for observer in self.observers:
            observer.observe(batch)
        return deliveries

    def _log_ends(self, batch: Sequence[faust.EventT]) -> dict[int, int | None]:
        """The next offset of the log of each partition in an agent's ``batch``, as the
        consumer last heard from the broker."""
        highwater = self.app.consumer.highwater
        return {event.message.partition: log_end(highwater, event.message.tp)
                for event in batch}

    def _delivered(self) -> None:
        if self.collector is not None:
            self.collector.delivered()

    def _topic(self, name: str) -> faust.TopicT:
        if name not in self._topics:
            self._topics[name] = self.app.topic(name, partitions=self.partitions[name])
        return self._topics[name]


class HandlingLog:
    """Logs what went wrong with a message: stage errors, faults and dead letters."""

    def observe(self, batch: Batch) -> None:
        for _, handling in batch.eventful:
            for fault in handling.faults:
                log.error("stage %s: %s: %s", fault.stage, type(fault.error).__name__,
                          fault.error)
            for rejected in handling.rejections:
                letter = dead_letter(rejected)
                where = f"{letter.source_topic}[{letter.partition}]@{letter.offset}"
                if is_stage_error(rejected.error):
                    log.error("stage %s raised %s on %s: %s", batch.stage,
                              type(rejected.error).__name__, where, letter.reason)
                log.warning("dead letter from %s: %s", where, letter.reason)


def event_message(event: faust.EventT) -> Message:
    """A Faust event's raw message as a stage's message (Faust gives seconds)."""
    m = event.message
    return Message(m.topic, m.value, m.key, m.partition, m.offset, m.timestamp)


class _StateClients(Service):
    """When the worker stops: snapshots every stage that took records since its last snapshot
    (the tick loop has stopped by then, and each agent's batch in flight is waited for),
    then closes the snapshot and trimming clients. Added before the tick loop, so stopped
    after it."""

    def __init__(self, state: KafkaState, stages: Sequence[PartitionStages],
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.clients = state
        self.stages = stages

    async def on_stop(self) -> None:
        for stages in self.stages:
            await stages.snapshot_all()
        await self.clients.stop()


class RateLimitedWorker(faust.Worker):
    """The Faust worker, its log handlers rate-limited (:mod:`streams.runtime`)."""

    def on_setup_root_logger(self, logger: logging.Logger, level: int) -> None:
        super().on_setup_root_logger(logger, level)
        guard_handlers(logger)


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
        broker_session_timeout=settings.session_timeout_seconds,
        broker_heartbeat_interval=settings.heartbeat_seconds,
        broker_max_poll_interval=settings.max_poll_interval_seconds,
        consumer_group_instance_id=settings.instance_id,
        producer_acks=-1,
        producer_max_batch_size=PRODUCER_BATCH_BYTES,
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
    context = options.get("ssl_context")
    tls = context if isinstance(context, ssl.SSLContext) else None
    if settings.security_protocol.startswith("SASL"):
        return faust.SASLCredentials(
            username=settings.sasl_username,
            password=str(options["sasl_plain_password"]),
            mechanism=settings.sasl_mechanism,
            ssl_context=tls,
        )
    return faust.SSLCredentials(tls)
