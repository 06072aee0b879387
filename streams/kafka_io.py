"""Publishing to and reading from the pipeline's topics with aiokafka: the replay producer,
the job-publishing client and the typed decision consumer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from streams.events import (
    Envelope,
    JobCancelled,
    JobProgress,
    JobSubmitted,
    ProvisioningDecision,
    dump_event,
    parse_event,
)
from streams.replay_events import ReplayEvent, partition_for
from streams.settings import Settings

JobEvent = JobSubmitted | JobProgress | JobCancelled


def _producer(settings: Settings) -> AIOKafkaProducer:
    return AIOKafkaProducer(**settings.kafka_options(), acks="all", enable_idempotence=True,
                            linger_ms=5)


async def publish_replay(
    settings: Settings,
    events: Iterable[ReplayEvent],
    speed: float | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Publish a replay in event-time order; returns the number of events.

    A job's submission is acknowledged before any later tick is sent, so the epoch that makes
    the job active always reaches its partition after the job. ``speed`` replays N event-time
    seconds per wall-clock second; ``None`` is as fast as possible.
    """
    producer = _producer(settings)
    await producer.start()
    topics = settings.topics
    pending: list[asyncio.Future[Any]] = []
    sent = 0
    first_time: float | None = None
    started = asyncio.get_running_loop().time()
    try:
        for event in events:
            time = event.event_time.timestamp()
            if speed is not None:
                first_time = time if first_time is None else first_time
                due = started + (time - first_time) / speed
                delay = due - asyncio.get_running_loop().time()
                if delay > 0:
                    await asyncio.sleep(delay)
            if isinstance(event, JobSubmitted):
                await asyncio.gather(*pending)
                pending.clear()
                await producer.send_and_wait(
                    topics.job_events, dump_event(event), key=event.key.encode(),
                    partition=partition_for(event.key, settings.job_partitions))
            else:
                pending.append(await producer.send(
                    topics.market_ticks, dump_event(event), key=event.key.encode(),
                    partition=partition_for(event.key, settings.market_partitions)))
                if len(pending) >= 1000:
                    await asyncio.gather(*pending)
                    pending.clear()
            sent += 1
            if progress is not None and sent % 1000 == 0:
                progress(1000)
        await asyncio.gather(*pending)
        if progress is not None:
            progress(sent % 1000)
    finally:
        await producer.stop()
    return sent


async def publish_job_events(settings: Settings, events: Iterable[JobEvent]) -> int:
    """Publish job events (already validated by the contract) to their partitions."""
    producer = _producer(settings)
    await producer.start()
    count = 0
    try:
        for event in events:
            await producer.send_and_wait(
                settings.topics.job_events, dump_event(event), key=event.key.encode(),
                partition=partition_for(event.key, settings.job_partitions))
            count += 1
    finally:
        await producer.stop()
    return count


async def read_events(
    settings: Settings,
    topic: str,
    group_id: str | None = None,
    from_beginning: bool = True,
    idle_timeout: float | None = None,
) -> AsyncIterator[Envelope]:
    """Events of ``topic`` as typed models; stops after ``idle_timeout`` s without messages.

    With a ``group_id`` offsets are committed, so a restarted reader resumes where it was.
    """
    consumer = AIOKafkaConsumer(
        topic, **settings.kafka_options(), group_id=group_id,
        auto_offset_reset="earliest" if from_beginning else "latest",
        enable_auto_commit=group_id is not None,
    )
    await consumer.start()
    try:
        while True:
            batch = await consumer.getmany(timeout_ms=int(1000 * (idle_timeout or 1.0)))
            if not batch and idle_timeout is not None:
                return
            for messages in batch.values():
                for message in messages:
                    yield parse_event(message.value)
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
