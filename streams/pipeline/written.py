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

from streams.contract import Envelope

MAX_WRITTEN_EVENTS = 4096
"""Events kept: an epoch's forecasts and boundary reports of 1,000 markets, with room for the
next epoch's."""


class WrittenEvents:
    """The newest ``capacity`` events written, by their bytes."""

    def __init__(self, capacity: int = MAX_WRITTEN_EVENTS) -> None:
        self.capacity = capacity
        self._events: dict[bytes, Envelope] = {}

    def remember(self, value: bytes, event: Envelope) -> None:
        """``value`` are the bytes ``event`` was encoded as."""
        events = self._events
        events.pop(value, None)
        events[value] = event
        if len(events) > self.capacity:
            del events[next(iter(events))]

    def read(self, value: bytes) -> Envelope | None:
        """The event written as ``value``, if it is still kept."""
        return self._events.get(value)

    def __len__(self) -> int:
        return len(self._events)


WRITTEN = WrittenEvents()
"""The events the stages of this process wrote to topics stages read."""
