"""Which slots of a grid a job may run in, under the simulator's activity rule."""

from __future__ import annotations

import math

from solver.job import Job


def active_slots(job: Job, origin: float, slot_seconds: float, n_slots: int) -> range:
    """Slots whose start is at or after the job's release and before its hard deadline
    (clipped to ``0 .. n_slots - 1``), computed with the simulator's own arithmetic."""

    def start(t: int) -> float:
        return origin + t * slot_seconds

    first = max(0, math.ceil((job.release - origin) / slot_seconds))
    while first > 0 and start(first - 1) >= job.release:
        first -= 1
    while start(first) < job.release:
        first += 1
    end = max(first, math.ceil((job.hard_deadline - origin) / slot_seconds))
    while end > first and start(end - 1) >= job.hard_deadline:
        end -= 1
    while start(end) < job.hard_deadline:
        end += 1
    return range(first, min(end, n_slots))
