"""The rate limiter lets the first event of a kind through, holds back the others for the
interval and says how many it held back when the next one goes through."""

from __future__ import annotations

from streams.rate_limit import LetThrough, RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_one_event_per_kind_per_interval_with_the_count_held_back():
    clock = Clock()
    limit = RateLimiter(interval=30.0, clock=clock)
    assert limit.admit("outage") == LetThrough(0, 0.0)
    clock.now = 29.9
    assert limit.admit("outage") is None and limit.admit("outage") is None
    assert limit.admit("other") == LetThrough(0, 0.0)
    clock.now = 30.0
    assert limit.admit("outage") == LetThrough(2, 30.0)
    clock.now = 100.0
    assert limit.admit("outage") == LetThrough(0, 70.0)


def test_the_kind_let_through_longest_ago_is_forgotten_beyond_the_most_kinds():
    clock = Clock()
    limit = RateLimiter(interval=30.0, clock=clock, max_kinds=2)
    assert all(limit.admit(kind) for kind in ("a", "b", "c"))
    assert limit.admit("a") == LetThrough(0, 0.0)  # forgotten: let through again at once
    assert limit.admit("c") is None
