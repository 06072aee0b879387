"""Times as people read them: ISO-8601 in UTC, for messages and reports."""

from __future__ import annotations

import math
from datetime import UTC, datetime


def iso_utc(seconds: float) -> str:
    """``2025-01-06T03:00:00Z`` for Unix seconds (a fraction of a second kept when present);
    a value no calendar holds (NaN, infinities, beyond year 9999) as its ``repr``."""
    if not math.isfinite(seconds):
        return repr(seconds)
    try:
        moment = datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return repr(seconds)
    return moment.isoformat().replace("+00:00", "Z")
