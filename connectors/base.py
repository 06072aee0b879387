"""The connector interface: apply a provisioning decision, say what happened, close.

A decision is the desired state of one job for one slot: ``spot`` spot and ``on_demand``
on-demand instances of the market's instance type in that market, and nothing else. A
connector makes it so (or records it, or simulates it) and answers an :class:`Applied`. It
must be idempotent: applying the same decision again changes nothing further.

Errors are sorted into the kinds the runtime acts on: :class:`TransientError` (retried with
backoff, e.g. throttling or a lost connection), :class:`PermanentError` (dead-lettered at
once, e.g. a market the connector cannot serve) and :class:`FatalError` (no decision can get
past it, e.g. rejected credentials: the worker stops without committing, so the decision is
applied again after a restart). Any other exception is a fault with this one decision: it is
dead-lettered and the worker goes on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from streams.contract import AvailabilityTick, JobFinished, JobProgress, ProvisioningDecision

Feedback = AvailabilityTick | JobProgress | JobFinished
"""An event a connector reports back: availability on the market-ticks topic, progress and
completion on the job-events topic."""


class TransientError(Exception):
    """A failure that may pass: the runtime retries the decision with backoff."""


class PermanentError(Exception):
    """A failure that retrying cannot fix: the runtime dead-letters the decision."""


class FatalError(Exception):
    """A failure no decision can get past (credentials, the account): the worker stops."""


@dataclass(frozen=True, slots=True)
class Applied:
    """What applying one decision did.

    ``refused`` counts spot instances asked for and not obtained; ``details`` says why, one
    line per incident. ``events`` are observations to publish (availability ticks on the
    market-ticks topic, job progress on the job-events topic) before the decision is recorded.
    """

    launched: int = 0
    terminated: int = 0
    refused: int = 0
    preempted: int = 0
    details: tuple[str, ...] = ()
    events: tuple[Feedback, ...] = ()


class Connector(Protocol):
    """Something that turns provisioning decisions into actions."""

    name: str

    async def apply(self, decision: ProvisioningDecision) -> Applied:
        """Make the decision's desired state so; raise a Transient- or PermanentError."""
        ...

    async def close(self) -> None:
        """Release clients, files and background tasks."""
        ...
