"""Publishing to and reading from the pipeline's topics with aiokafka: the replay producer,
the job-publishing client and the typed decision consumer.

Every client rides out a broker outage of up to ``broker_timeout_seconds``: it starts with
:func:`streams.kafka.connect.start_client`, and a producer keeps unacknowledged messages, in
order, for that long (its request timeout), logging while it waits.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaError
from aiokafka.structs import RecordMetadata

from streams.contract import (
    Envelope,
    EventError,
    JobEvent,
    JobSubmitted,
    ProvisioningDecision,
    cloud_event_headers,
    dump_event,
    parse_event,
    source,
)
from streams.kafka.connect import BrokerError, start_client
from streams.kafka.partitions import partition_for
from streams.settings import Settings, env_name

log = logging.getLogger(__name__)

T = TypeVar("T")

STALL_LOG_SECONDS = 10.0
"""How often a producer waiting for acknowledgements says so."""


async def open_producer(settings: Settings, what: str) -> AIOKafkaProducer:
    """An idempotent producer acknowledged by every replica, keeping messages through an
    outage of up to ``broker_timeout_seconds``."""
    timeout_ms = int(settings.broker_timeout_seconds * 1000)
    return await start_client(
        lambda: AIOKafkaProducer(**settings.kafka_options(), acks="all",
                                 enable_idempotence=True, linger_ms=5,
                                 request_timeout_ms=timeout_ms),
        settings, what)


async def send_event(producer: AIOKafkaProducer, topic: str, event: Envelope, writer: str,
                     partitions: int | None = None) -> Awaitable[Any]:
    """Hand ``event`` to ``producer`` with its key and CloudEvents headers (``writer`` names
    the component, e.g. ``replay``), to the partition its key picks among ``partitions``
    (default: the producer's partitioner, the same one); returns its delivery."""
    key = event.key.encode()
    return await producer.send(
        topic, dump_event(event), key=key,
        partition=None if partitions is None else partition_for(key, partitions),
        headers=cloud_event_headers(event, source(writer)))


async def delivered(deliveries: list[Awaitable[Any]], settings: Settings, what: str
                    ) -> list[RecordMetadata]:
    """Wait until every delivery is acknowledged, saying so while the broker is away; where
    each message went. A delivery that failed raises :class:`BrokerError`."""
    if not deliveries:
        return []
    return list(await patiently(asyncio.gather(*deliveries), settings, what,
                                f"{len(deliveries)} message(s) not acknowledged"))


async def patiently(step: Awaitable[T], settings: Settings, what: str, waiting: str) -> T:
    """``step``'s result, saying every :data:`STALL_LOG_SECONDS` that it is still ``waiting``
    for the broker; a Kafka error raises :class:`BrokerError`."""
    task = asyncio.ensure_future(step)
    started = time.monotonic()
    while True:
        try:
            return await asyncio.wait_for(asyncio.shield(task), STALL_LOG_SECONDS)
        except TimeoutError:
            log.warning("%s: %s for %.0f s; waiting for the broker (up to "
                        "broker_timeout_seconds=%g)", what, waiting, time.monotonic() - started,
                        settings.broker_timeout_seconds)
        except KafkaError as exc:
            raise BrokerError(
                f"{what}: the broker did not acknowledge a message ({type(exc).__name__}: "
                f"{exc}); gave up after broker_timeout_seconds="
                f"{settings.broker_timeout_seconds:g} ({env_name('broker_timeout_seconds')})"
            ) from None


async def publish_replay(
    settings: Settings,
    events: Iterable[Envelope],
    speed: float | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Publish a replay in event-time order; returns the number of events.

    A job's submission is acknowledged before any later tick is sent, so the epoch that makes
    the job active always reaches its partition after the job. ``speed`` replays N event-time
    seconds per wall-clock second; ``None`` is as fast as possible.
    """
    what = f"publishing the replay to {settings.bootstrap_servers}"
    producer = await open_producer(settings, what)
    topics = settings.topics
    pending: list[Awaitable[Any]] = []
    sent = 0
    first_time: float | None = None
    started = asyncio.get_running_loop().time()
    try:
        for event in events:
            at = event.event_time.timestamp()
            if speed is not None:
                first_time = at if first_time is None else first_time
                due = started + (at - first_time) / speed
                delay = due - asyncio.get_running_loop().time()
                if delay > 0:
                    await asyncio.sleep(delay)
            if isinstance(event, JobSubmitted):
                pending.append(await send_event(producer, topics.job_events, event, "replay",
                                                settings.job_partitions))
                await delivered(pending, settings, what)
                pending.clear()
            else:  # a full send buffer blocks here while the broker is away
                pending.append(await patiently(
                    send_event(producer, topics.market_ticks, event, "replay",
                               settings.market_partitions),
                    settings, what, "the send buffer is full"))
                if len(pending) >= 1000:
                    await delivered(pending, settings, what)
                    pending.clear()
            sent += 1
            if progress is not None and sent % 1000 == 0:
                progress(1000)
        await delivered(pending, settings, what)
        if progress is not None:
            progress(sent % 1000)
    finally:
        await producer.stop()
    return sent


async def publish_job_events(settings: Settings, events: Iterable[JobEvent]
                             ) -> list[RecordMetadata]:
    """Publish job events (already validated by the contract) to their partitions, each
    acknowledged before the next is sent; where each went."""
    what = f"publishing job events to {settings.bootstrap_servers}"
    producer = await open_producer(settings, what)
    placed: list[RecordMetadata] = []
    try:
        for event in events:
            placed += await delivered([await send_event(
                producer, settings.topics.job_events, event, "submit", settings.job_partitions)],
                settings, what)
    finally:
        await producer.stop()
    return placed


async def read_events(
    settings: Settings,
    topic: str,
    group_id: str | None = None,
    from_beginning: bool = True,
    idle_timeout: float | None = None,
) -> AsyncIterator[Envelope]:
    """Events of ``topic`` as typed models, skipping (and logging) undecodable messages; stops
    after ``idle_timeout`` s without messages.

    With a ``group_id`` offsets are committed, so a restarted reader resumes where it was.
    """
    consumer = await start_client(
        lambda: AIOKafkaConsumer(
            topic, **settings.kafka_options(), group_id=group_id,
            auto_offset_reset="earliest" if from_beginning else "latest",
            enable_auto_commit=group_id is not None),
        settings, f"reading {topic} from {settings.bootstrap_servers}")
    try:
        while True:
            batch = await consumer.getmany(timeout_ms=int(1000 * (idle_timeout or 1.0)))
            if not batch and idle_timeout is not None:
                return
            for messages in batch.values():
                for message in messages:
                    try:
                        yield parse_event(message.value or b"")
                    except EventError as exc:
                        log.warning("%s[%d]@%d skipped: %s", topic, message.partition,
                                    message.offset, exc)
    finally:
        await consumer.stop()


async def read_decisions(
    settings: Settings,
    group_id: str | None = None,
    from_beginning: bool = True,
    idle_timeout: float | None = None,
) -> AsyncIterator[ProvisioningDecision]:
    """The typed decision consumer for downstream systems."""
    async for event in read_events(settings, settings.topics.decisions, group_id,
                                   from_beginning, idle_timeout):
        if isinstance(event, ProvisioningDecision):
            yield event
