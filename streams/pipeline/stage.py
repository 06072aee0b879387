"""What pipeline stages take and give besides events: the message an event came in, rejections
of messages (the dead letters to write), faults (errors that reject no message) and the
engine's slot decisions (for the metrics).

A stage's ``handle(event, message)`` returns events to publish (or :class:`Relayed` ones as
they came in), :class:`Rejection` s — of the message in hand or of an earlier one the stage had
kept (a job event waiting for its epoch, a market tick on a clock that lost) — :class:`Fault` s
and :class:`~solver.decision.SlotDecision` s. Anything it raises rejects the message in hand
(:mod:`streams.pipeline.driver`). A stage reads its messages itself (``decode(value)``):
:func:`~streams.contract.parse_event`, or less of what it only relays, or the event a stage of
the same runner encoded (:mod:`streams.pipeline.written`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypeVar

from solver.decision import SlotDecision
from streams.contract import Envelope, dump_event


class RejectedEvent(ValueError):
    """A well-formed event the pipeline cannot accept; its message is the dead-letter reason."""


class Message(NamedTuple):
    """One message of a topic as it was consumed (``value`` ``None``: a tombstone;
    ``timestamp`` in Unix seconds). A named tuple: one is made for every message, and a frozen
    dataclass takes several times as long to make."""

    topic: str
    value: bytes | None
    key: bytes | None = None
    partition: int | None = None
    offset: int | None = None
    timestamp: float | None = None


@dataclass(frozen=True, slots=True)
class Rejection:
    """``message`` cannot be processed because of ``error``: it goes to the dead letters."""

    message: Message
    error: Exception


@dataclass(frozen=True, slots=True)
class Fault:
    """A stage failed at something other than one message (e.g. a forecaster raised and was
    restarted); counted and logged, nothing is dead-lettered."""

    stage: str
    error: Exception


@dataclass(frozen=True, slots=True)
class Relayed:
    """An event a stage passes on as the bytes it came in: written verbatim, so the stage
    reads no more of it than it needs (``event``) and does not encode it again."""

    event: Envelope
    value: bytes


def encoded(output: Envelope | Relayed) -> bytes:
    """The bytes an output is written as."""
    return output.value if isinstance(output, Relayed) else dump_event(output)


StageOutput = Envelope | Relayed | Rejection | Fault | SlotDecision


E = TypeVar("E", bound=Envelope)


class Stage(Protocol[E]):
    """A pipeline stage: the events it takes (``E``), how it reads a message's value, and what
    it makes of each event."""

    name: str

    @property
    def accepts(self) -> tuple[type[E], ...]: ...

    def decode(self, raw: bytes) -> Envelope:
        """The event of a message's value; raises :class:`~streams.contract.EventError` saying
        what is wrong with it."""
        ...

    def handle(self, event: E, message: Message | None = None) -> list[StageOutput]: ...


AnyStage = Stage[Any]
"""A stage of whichever events: the driver hands it only those it accepts."""


def rejection(message: Message | None, error: Exception) -> list[Rejection]:
    """The rejection of ``message``, or none when the stage was called without one."""
    return [] if message is None else [Rejection(message, error)]


def epoch_index(boundary: float, slot_seconds: float) -> int:
    """The epoch index of the slot starting at ``boundary``: whole slots since Unix time 0."""
    return round(boundary / slot_seconds)


def first_boundary(time: float, slot_seconds: float) -> float:
    """The first slot boundary at or after ``time``: the epoch at which an event takes effect."""
    return math.ceil(time / slot_seconds) * slot_seconds
