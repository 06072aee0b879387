"""Starting a connector over: its consumer group back at the beginning of the decisions, its
durable records (applied keys, the simulated cloud's journal) removed, so every decision is
applied again. Refused while the group has live members."""

from __future__ import annotations

import logging
from pathlib import Path

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from connectors.worker import STATE_KINDS, WorkerOptions, state_file
from streams.kafka.connect import start_client
from streams.settings import Settings

log = logging.getLogger(__name__)


async def reset_connector(settings: Settings, options: WorkerOptions) -> list[Path]:
    """Reset the connector's group to the beginning of the decisions topic and remove its
    records; the files removed. A ``ValueError`` while a member of the group runs."""
    group = options.group_id(settings)
    admin = await start_client(lambda: AIOKafkaAdminClient(**settings.kafka_options()),
                               settings, f"reading group {group}")
    topic = settings.topics.decisions
    try:
        (response,) = await admin.describe_consumer_groups([group])
        members = response.groups[0][5]
        (described,) = await admin.describe_topics([topic])
    finally:
        await admin.close()
    if members:
        raise ValueError(f"--reset: group {group!r} has {len(members)} live member(s); expected "
                         "none: stop the connector first")
    if described["error_code"] or not described["partitions"]:
        raise ValueError(f"--reset: topic {topic!r} is not on the broker at "
                         f"{settings.bootstrap_servers}: expected the decisions topic")
    partitions = [TopicPartition(topic, p["partition"]) for p in described["partitions"]]
    consumer = await start_client(
        lambda: AIOKafkaConsumer(**settings.kafka_options(), group_id=group,
                                 enable_auto_commit=False),
        settings, f"resetting group {group}")
    try:
        consumer.assign(partitions)
        starts = await consumer.beginning_offsets(partitions)
        await consumer.commit(dict(starts))
    finally:
        await consumer.stop()
    removed = []
    for kind in STATE_KINDS:
        database = state_file(settings, options, kind)
        for path in (database, *(database.with_name(database.name + s) for s in ("-wal", "-shm"))):
            if path.exists():
                path.unlink()
                removed.append(path)
    log.info("connector group %s reset to the beginning of %s; removed %s", group, topic,
             ", ".join(map(str, removed)) or "no records")
    return removed
