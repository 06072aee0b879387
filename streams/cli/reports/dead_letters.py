"""The dead letters an operator asks for: those of a source topic since a time, the newest
few, and a summary that counts them by source, error and reason."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from streams.contract import DeadLetter


def wanted(letter: DeadLetter, since: datetime | None, topic: str | None) -> bool:
    """Whether ``letter`` is at or after ``since`` and was set aside from ``topic`` (each
    when given)."""
    return ((since is None or letter.event_time >= since)
            and (topic is None or letter.source_topic == topic))


def newest(letters: Sequence[DeadLetter], limit: int) -> list[DeadLetter]:
    """The ``limit`` newest of ``letters`` (all of them for 0), oldest first."""
    ordered = sorted(letters, key=lambda letter: letter.event_time)
    return ordered[-limit:] if limit else ordered


@dataclass(frozen=True, slots=True)
class ReasonCount:
    """How many letters share a source topic, an error type and a reason, and when the first
    and the last were set aside."""

    source_topic: str
    error_type: str
    reason: str
    count: int
    first: datetime
    last: datetime


def by_reason(letters: Iterable[DeadLetter]) -> list[ReasonCount]:
    """The letters counted by source topic, error type and reason, most first."""
    groups: dict[tuple[str, str, str], list[DeadLetter]] = {}
    for letter in letters:
        groups.setdefault((letter.source_topic, letter.error_type, letter.reason),
                          []).append(letter)
    counts = [ReasonCount(*key, len(group), min(x.event_time for x in group),
                          max(x.event_time for x in group)) for key, group in groups.items()]
    return sorted(counts, key=lambda c: (-c.count, c.source_topic, c.reason))
