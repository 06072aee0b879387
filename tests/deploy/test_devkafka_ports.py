"""The development broker's ports: a restarted broker's controller never takes its client port."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.kafka import devkafka


class _Handout:
    """Stands in for ``socket.socket``: each bind to port 0 gets the next port of a script."""

    def __init__(self, ports: Iterator[int]) -> None:
        self.ports = ports
        self.port = 0

    def __call__(self) -> _Handout:
        return self

    def __enter__(self) -> _Handout:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def bind(self, address: tuple[str, int]) -> None:
        self.port = next(self.ports)

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)


def test_the_controller_port_skips_a_client_port_the_system_hands_out_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A broker restarted on the port its crashed predecessor used: that port is free, so
    # the system may offer it first for the controller listener.
    monkeypatch.setattr(devkafka.socket, "socket", _Handout(iter([34451, 34452])))
    broker = devkafka.KafkaBroker(tmp_path, tmp_path, port=34451)
    assert (broker.port, broker.controller_port) == (34451, 34452)
