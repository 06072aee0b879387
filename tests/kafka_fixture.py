"""Kafka fixtures: one broker per test session, fresh uniquely named topics per test.

``KAFKA_BOOTSTRAP_SERVERS`` points the tests at a running broker; without it a
single-node broker is started from the cached jars (see ``deploy/kafka/devkafka.py``).
"""

from __future__ import annotations

import asyncio
import os
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from deploy.kafka.devkafka import KafkaBroker, fetch_jars, kafka_home

TopicFactory = Callable[..., Awaitable[str]]


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Bootstrap address (``host:port``) of the session's Kafka broker."""
    external = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if external:
        yield external
        return
    broker = KafkaBroker(fetch_jars(kafka_home()), tmp_path_factory.mktemp("kafka"))
    with broker:
        yield broker.bootstrap


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """Make names unique to this test run, e.g. for topics and consumer groups."""
    test = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:80]

    def make(prefix: str = "t") -> str:
        return f"{prefix}-{test}-{uuid.uuid4().hex[:8]}"

    return make


@pytest.fixture
async def fresh_topic_factory(
    kafka_bootstrap: str, unique_name: Callable[[str], str]
) -> AsyncIterator[TopicFactory]:
    """Create uniquely named topics, ready for use, and delete them after the test.

    ``await fresh_topic_factory(partitions=3)`` returns the new topic's name.
    """
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    created: list[str] = []

    async def create(partitions: int = 1, prefix: str = "t") -> str:
        name = unique_name(prefix)
        response = await admin.create_topics([NewTopic(name, partitions, 1)])
        for error in response.to_object()["topic_errors"]:
            if error["error_code"]:
                raise RuntimeError(f"creating topic {name} failed: {error}")
        created.append(name)
        for _ in range(100):  # until the broker's metadata shows every partition
            (topic,) = await admin.describe_topics([name])
            if not topic["error_code"] and len(topic["partitions"]) == partitions:
                return name
            await asyncio.sleep(0.1)
        raise RuntimeError(f"topic {name} did not appear in the metadata")

    try:
        yield create
    finally:
        try:
            if created:
                await admin.delete_topics(created)
        finally:
            await admin.close()
