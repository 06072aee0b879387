"""Creating the pipeline's topics (:func:`streams.pipeline.declaration.topic_specs`) on the
broker."""

from __future__ import annotations

from collections.abc import Collection

from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from streams.kafka.connect import start_client
from streams.pipeline.declaration import settings_topics
from streams.settings import Settings


async def ensure_topics(settings: Settings, names: Collection[str] | None = None) -> None:
    """Create missing topics (only ``names``, when given); fail clearly when one exists with
    other partition counts."""
    admin = await start_client(lambda: AIOKafkaAdminClient(**settings.kafka_options()),
                               settings, f"creating topics on {settings.bootstrap_servers}")
    try:
        specs = [s for s in settings_topics(settings) if names is None or s.name in names]
        existing = set(await admin.list_topics())
        missing = [s for s in specs if s.name not in existing]
        if missing:
            await admin.create_topics([
                NewTopic(s.name, s.partitions, 1, topic_configs=s.config) for s in missing
            ])
        present = [s for s in specs if s.name in existing]
        if present:
            described = await admin.describe_topics([s.name for s in present])
            counts = {d["topic"]: len(d["partitions"]) for d in described}
            for spec in present:
                if counts.get(spec.name) != spec.partitions:
                    raise ValueError(
                        f"topic {spec.name!r} has {counts.get(spec.name)} partitions: expected "
                        f"{spec.partitions} (set the partition settings to match, or use new "
                        "topic names)"
                    )
    finally:
        await admin.close()
