import logging

import pytest

from streams.runtime import RateLimit

pytest_plugins = ["tests.kafka_fixture"]


@pytest.fixture(autouse=True)
def _no_rate_limit_left_on_the_log_handlers():
    """A command run in-process puts a :class:`RateLimit` on the root handlers, pytest's log
    capture included; it is taken off again so later tests see every record."""
    yield
    for handler in logging.getLogger().handlers:
        for found in [f for f in handler.filters if isinstance(f, RateLimit)]:
            handler.removeFilter(found)
