"""The market-ticks path: :class:`TickLoop`, a batched aiokafka consumer that runs inside the
Faust worker, in a consumer group of its own (:func:`group_id`).

A batch is handled, every delivery it started is awaited, and only then are its offsets
committed: at-least-once, and whatever a batch emits again after a crash is identical to what
it emitted the first time. Then the stages due are snapshotted. The commit lands while the
next batch is fetched and handled (a commit waits for the broker, about as long as the batch's
deliveries); the next commit is sent only once it has, and a rebalance or a stop waits for it,
so a batch is still committed by the worker that handled it.

A partition whose stage must first be recovered (taken over mid-way: a restart, a rebalance)
is paused and rewound to its first record of the batch, and recovers in the background
(:mod:`streams.runners.recovery`) while the other partitions flow and the consumer keeps
polling, so it stays in its group however long the recovery takes; it resumes once its
stage is ready.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, ConsumerRecord, TopicPartition
from aiokafka.errors import CommitFailedError
from mode import Service

from streams.kafka.connect import retrying, start_client
from streams.settings import Settings

log = logging.getLogger(__name__)

MAX_RECORDS = 4000
"""Records taken from the topic at once."""
POLL_MS = 1000
"""How long an idle poll waits for records (stopping cancels the wait)."""
FETCH_WAIT_MS = 50
"""How long the broker holds a fetch for caught-up partitions. aiokafka keeps one fetch in
flight per broker and leaves out partitions whose records are still buffered, so a busy
partition waits for the fetch of idle ones; Kafka's default, 500 ms, cost half the
throughput in bench/bench_pipeline.py once one partition had caught up."""

BatchHandler = Callable[[Sequence[ConsumerRecord]], Awaitable[list[Awaitable[Any]]]]
"""Handles records (each partition's in offset order) and returns the deliveries it started."""


class Stages(Protocol):
    """The stages behind the handler (:class:`streams.runners.recovery.PartitionStages`)."""

    def ready(self, partition: int, offset: int) -> bool: ...

    async def recover(self, partition: int, offset: int) -> None: ...

    async def checkpoint(self, log_ends: Mapping[int, int | None]) -> None: ...

    def batch(self) -> AbstractAsyncContextManager[None]: ...


def log_end(highwater: Callable[[Any], int | None], tp: Any) -> int | None:
    """The next offset of partition ``tp``'s log as a consumer last heard it from the broker
    (``highwater``, its method); ``None`` when unknown: not fetched yet, or revoked meanwhile
    (aiokafka asserts that the partition is assigned)."""
    try:
        return highwater(tp)
    except AssertionError:
        return None


def group_id(settings: Settings) -> str:
    """The consumer group of the market-ticks path."""
    return f"{settings.app_id}.market-ticks"


class TickLoop(Service):
    """Feeds the market-ticks topic to ``handle`` in batches, committing after delivery.

    Ticks bypass Faust for throughput: Faust dispatches every message through its stream
    machinery, which holds a worker to a few thousand messages per second, and the ticks topic
    carries far more messages than the other inputs together (docs/operations.md, *What runs
    where*). Each turn of :meth:`_run` polls a batch, hands it to the stages, waits for the
    outputs to be delivered, then commits the batch (module doc).

    Started with the Faust app (``app.service``) once its producer runs, and stopped before
    it: stopping lets the batch in flight finish (handled, delivered, committed), stops
    consuming, then leaves the group. A commit is retried while the broker is away; an error
    other than a failed commit crashes the worker, which is safe to restart. ``consumer``
    builds the Kafka consumer (an aiokafka one of the settings' group when not given).
    """

    def __init__(self, settings: Settings, handle: BatchHandler, stages: Stages,
                 consumer: Callable[[], AIOKafkaConsumer] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.settings = settings
        self.topic = settings.topics.market_ticks
        self._handle = handle
        self._stages = stages
        self._new_consumer = consumer or self._kafka_consumer
        self._batch = asyncio.Lock()
        self._consumer: AIOKafkaConsumer | None = None
        self._running: asyncio.Future[Any] | None = None
        self._committing: asyncio.Future[None] | None = None
        """The commit of the last batch handled, until it has landed."""
        self._recovering: set[TopicPartition] = set()

    async def on_start(self) -> None:
        self._consumer = await start_client(self._new_consumer, self.settings,
                                            f"consuming {self.topic}")
        self._consumer.subscribe([self.topic], listener=_Handover(self._batch, self._committed))
        self._running = self.add_future(self._run(self._consumer))

    async def on_stop(self) -> None:
        if self._consumer is None or self._running is None:
            return
        async with self._batch:  # the batch in flight is delivered first
            self._running.cancel()
        await asyncio.wait([self._running])
        await self._committed()
        await self._consumer.stop()

    async def _run(self, consumer: AIOKafkaConsumer) -> None:
        """Poll a batch, hand it to the stages, await its deliveries, commit, checkpoint."""
        while not self.should_stop:
            # getmany returns nothing while a rebalance is under way, and the lock is then
            # taken without yielding: a batch is handled and committed within one assignment.
            polled = await consumer.getmany(timeout_ms=POLL_MS, max_records=MAX_RECORDS)
            async with self._batch, self._stages.batch():
                batch = {tp: records for tp, records in polled.items()
                         if self._admit(consumer, tp, records[0].offset)}
                if not batch:
                    continue
                await asyncio.gather(*await self._handle(
                    [record for records in batch.values() for record in records]))
                await self._commit_after_last(
                    consumer, {tp: records[-1].offset + 1 for tp, records in batch.items()})
                await self._stages.checkpoint({tp.partition: log_end(consumer.highwater, tp)
                                               for tp in batch})

    def _kafka_consumer(self) -> AIOKafkaConsumer:
        """A consumer of the market-ticks group, committing only when told."""
        settings = self.settings
        return AIOKafkaConsumer(
            **settings.kafka_options(), group_id=group_id(settings),
            enable_auto_commit=False, auto_offset_reset="earliest",
            fetch_max_wait_ms=FETCH_WAIT_MS,
            session_timeout_ms=round(settings.session_timeout_seconds * 1000),
            heartbeat_interval_ms=round(settings.heartbeat_seconds * 1000),
            max_poll_interval_ms=round(settings.max_poll_interval_seconds * 1000),
            group_instance_id=settings.instance_id)

    def _admit(self, consumer: AIOKafkaConsumer, tp: TopicPartition, offset: int) -> bool:
        """Whether the partition's records from ``offset`` can be handled now; if not, the
        partition is paused, rewound to ``offset`` and recovers in the background."""
        if self._stages.ready(tp.partition, offset):
            return True
        consumer.pause(tp)
        consumer.seek(tp, offset)
        if tp not in self._recovering:
            self._recovering.add(tp)
            self.add_future(self._recover(consumer, tp, offset))
        return False

    async def _recover(self, consumer: AIOKafkaConsumer, tp: TopicPartition,
                       offset: int) -> None:
        try:
            await self._stages.recover(tp.partition, offset)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.critical("%s[%d]: recovery failed, stopping the worker: %s: %s", self.topic,
                         tp.partition, type(exc).__name__, exc)
            await self.crash(exc)
            return
        finally:
            self._recovering.discard(tp)
        if tp in consumer.assignment():
            consumer.resume(tp)

    async def _committed(self) -> None:
        """Until the commit of the last batch handled has landed (raising what it raised)."""
        if self._committing is not None:
            await self._committing
            self._committing = None

    async def _commit_after_last(self, consumer: AIOKafkaConsumer,
                                 offsets: dict[TopicPartition, int]) -> None:
        """Once the last batch's commit has landed, send this one's (it lands meanwhile)."""
        await self._committed()
        self._committing = asyncio.ensure_future(self._commit(consumer, offsets))

    async def _commit(
        self, consumer: AIOKafkaConsumer, offsets: dict[TopicPartition, int]
    ) -> None:
        try:
            await retrying(lambda: consumer.commit(offsets), self.settings,
                           f"committing {self.topic} offsets")
        except CommitFailedError as exc:
            # The group moved on; the partition's new owner re-emits the same outputs.
            log.warning("%s: commit of %s failed, left to the next owner: %s",
                        group_id(self.settings), offsets, exc)


class _Handover(ConsumerRebalanceListener):
    """Lets a rebalance proceed only between batches, once the last batch's commit has landed,
    so a batch is committed by its owner.

    A revoked partition's stage is kept, not dropped (:mod:`streams.runners.recovery`): one
    whose partition comes straight back is reused as it is, and one that missed records
    handled elsewhere is brought forward from its newest snapshot or from itself, whichever
    is further.
    """

    def __init__(self, batch: asyncio.Lock, committed: Callable[[], Awaitable[None]]) -> None:
        self._batch = batch
        self._committed = committed

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        async with self._batch:
            await self._committed()
            log.info("market-ticks partitions revoked: %s", sorted(tp.partition for tp in revoked))

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        log.info("market-ticks partitions assigned: %s", sorted(tp.partition for tp in assigned))
