"""The state of a running service as the broker holds it: its topics, its consumer groups
with their members and lag, and the last epoch closed. ``spotsched status`` prints it."""

from __future__ import annotations

from dataclasses import dataclass

from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from streams.contract import EpochClosed
from streams.kafka.connect import start_client
from streams.kafka.topic_reader import open_reader, partitions_of, read_topics
from streams.settings import Settings


@dataclass(frozen=True, slots=True)
class TopicState:
    name: str
    partitions: int
    messages: int
    """Messages the topic holds now (end minus beginning offsets)."""


@dataclass(frozen=True, slots=True)
class GroupState:
    group: str
    state: str
    members: tuple[str, ...]
    """``client_id@host`` of each live member."""
    lag: dict[str, int]
    """Messages not yet consumed, per topic the group has committed offsets on."""


@dataclass(frozen=True, slots=True)
class ServiceStatus:
    app_id: str
    topics: tuple[TopicState, ...]
    missing: tuple[str, ...]
    """The service's topics the broker does not hold."""
    groups: tuple[GroupState, ...]
    last_epoch: EpochClosed | None

    @property
    def workers(self) -> tuple[str, ...]:
        """The live members of the scheduler workers' group (the app id)."""
        return next((g.members for g in self.groups if g.group == self.app_id), ())


async def service_status(settings: Settings) -> ServiceStatus:
    """What the broker holds of the service of ``settings`` (its app id and topic names)."""
    names = list(settings.topics.model_dump().values())
    admin = await start_client(lambda: AIOKafkaAdminClient(**settings.kafka_options()),
                               settings, f"reading the service at {settings.bootstrap_servers}")
    try:
        present = set(await admin.list_topics())
        partitions = await partitions_of(settings, [t for t in names if t in present])
        ends, starts = await _offsets(settings, partitions)
        groups = await _groups(admin, settings.app_id, ends)
    finally:
        await admin.close()
    topics = tuple(
        TopicState(t, sum(1 for tp in partitions if tp.topic == t),
                   sum(ends[tp] - starts[tp] for tp in partitions if tp.topic == t))
        for t in names if t in present)
    last = None
    if settings.topics.job_events in present:
        async for _, event in read_topics(settings, [settings.topics.job_events],
                                          ("epoch_closed",)):
            if isinstance(event, EpochClosed) and (last is None or event.epoch > last.epoch):
                last = event
    return ServiceStatus(settings.app_id, topics, tuple(t for t in names if t not in present),
                         groups, last)


async def _offsets(settings: Settings, partitions: list[TopicPartition]
                   ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
    """The end and beginning offsets of ``partitions``."""
    if not partitions:
        return {}, {}
    consumer = await open_reader(settings, "reading the topics' offsets")
    try:
        return (dict(await consumer.end_offsets(partitions)),
                dict(await consumer.beginning_offsets(partitions)))
    finally:
        await consumer.stop()


async def _groups(admin: AIOKafkaAdminClient, app_id: str,
                  ends: dict[TopicPartition, int]) -> tuple[GroupState, ...]:
    """The consumer groups named after the app id, with their members and lag on its topics."""
    ids = sorted(g[0] for g in await admin.list_consumer_groups() if str(g[0]).startswith(app_id))
    found = []
    for group_id in ids:  # one at a time: aiokafka misreads an answer about several
        (response,) = await admin.describe_consumer_groups([group_id])
        _, _, state, _, _, members, *_ = response.groups[0]
        offsets = await admin.list_consumer_group_offsets(group_id)
        lag: dict[str, int] = {}
        for tp, committed in offsets.items():
            if tp in ends and committed.offset >= 0:
                lag[tp.topic] = lag.get(tp.topic, 0) + max(ends[tp] - committed.offset, 0)
        found.append(GroupState(group_id, state, tuple(
            f"{m[1]}@{m[2].lstrip('/')}" for m in members), lag))
    return tuple(found)
