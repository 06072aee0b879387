"""Bounded retries with exponential backoff (:mod:`streams.backoff`), and warnings that do
not flood the log (:mod:`streams.rate_limit`)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from connectors.feeds.base import FeedError, TransientFeedError
from streams.backoff import Backoff, stoppable_sleep, with_backoff
from streams.rate_limit import RateLimiter

T = TypeVar("T")


class FeedStopped(Exception):
    """The feed was asked to stop while it waited to retry."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """At most ``attempts`` tries; waits of ``backoff_seconds`` doubling up to ``max_seconds``."""

    attempts: int = 5
    backoff_seconds: float = 1.0
    max_seconds: float = 60.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"--max-attempts {self.attempts}: expected at least 1")
        if not 0 <= self.backoff_seconds <= self.max_seconds:
            raise ValueError(f"backoff={self.backoff_seconds!r} s: expected between 0 and "
                             f"{self.max_seconds!r} s")

    @property
    def backoff(self) -> Backoff:
        return Backoff(self.backoff_seconds, self.max_seconds)


class RateLimitedLog:
    """Logs a warning of one kind at most once per ``interval`` seconds, saying how many of
    that kind it held back meanwhile."""

    def __init__(self, logger: logging.Logger, interval: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self._limit = RateLimiter(interval, clock)

    def warning(self, kind: str, message: str) -> bool:
        """Log ``message`` unless a ``kind`` warning was logged less than ``interval`` ago;
        returns whether it was logged."""
        passed = self._limit.admit(kind)
        if passed is None:
            return False
        suffix = f" ({passed.held} similar warnings held back)" if passed.held else ""
        self.logger.warning("%s%s", message, suffix)
        return True


async def retrying(call: Callable[[], Awaitable[T]], policy: RetryPolicy, stop: asyncio.Event,
                   warnings: RateLimitedLog, what: str,
                   failed: Callable[[], None] | None = None) -> T:
    """``call()``, retried after :class:`TransientFeedError` with backoff (``failed`` is
    called after each failed attempt); a :class:`FeedError` saying how many attempts failed
    once they are used up. Raises :class:`FeedStopped` when ``stop`` is set during a wait."""

    async def give_up_or_warn(exc: TransientFeedError, attempt: int, delay: float) -> None:
        if failed is not None:
            failed()
        if attempt >= policy.attempts:
            raise FeedError(f"{what} failed {attempt} times, giving up; last: {exc}") from exc
        warnings.warning(what, f"{what} attempt {attempt} of {policy.attempts} failed "
                               f"({exc}); retrying in {delay:g} s")

    return await with_backoff(call, policy.backoff, TransientFeedError, give_up_or_warn,
                              stoppable_sleep(stop, FeedStopped))
