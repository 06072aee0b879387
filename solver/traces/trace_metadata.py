"""The ``metadata`` block of Can't Be Late and SkyNomad JSON traces.

Can't Be Late's published files carry ``{"gap_seconds": G}`` only. SkyNomad's converters
(``full.json`` and window files in a per-zone folder ``<zone>_<device>/``) add ``start_time``,
often ``zone``, and a ``price_info`` block with the on-demand and spot price and sometimes the
zone, instance type (or GCP machine type) and device. Their ``data`` marks preempted ticks
(1 = preempted), the opposite of Can't Be Late's files, so a file whose metadata has a
``price_info`` block counts preemptions. Other keys (``source_file``, ``note``...) are ignored.

Each field may come from several keys (below, in order); when two are present they must agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from solver.traces.errors import MISSING, PathLike, TraceFormatError, json_type, number

TEXT_KEYS: dict[str, tuple[tuple[str, str], ...]] = {
    "zone": (("metadata", "zone"), ("price_info", "zone")),
    "region": (("metadata", "region"), ("price_info", "region")),
    "cloud": (("metadata", "cloud"),),
    "instance_type": (("metadata", "instance_type"), ("metadata", "machine_type"),
                      ("price_info", "instance_type"), ("price_info", "machine_type")),
    "device": (("metadata", "device"), ("price_info", "device")),
}
"""Text fields and the (block, key) pairs that may give them."""

PRICE_KEYS: dict[str, tuple[tuple[str, str], ...]] = {
    "on_demand": (("metadata", "on_demand_price"), ("price_info", "on_demand_price"),
                  ("price_info", "ondemand_price"), ("price_info", "onDemandPrice")),
    "spot_price": (("price_info", "price"),),
}
"""USD per instance-hour fields and the (block, key) pairs that may give them."""

START_EXPECTED = "Unix seconds or an ISO-8601 time (UTC when it carries no offset)"


@dataclass(frozen=True, slots=True)
class TraceMetadata:
    """What a trace file's metadata says; ``None`` where it says nothing."""

    gap_seconds: float
    start: float | None = None
    zone: str | None = None
    region: str | None = None
    cloud: str | None = None
    instance_type: str | None = None
    device: str | None = None
    on_demand: float | None = None
    spot_price: float | None = None
    counts_preemptions: bool = False


def read_metadata(path: PathLike, metadata: Any) -> TraceMetadata:
    """Check and read a ``metadata`` object (errors name the key, the value and the rule)."""
    if not isinstance(metadata, dict):
        shown = metadata if metadata is MISSING else json_type(metadata)
        raise TraceFormatError(path, None, "metadata", shown, 'an object {"gap_seconds": G}')
    blocks = {"metadata": metadata}
    price_info = metadata.get("price_info", MISSING)
    if price_info is not MISSING:
        if not isinstance(price_info, dict):
            raise TraceFormatError(path, "metadata", "price_info", json_type(price_info),
                                   "an object")
        blocks["price_info"] = price_info
    gap = number(metadata.get("gap_seconds", MISSING), path, "metadata", "gap_seconds",
                 strict=True)
    texts = {name: _agreed(path, blocks, keys, _text) for name, keys in TEXT_KEYS.items()}
    prices = {name: _agreed(path, blocks, keys, _price) for name, keys in PRICE_KEYS.items()}
    start = metadata.get("start_time", MISSING)
    return TraceMetadata(
        gap_seconds=gap,
        start=None if start is MISSING else _start(path, start),
        counts_preemptions="price_info" in blocks,
        **texts, **prices,
    )


def _agreed(path: PathLike, blocks: dict[str, dict[str, Any]],
            keys: tuple[tuple[str, str], ...], check: Any) -> Any:
    """The value the first present key gives, checked; every other present key must agree."""
    found: tuple[str, str, Any] | None = None
    for block, key in keys:
        if block in blocks and key in blocks[block]:
            where = "metadata" if block == "metadata" else "metadata.price_info"
            value = check(path, where, key, blocks[block][key])
            if found is None:
                found = (where, key, value)
            elif value != found[2]:
                raise TraceFormatError(
                    path, where, key, blocks[block][key],
                    f"{found[2]!r} as {found[0]}.{found[1]} gives (they name the same thing)",
                )
    return None if found is None else found[2]


def _text(path: PathLike, where: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TraceFormatError(path, where, key, value, "a non-empty string")
    return value.strip()


def _price(path: PathLike, where: str, key: str, value: Any) -> float:
    return number(value, path, where, key, strict=True)


def _start(path: PathLike, value: Any) -> float:
    """Unix seconds from a number or ISO-8601 text; text without an offset is UTC, as the
    SkyNomad converters write their pandas timestamps."""
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            moment = None
        if moment is not None:
            return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    elif (isinstance(value, int | float) and not isinstance(value, bool)
          and math.isfinite(value)):
        return float(value)
    raise TraceFormatError(path, "metadata", "start_time", value, START_EXPECTED)
