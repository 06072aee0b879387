"""Messages of schema version 1, read as version 2.

Version 2 changed only provisioning decisions: the free-text ``reason`` of a release became
``action`` and ``release_cause``, and the open ``forecast`` map became ``market_view`` with
declared keys (``spot_available_now`` a count). Every other event reads unchanged, and a
version-1 forecast has no ``outlook``. A message keeps the idempotency key it was written with.
"""

from __future__ import annotations

from typing import Any

RELEASES = {
    "released: finished": "finished",
    "released: cancelled": "cancelled",
    "released: deadline passed": "deadline_missed",
}
"""Version 1's release reasons and their causes (``released: failed: <why>`` is ``failed``)."""
FAILED = "released: failed"
VIEW_KEYS = ("spot_price_now", "spot_available_now", "on_demand_price")
"""The keys of version 1's ``forecast`` map that ``market_view`` keeps."""


class UpgradeError(ValueError):
    """A version-1 message that has no version-2 reading; the message says why."""


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """A version-1 event (decoded JSON) as version 2."""
    data = {**data, "schema_version": 2}
    if data.get("type") == "provisioning_decision":
        _decision(data)
    return data


def _decision(data: dict[str, Any]) -> None:
    reason = data.get("reason", "")
    if isinstance(reason, str) and reason.startswith("released"):
        cause = "failed" if reason.startswith(FAILED) else RELEASES.get(reason)
        if cause is None:
            raise UpgradeError(
                f"reason={reason!r}: expected a version-1 release reason ("
                f"{', '.join(RELEASES)} or '{FAILED}: ...')")
        data.update(action="release", release_cause=cause)
    else:
        count = [data.get(field, 0) for field in ("spot", "on_demand")]
        running = any(isinstance(n, int | float) and not isinstance(n, bool) and n > 0
                      for n in count)
        data["action"] = "run" if running else "idle"
    seen = data.pop("forecast", None)
    if isinstance(seen, dict):
        view = {key: seen[key] for key in VIEW_KEYS if key in seen}
        available = view.get("spot_available_now")
        if isinstance(available, float) and available.is_integer():
            view["spot_available_now"] = int(available)
        data["market_view"] = view
