"""Retries with exponential backoff, written once for the broker clients, the connector
worker and the price feeds.

:func:`with_backoff` counts the attempts, works out each wait (:class:`Backoff`) and sleeps it;
what to retry, when to give up and what to log stay with the caller, whose ``failed`` callback
raises to end the retries. The sleep is a parameter: :func:`stoppable_sleep` ends a wait as
soon as a stop is asked for, and tests pass one that does not sleep at all.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")
E = TypeVar("E", bound=Exception)

Sleep = Callable[[float], Awaitable[None]]
"""Waits the seconds it is given."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """Waits of ``first_seconds`` after the first failed attempt, doubling after each further
    one up to ``max_seconds``."""

    first_seconds: float
    max_seconds: float

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based)."""
        wait = self.first_seconds
        for _ in range(attempt - 1):
            if wait >= self.max_seconds:
                break
            wait *= 2
        return min(wait, self.max_seconds)


async def with_backoff(call: Callable[[], Awaitable[T]], backoff: Backoff,
                       retryable: type[E] | tuple[type[E], ...],
                       failed: Callable[[E, int, float], Awaitable[None]],
                       sleep: Sleep = asyncio.sleep) -> T:
    """``await call()`` until it returns. After a ``retryable`` error, ``failed(error,
    attempt, delay)`` raises to give up or returns to retry after ``sleep(delay)``; any other
    exception propagates at once."""
    attempt = 0
    while True:
        attempt += 1
        try:
            return await call()
        except retryable as exc:
            error = exc
        delay = backoff.delay(attempt)
        await failed(error, attempt, delay)
        await sleep(delay)


def stoppable_sleep(stop: asyncio.Event, stopped: Callable[[], BaseException]) -> Sleep:
    """A sleep that raises ``stopped()`` as soon as ``stop`` is set."""

    async def sleep(seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)
            raise stopped()

    return sleep
