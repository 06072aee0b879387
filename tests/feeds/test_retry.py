"""A feed's warnings of one kind are logged once per interval, the next one saying how many
were held back; a stop during a wait ends the retries."""

from __future__ import annotations

import asyncio
import logging

import pytest

from connectors.feeds.base import TransientFeedError
from connectors.feeds.retry import FeedStopped, RateLimitedLog, RetryPolicy, retrying


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_warning_of_a_kind_is_logged_once_per_interval(caplog):
    clock = Clock()
    warnings = RateLimitedLog(logging.getLogger("feed-retry-test"), interval=60.0, clock=clock)
    caplog.set_level(logging.WARNING)
    logged = [warnings.warning("fetch", f"fetch failed #{n}") for n in range(3)]
    clock.now = 60.0
    logged += [warnings.warning("fetch", "fetch failed #3"), warnings.warning("other", "x")]
    assert logged == [True, False, False, True, True]
    assert [r.getMessage() for r in caplog.records] == [
        "fetch failed #0", "fetch failed #3 (2 similar warnings held back)", "x"]


async def test_a_stop_while_waiting_to_retry_ends_the_retries():
    stop = asyncio.Event()
    calls = 0

    async def fetch() -> None:
        nonlocal calls
        calls += 1
        stop.set()
        raise TransientFeedError("throttled")

    with pytest.raises(FeedStopped):
        await retrying(fetch, RetryPolicy(attempts=5, backoff_seconds=3600.0,
                                          max_seconds=3600.0),
                       stop, RateLimitedLog(logging.getLogger("feed-retry-test")), "fetch")
    assert calls == 1
