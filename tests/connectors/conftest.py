"""Fixtures of the connector tests: fresh topics on the session broker, and a local moto EC2."""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Iterator

import pytest

from streams.settings import Settings, Topics

AWS_TEST_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@pytest.fixture
async def kafka_settings(kafka_bootstrap, fresh_topic_factory) -> Settings:
    """Settings whose decisions, job-events, market-ticks and dead-letters topics are new."""
    names = {name: await fresh_topic_factory(partitions=1, prefix=name)
             for name in ("decisions", "job_events", "market_ticks", "dead_letters")}
    return Settings(bootstrap_servers=kafka_bootstrap, topics=Topics(**names))


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """The moto server's dummy credentials in the environment, for a test that needs no
    server (a session's moto server leaves them there too, but may not have started yet)."""
    for name, value in AWS_TEST_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """Endpoint URL of a moto server on loopback, with dummy credentials in the environment."""
    from moto.server import ThreadedMotoServer

    saved = {name: os.environ.get(name) for name in AWS_TEST_ENV}
    os.environ.update(AWS_TEST_ENV)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture
def moto_endpoint(moto_server: str) -> str:
    """The moto server, emptied for this test."""
    request = urllib.request.Request(f"{moto_server}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10):
        pass
    return moto_server
