"""Fixtures of the feed tests: the connector tests' local moto EC2, with seeded spot prices."""

from __future__ import annotations

import pytest

from tests.connectors.conftest import (  # noqa: F401 (fixtures)
    aws_credentials,
    moto_endpoint,
    moto_server,
)
from tests.feeds.spot_history import SeededHistory, seeded


@pytest.fixture
def history(moto_endpoint, monkeypatch) -> SeededHistory:  # noqa: F811 (fixture argument)
    """Seeded spot price history behind the moto server at ``moto_endpoint``."""
    with seeded(monkeypatch) as seeded_history:
        yield seeded_history
