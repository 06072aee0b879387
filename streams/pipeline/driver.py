"""Messages into a stage, how it handled each out: the one code path of the Kafka worker (live
and while it rebuilds a stage from the log) and of the in-memory pipeline.

A message is decoded, checked to be of a type the stage takes and to carry its event's key, and
handled. Whatever fails on the way — bad bytes, a schema violation, a key that does not fit,
an event the stage rejects, or any exception the stage raises — rejects the message: it
becomes a dead letter with the reason, and the stage goes on with the next message.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from solver.decision import SlotDecision
from streams.contract import DeadLetter, Envelope, EventError, key_mismatch, parse_event
from streams.pipeline.stage import AnyStage, Fault, Message, RejectedEvent, Rejection, Relayed


@dataclass
class Handling:
    """How a stage handled one message: what it made the stage do."""

    event: Envelope | None = None
    """The decoded message, when the stage took it."""
    outputs: list[Envelope | Relayed] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    decided: list[SlotDecision] = field(default_factory=list)


class Driver:
    """One stage, fed the messages of one partition in offset order."""

    def __init__(self, stage: AnyStage) -> None:
        self.stage = stage

    def process(self, message: Message) -> Handling:
        try:
            event = self._decode(message)
            results = self.stage.handle(event, message)
        except Exception as exc:
            return Handling(rejections=[Rejection(message, exc)])
        handling = Handling(event=event)
        for result in results:
            if isinstance(result, Rejection):
                handling.rejections.append(result)
            elif isinstance(result, Fault):
                handling.faults.append(result)
            elif isinstance(result, SlotDecision):
                handling.decided.append(result)
            else:
                handling.outputs.append(result)
        return handling

    def _decode(self, message: Message) -> Envelope:
        if message.value is None:
            raise EventError("the message has no value (a tombstone): expected an event")
        event = getattr(self.stage, "decode", parse_event)(message.value)
        accepts = self.stage.accepts
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
