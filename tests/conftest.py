"""Fixtures for every test."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from streams.runtime import RateLimit

pytest_plugins = ["tests.kafka_fixture"]


@pytest.fixture(autouse=True)
def _root_handlers_restored() -> Iterator[None]:
    """Commands run in a test configure the root logger (level, rate limits); each test starts
    from the configuration it had before."""
    root = logging.getLogger()
    level, filters = root.level, {h: list(h.filters) for h in root.handlers}
    yield
    root.setLevel(level)
    for handler in root.handlers:
        handler.filters[:] = filters.get(handler, [h for h in handler.filters
                                                   if not isinstance(h, RateLimit)])
