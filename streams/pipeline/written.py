"""The events this process wrote to the topics its own stages read, by the bytes they were
written as: a stage that reads back what a stage of the same process wrote (a forecast, a
boundary report, an epoch marker) takes the event it was encoded from instead of decoding
it again.

Decoding an event's bytes gives back an event equal to the one they were encoded from,
field by field and type by type (:func:`~streams.contract.dump_event` writes every field,
and JSON numbers round-trip), so reading from here or decoding gives the same event: a
message some other process wrote, or one forgotten since, is simply decoded. Only the
events a stage encoded are kept, never bytes a stage relays as they came in. The newest
:data:`MAX_WRITTEN_EVENTS` are kept.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from streams.contract import Envelope

K = TypeVar("K")
V = TypeVar("V")

MAX_WRITTEN_EVENTS = 4096
"""Events kept: an epoch's forecasts and boundary reports of 1,000 markets, with room for the
next epoch's."""


class Newest(Generic[K, V]):
    """The values put last, by key: the newest ``capacity``."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._kept: dict[K, V] = {}

    def put(self, key: K, value: V) -> None:
        kept = self._kept
        kept.pop(key, None)
        kept[key] = value
        if len(kept) > self.capacity:
            del kept[next(iter(kept))]

    def get(self, key: K) -> V | None:
        """The value put last under ``key``, if it is still kept."""
        return self._kept.get(key)

    def __len__(self) -> int:
        return len(self._kept)


WRITTEN: Newest[bytes, Envelope] = Newest(MAX_WRITTEN_EVENTS)
"""The events the stages of this process wrote to topics stages read, by the bytes they were
written as."""
