"""Reading the service's topics as they stand, for the operator's views: every partition from
the beginning (or from given offsets) up to the end offsets of the moment, or on while
following. Messages are picked by their CloudEvents type header before any decoding, so a view
of the jobs skips the forecasts without parsing them."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from datetime import datetime

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from streams.contract import Envelope, EventError, parse_event
from streams.contract.headers import TYPE_PREFIX
from streams.kafka.connect import start_client
from streams.settings import Settings

log = logging.getLogger(__name__)

Offsets = dict[TopicPartition, int]

POLL_SECONDS = 0.5


class MissingTopic(ValueError):
    """A topic the command reads is not on the broker."""


async def open_reader(settings: Settings, what: str) -> AIOKafkaConsumer:
    """A consumer of no group, assigned nothing yet."""
    return await start_client(
        lambda: AIOKafkaConsumer(**settings.kafka_options(), group_id=None,
                                 enable_auto_commit=False, auto_offset_reset="earliest"),
        settings, f"{what} from {settings.bootstrap_servers}")


async def partitions_of(settings: Settings, topics: Sequence[str]) -> list[TopicPartition]:
    """Every partition of ``topics``; a :class:`MissingTopic` names one the broker lacks."""
    admin = await start_client(lambda: AIOKafkaAdminClient(**settings.kafka_options()),
                               settings, f"describing topics at {settings.bootstrap_servers}")
    try:
        described = {d["topic"]: d for d in await admin.describe_topics(list(topics))}
    finally:
        await admin.close()
    found: list[TopicPartition] = []
    for topic in topics:
        info = described.get(topic)
        if info is None or info["error_code"] or not info["partitions"]:
            raise MissingTopic(
                f"topic {topic!r} is not on the broker at {settings.bootstrap_servers}: expected "
                "a worker to have created it (`spotsched worker`), or check the topic settings "
                "(SPOTSCHED_TOPICS__*)")
        found += [TopicPartition(topic, p["partition"])
                  for p in sorted(info["partitions"], key=lambda p: p["partition"])]
    return found


async def end_offsets(settings: Settings, topics: Sequence[str]) -> Offsets:
    """The offset each partition of ``topics`` will give its next message."""
    consumer = await open_reader(settings, f"reading the ends of {', '.join(topics)}")
    try:
        return dict(await consumer.end_offsets(await partitions_of(settings, topics)))
    finally:
        await consumer.stop()


async def read_topics(
    settings: Settings,
    topics: Sequence[str],
    types: Collection[str] | None = None,
    follow: bool = False,
    start: Offsets | None = None,
    caught_up: Callable[[], None] | None = None,
) -> AsyncIterator[tuple[str, Envelope]]:
    """``(topic, event)`` for each message of ``topics`` whose type is one of ``types`` (all
    when ``None``), from ``start`` (default: the beginning) up to the ends of the moment, or
    on when ``follow`` (calling ``caught_up`` once those ends are read); an undecodable
    message is skipped and logged."""
    wanted = None if types is None else {(TYPE_PREFIX + t).encode() for t in types}
    consumer = await open_reader(settings, f"reading {', '.join(topics)}")
    try:
        assigned = await partitions_of(settings, topics)
        consumer.assign(assigned)
        for tp in assigned:
            if start is not None and tp in start:
                consumer.seek(tp, start[tp])
            else:
                await consumer.seek_to_beginning(tp)
        ends = await consumer.end_offsets(assigned)
        while True:
            if (not follow or caught_up is not None) and await _caught_up(consumer, ends):
                if not follow:
                    return
                if caught_up is not None:
                    caught_up()
                    caught_up = None
            batch = await consumer.getmany(timeout_ms=int(POLL_SECONDS * 1000))
            for tp, messages in batch.items():
                for message in messages:
                    kind = dict(message.headers or ()).get("ce_type")
                    if wanted is not None and kind is not None and kind not in wanted:
                        continue
                    try:
                        event = parse_event(message.value or b"")
                    except EventError as exc:
                        log.warning("%s[%d]@%d skipped: %s", tp.topic, tp.partition,
                                    message.offset, exc)
                        continue
                    if types is None or event.type in types:
                        yield tp.topic, event
    finally:
        await consumer.stop()


async def _caught_up(consumer: AIOKafkaConsumer, ends: Offsets) -> bool:
    """Whether the consumer has read every assigned partition up to ``ends``."""
    for tp, end in ends.items():
        if await consumer.position(tp) < end:
            return False
    return True


async def newest_time(settings: Settings, topic: str) -> datetime | None:
    """The newest event time (CloudEvents ``ce_time``) among the last messages of ``topic``'s
    partitions; ``None`` when the topic is missing or empty."""
    consumer = await open_reader(settings, f"reading the newest messages of {topic}")
    try:
        try:
            assigned = await partitions_of(settings, [topic])
        except MissingTopic:
            return None
        consumer.assign(assigned)
        ends = await consumer.end_offsets(assigned)
        starts = await consumer.beginning_offsets(assigned)
        times: list[datetime] = []
        for tp in (tp for tp in assigned if ends[tp] > starts[tp]):
            consumer.seek(tp, ends[tp] - 1)
            message = None
            while message is None and await consumer.position(tp) < ends[tp]:
                batch = await consumer.getmany(tp, timeout_ms=int(POLL_SECONDS * 1000))
                message = next(iter(batch.get(tp, ())), None)
            at = dict(message.headers or ()).get("ce_time") if message is not None else None
            if at:
                times.append(datetime.fromisoformat(at.decode()))
        return max(times, default=None)
    finally:
        await consumer.stop()
