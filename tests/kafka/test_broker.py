"""The development broker: round trips, consumer groups and readiness errors."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from deploy.kafka.devkafka import (
    DevKafkaError,
    KafkaBroker,
    fetch_jars,
    free_port,
    kafka_home,
    port_is_free,
    wait_ready,
)
from tests.kafka_fixture import TopicFactory

pytestmark = pytest.mark.kafka


async def _wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.1)


async def test_keyed_messages_round_trip(
    kafka_bootstrap: str, fresh_topic_factory: TopicFactory
) -> None:
    topic = await fresh_topic_factory(partitions=3)
    sent = {f"job-{i}".encode(): f"event-{i}".encode() for i in range(100)}
    async with AIOKafkaProducer(bootstrap_servers=kafka_bootstrap) as producer:
        for key, value in sent.items():
            await producer.send(topic, value, key=key)
        await producer.flush()

    received: dict[bytes, bytes] = {}
    partitions_of: dict[bytes, set[int]] = {}
    async with AIOKafkaConsumer(
        topic, bootstrap_servers=kafka_bootstrap, auto_offset_reset="earliest"
    ) as consumer:
        async with asyncio.timeout(30):
            while len(received) < len(sent):
                for tp, records in (await consumer.getmany(timeout_ms=1000)).items():
                    for record in records:
                        assert record.key is not None and record.value is not None
                        received[record.key] = record.value
                        partitions_of.setdefault(record.key, set()).add(tp.partition)

    assert received == sent
    assert all(len(parts) == 1 for parts in partitions_of.values())
    assert set().union(*partitions_of.values()) == {0, 1, 2}


async def test_consumer_group_join_and_rebalance(
    kafka_bootstrap: str, fresh_topic_factory: TopicFactory, unique_name: Callable[[str], str]
) -> None:
    topic = await fresh_topic_factory(partitions=3)
    group = unique_name("g")
    everything = {TopicPartition(topic, p) for p in range(3)}
    settings = {
        "bootstrap_servers": kafka_bootstrap,
        "group_id": group,
        "auto_offset_reset": "earliest",
        "heartbeat_interval_ms": 300,
    }
    async with AIOKafkaProducer(bootstrap_servers=kafka_bootstrap) as producer:
        await producer.send_and_wait(topic, b"hello", key=b"k", partition=1)

    async with AIOKafkaConsumer(topic, **settings) as first:
        record = await asyncio.wait_for(first.getone(), 30)
        assert (record.partition, record.value) == (1, b"hello")
        assert first.assignment() == everything
        await first.commit()
        assert await first.committed(TopicPartition(topic, 1)) == record.offset + 1

        async with AIOKafkaConsumer(topic, **settings) as second:
            await _wait_for(
                lambda: (
                    bool(first.assignment())
                    and bool(second.assignment())
                    and first.assignment() | second.assignment() == everything
                    and not first.assignment() & second.assignment()
                )
            )


def test_readiness_fails_clearly_when_nothing_listens() -> None:
    bootstrap = f"127.0.0.1:{free_port()}"
    with pytest.raises(
        DevKafkaError, match=rf"no Kafka broker ready at {bootstrap} after 1 s: Connection refused"
    ):
        wait_ready(bootstrap, timeout=1.0)


def test_start_refuses_a_port_in_use(tmp_path_factory: pytest.TempPathFactory) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        broker = KafkaBroker(fetch_jars(kafka_home()), tmp_path_factory.mktemp("taken"), port)
        with pytest.raises(DevKafkaError, match=f"port {port} on 127.0.0.1 is already in use"):
            broker.start()


def test_failed_start_reports_the_broker_log(tmp_path_factory: pytest.TempPathFactory) -> None:
    broker = KafkaBroker(fetch_jars(kafka_home()), tmp_path_factory.mktemp("crash"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        broker.controller_port = taken.getsockname()[1]
        with pytest.raises(DevKafkaError, match=r"(?s)exited with code 1.*first error.*in use"):
            broker.start(timeout=60)
    assert broker.process is None


def _accepted_connection(port: int) -> socket.socket:
    """A connection the broker has accepted: it answered an ApiVersions (v0) request."""
    client = socket.create_connection(("127.0.0.1", port), timeout=30)
    header = struct.pack(">hhih", 18, 0, 1, 1) + b"t"  # api key, version, correlation, client id
    client.sendall(struct.pack(">i", len(header)) + header)
    assert len(client.recv(4)) == 4, "the broker did not answer ApiVersions"
    return client


def test_a_crashed_broker_restarts_on_its_port_at_once(tmp_path_factory: pytest.TempPathFactory
                                                       ) -> None:
    data = tmp_path_factory.mktemp("restart")
    broker = KafkaBroker(fetch_jars(kafka_home()), data)
    broker.start()
    port = broker.port
    client = _accepted_connection(port)
    try:
        assert broker.process is not None
        broker.process.kill()  # the broker's side closes first: it goes to TIME-WAIT
        broker.process.wait()
        while client.recv(4096):  # up to the broker's FIN
            pass
    finally:
        client.close()
    # a check without SO_REUSEADDR would refuse the port
    with socket.socket() as plain, pytest.raises(OSError):
        plain.bind(("127.0.0.1", port))
    assert port_is_free(port)
    again = KafkaBroker(fetch_jars(kafka_home()), data, port)
    try:
        again.start(timeout=90)
        wait_ready(again.bootstrap, timeout=5)
    finally:
        again.stop()
