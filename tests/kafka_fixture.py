"""Kafka fixtures: one broker per test run, fresh uniquely named topics per test.

``KAFKA_BOOTSTRAP_SERVERS`` points the tests at a running broker; without it a
single-node broker is started from the cached jars (see ``deploy/kafka/devkafka.py``) when
the first test that needs it runs, and the parallel workers of a run (pytest-xdist) share it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from deploy.kafka.devkafka import KafkaBroker, fetch_jars, kafka_home

TopicFactory = Callable[..., Awaitable[str]]


@pytest.fixture(scope="session")
def kafka_bootstrap(request: pytest.FixtureRequest,
                    tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Bootstrap address (``host:port``) of the run's Kafka broker."""
    external = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if external:
        yield external
        return
    workers = getattr(request.config, "workerinput", None)  # set in an xdist worker
    if workers is None:
        directory = tmp_path_factory.mktemp("kafka")
    else:  # a folder of this run's, beside the workers' own
        directory = tmp_path_factory.getbasetemp().parent / f"kafka-{workers['testrunuid']}"
    with SharedBroker(directory) as bootstrap:
        yield bootstrap


class SharedBroker:
    """One broker for the processes of a test run that use ``directory``.

    Under a lock on ``directory/lock``, ``broker.json`` names the broker's address and the
    process that started it, and each process using it leaves a file named after its pid in
    ``users/``. The process that started the broker (its parent: the broker dies with it)
    stops it once no live process uses it; one that needs a broker after that starts another.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.users = directory / "users"
        self.state = directory / "broker.json"
        self.broker: KafkaBroker | None = None
        self.users.mkdir(parents=True, exist_ok=True)

    def __enter__(self) -> str:
        with self._locked():
            state = json.loads(self.state.read_text()) if self.state.exists() else None
            if state is None or not _alive(state["pid"]):
                self.broker = KafkaBroker(fetch_jars(kafka_home()),
                                          self.directory / f"broker-{os.getpid()}")
                self.broker.start()
                state = {"bootstrap": self.broker.bootstrap, "pid": os.getpid()}
                self.state.write_text(json.dumps(state))
            (self.users / str(os.getpid())).touch()
        return state["bootstrap"]

    def __exit__(self, *exc_info: object) -> None:
        with self._locked():
            (self.users / str(os.getpid())).unlink(missing_ok=True)
        if self.broker is None:
            return
        while True:
            with self._locked():
                if not any(_alive(int(user.name)) for user in self.users.iterdir()):
                    self.state.unlink(missing_ok=True)
                    break
            time.sleep(1.0)
        self.broker.stop()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.directory / "lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


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
