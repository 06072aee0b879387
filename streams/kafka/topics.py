"""The topics the pipeline uses, with the partition counts and retention it relies on."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from streams.kafka.connect import start_client
from streams.settings import Settings

FOREVER = "-1"
WEEK_MS = str(7 * 24 * 3600 * 1000)


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int
    config: dict[str, str] = field(default_factory=dict)


def topic_specs(settings: Settings) -> list[TopicSpec]:
    """Input logs are kept forever: a restarted stage rebuilds its state from them."""
    t = settings.topics
    return [
        TopicSpec(t.market_ticks, settings.market_partitions, {"retention.ms": FOREVER}),
        TopicSpec(t.job_events, settings.job_partitions, {"retention.ms": FOREVER}),
        TopicSpec(t.market_boundaries, 1, {"retention.ms": FOREVER}),
        TopicSpec(t.decisions, settings.job_partitions, {"retention.ms": WEEK_MS}),
        TopicSpec(t.forecasts, settings.market_partitions, {"cleanup.policy": "compact"}),
        TopicSpec(t.dead_letters, 1, {"retention.ms": str(4 * int(WEEK_MS))}),
    ]


async def ensure_topics(settings: Settings, names: Collection[str] | None = None) -> None:
    """Create missing topics (only ``names``, when given); fail clearly when one exists with
    other partition counts."""
    admin = await start_client(lambda: AIOKafkaAdminClient(**settings.kafka_options()),
                               settings, f"creating topics on {settings.bootstrap_servers}")
    try:
        specs = [s for s in topic_specs(settings) if names is None or s.name in names]
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
