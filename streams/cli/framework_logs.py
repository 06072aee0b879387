"""What a worker shows of its frameworks' logs (Faust, mode, aiokafka): their warnings and
errors and Faust's ``Worker ready``, not their startup banners, subscription tables and group
joins, nor the error a fresh broker's group coordinator answers before it is up (the client
retries it). ``--verbose`` shows them all."""

from __future__ import annotations

import logging

FRAMEWORKS = ("faust", "mode", "aiokafka")
READY = "Worker ready"
"""Faust's line once a worker's partitions are recovered: what scripts wait for."""


def _ready_or_worse(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING or record.getMessage().endswith(READY)


def _not_a_coordinator_starting(record: logging.LogRecord) -> bool:
    return not any(type(arg).__name__ == "GroupCoordinatorNotAvailableError"
                   for arg in record.args or ()) if isinstance(record.args, tuple) else True


def quiet_frameworks(level: str) -> None:
    """Leave the frameworks' lines below WARNING out, but for ``Worker ready`` at ``level``
    INFO or DEBUG."""
    quiet = max(logging.WARNING, logging.getLevelName(level))
    for name in FRAMEWORKS:
        logging.getLogger(name).setLevel(quiet)
    recovery = logging.getLogger("faust.tables.recovery")
    recovery.setLevel(level)
    recovery.addFilter(_ready_or_worse)
    logging.getLogger("aiokafka.consumer.group_coordinator").addFilter(
        _not_a_coordinator_starting)
