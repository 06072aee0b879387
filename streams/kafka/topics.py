"""Creating the pipeline's topics (:func:`streams.pipeline.declaration.topic_specs`) on the
broker, and bringing the configuration of existing ones up to date."""

from __future__ import annotations

import logging
from collections.abc import Collection

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from streams.kafka.connect import start_client
from streams.pipeline.declaration import TopicSpec, settings_topics
from streams.settings import Settings

log = logging.getLogger(__name__)

DYNAMIC_TOPIC_CONFIG = 1
"""The ``config_source`` of a setting made on the topic itself (not a broker default)."""


async def ensure_topics(settings: Settings, names: Collection[str] | None = None) -> None:
    """Create missing topics (only ``names``, when given); fail clearly when one exists with
    other partition counts; set the configuration the pipeline declares on existing ones
    (e.g. the retention of input topics created by an earlier version), saying so."""
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
            await _update_configs(admin, present)
    finally:
        await admin.close()


async def _update_configs(admin: AIOKafkaAdminClient, specs: list[TopicSpec]) -> None:
    """Set each topic's declared configuration where it differs, keeping its other settings."""
    responses = await admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, s.name) for s in specs])
    current = {resource[3]: {entry[0]: (entry[1], entry[3]) for entry in resource[4]}
               for response in responses for resource in response.resources}
    for spec in specs:
        have = current.get(spec.name, {})
        changed = {k: v for k, v in spec.config.items() if have.get(k, (None,))[0] != v}
        if not changed:
            continue
        own = {k: value for k, (value, source) in have.items()
               if source == DYNAMIC_TOPIC_CONFIG}
        responses = await admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, spec.name, {**own, **changed})])
        for response in responses:
            for error_code, message, *_ in response.resources:
                if error_code:
                    settings = ",".join(f"{k}={v}" for k, v in changed.items())
                    raise ValueError(
                        f"topic {spec.name!r}: setting {settings} failed ({message or error_code})"
                        "; set it with kafka-configs.sh --alter --entity-type topics "
                        f"--entity-name {spec.name} --add-config {settings}")
        log.warning("topic %s: set %s (was %s)", spec.name,
                    ", ".join(f"{k}={v}" for k, v in changed.items()),
                    ", ".join(f"{k}={have.get(k, ('default',))[0]}" for k in changed))
