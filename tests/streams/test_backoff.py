"""Retries wait ``first`` seconds, doubling up to a cap; the caller's callback gives up or
logs; a stop cuts a wait short. No test here sleeps."""

from __future__ import annotations

import asyncio

import pytest

from streams.backoff import Backoff, stoppable_sleep, with_backoff


class Flaky:
    """Fails ``failures`` times with ``error``, then returns ``"done"``."""

    def __init__(self, failures: int, error: Exception | None = None) -> None:
        self.failures = failures
        self.error = error or ConnectionError("refused")
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return "done"


class Slept:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def test_waits_double_up_to_the_cap_and_the_callback_sees_every_failure():
    seen: list[tuple[str, int, float]] = []

    async def failed(error: ConnectionError, attempt: int, delay: float) -> None:
        seen.append((str(error), attempt, delay))

    slept = Slept()
    call = Flaky(failures=7)
    assert await with_backoff(call, Backoff(0.5, 10.0), ConnectionError, failed, slept) == "done"
    assert slept.waits == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert seen == [("refused", n, wait) for n, wait in enumerate(slept.waits, start=1)]
    assert call.calls == 8


async def test_the_callback_gives_up_by_raising_and_nothing_else_is_retried():
    async def at_most_three(error: ConnectionError, attempt: int, delay: float) -> None:
        if attempt == 3:
            raise TimeoutError(f"gave up after {attempt}") from error

    slept = Slept()
    with pytest.raises(TimeoutError, match="gave up after 3"):
        await with_backoff(Flaky(failures=9), Backoff(1.0, 60.0), ConnectionError,
                           at_most_three, slept)
    assert slept.waits == [1.0, 2.0]

    other = Flaky(failures=1, error=KeyError("bug"))
    with pytest.raises(KeyError):
        await with_backoff(other, Backoff(1.0, 60.0), ConnectionError, at_most_three, slept)
    assert other.calls == 1 and slept.waits == [1.0, 2.0]


@pytest.mark.parametrize(("backoff", "attempt", "wait"), [
    (Backoff(1.0, 60.0), 1, 1.0),
    (Backoff(1.0, 60.0), 6, 32.0),
    (Backoff(1.0, 60.0), 7, 60.0),
    (Backoff(0.5, 10.0), 5_000, 10.0),  # a day of retries does not overflow
    (Backoff(0.0, 30.0), 4, 0.0),
])
def test_the_wait_after_an_attempt(backoff, attempt, wait):
    assert backoff.delay(attempt) == wait


class Stopped(Exception):
    pass


async def test_a_stop_ends_the_wait_with_the_callers_exception():
    stop = asyncio.Event()
    sleep = stoppable_sleep(stop, Stopped)
    assert await sleep(0) is None
    stop.set()
    with pytest.raises(Stopped):
        await sleep(3600)
