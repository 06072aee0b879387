"""Messages into a stage, how it handled each out: the one code path of the Kafka worker (live
and while it rebuilds a stage from the log) and of the in-memory pipeline.

A message is decoded, checked to be of a type the stage takes and to carry its event's key, and
handled. Whatever fails on the way — bad bytes, a schema violation, a key that does not fit,
an event the stage rejects, or any exception the stage raises — rejects the message: it
becomes a dead letter with the reason, and the stage goes on with the next message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from solver.decision import SlotDecision
from streams.contract import (
    AvailabilityTick,
    DeadLetter,
    Envelope,
    EventError,
    MarketBoundary,
    PriceTick,
    key_mismatch,
)
from streams.pipeline.stage import AnyStage, Fault, Message, RejectedEvent, Rejection, Relayed


@dataclass(slots=True)
class Handling:
    """How a stage handled one message: what it made the stage do (nothing, for most market
    ticks: the empty tuples are then shared, not allocated per message)."""

    event: Envelope | None = None
    """The decoded message, when the stage took it."""
    outputs: Sequence[Envelope | Relayed] = ()
    rejections: Sequence[Rejection] = ()
    faults: Sequence[Fault] = ()
    decided: Sequence[SlotDecision] = ()


MARKET_TIMED = (PriceTick, AvailabilityTick, MarketBoundary)
"""The events whose time moves the market's event time on."""


@dataclass(slots=True)
class Batch:
    """What one stage made of a batch of messages of its topic: how many it took, the market
    event time they reached, and the messages that did something (wrote, rejected, faulted or
    decided). The others are counted, not kept: most of a worker's batch is market ticks that
    each did nothing, and keeping them until the batch was observed had the garbage collector
    scan them again and again."""

    stage: str
    topic: str
    taken: int = 0
    market_time: datetime | None = None
    """The latest event time of a tick or market boundary taken."""
    eventful: list[tuple[Message, Handling]] = field(default_factory=list)

    def add(self, message: Message, handling: Handling) -> None:
        """Count a message the stage took (of this batch's topic)."""
        self.taken += 1
        event = handling.event
        if isinstance(event, MARKET_TIMED) and (self.market_time is None
                                                or event.event_time > self.market_time):
            self.market_time = event.event_time
        if handling.outputs or handling.rejections or handling.faults or handling.decided:
            self.eventful.append((message, handling))


class Driver:
    """One stage, fed the messages of one partition in offset order."""

    def __init__(self, stage: AnyStage) -> None:
        self.stage = stage

    def process(self, message: Message) -> Handling:
        try:
            event = self._decode(message)
            results = self.stage.handle(event, message)
        except Exception as exc:
            return Handling(rejections=(Rejection(message, exc),))
        if not results:
            return Handling(event)
        outputs: list[Envelope | Relayed] = []
        rejections: list[Rejection] = []
        faults: list[Fault] = []
        decided: list[SlotDecision] = []
        for result in results:
            if isinstance(result, Rejection):
                rejections.append(result)
            elif isinstance(result, Fault):
                faults.append(result)
            elif isinstance(result, SlotDecision):
                decided.append(result)
            else:
                outputs.append(result)
        return Handling(event, outputs, rejections, faults, decided)

    def _decode(self, message: Message) -> Envelope:
        if message.value is None:
            raise EventError("the message has no value (a tombstone): expected an event")
        stage = self.stage
        event = stage.decode(message.value)
        accepts = stage.accepts
        if not isinstance(event, accepts):
            raise RejectedEvent(
                f"type={event.type!r}: expected one of "
                f"{', '.join(c.model_fields['type'].default for c in accepts)} on "
                f"{message.topic}")
        mismatch = key_mismatch(event, message.key)
        if mismatch is not None:
            raise RejectedEvent(mismatch)
        return event


def is_stage_error(error: Exception) -> bool:
    """Whether a stage raised ``error`` unexpectedly, rather than rejecting a bad message."""
    return not isinstance(error, EventError | RejectedEvent)


def dead_letter(rejection: Rejection) -> DeadLetter:
    """The dead letter of a rejected message, stamped with the message's timestamp."""
    message = rejection.message
    return DeadLetter.from_raw(
        message.value, rejection.error, source_topic=message.topic,
        event_time=message.timestamp if message.timestamp is not None else 0.0,
        partition=message.partition, offset=message.offset, key=message.key)
