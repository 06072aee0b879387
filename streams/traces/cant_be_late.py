"""Can't Be Late JSON traces: ``{"metadata": {"gap_seconds": G}, "data": [...], "prices": [...]}``.

``data[i]`` is the number of spot instances available at tick ``i`` (1, or k of k, means
available; 0 means not). The Can't Be Late simulator reads the same files the other way round
(1 = preempted); these loaders keep the files' own meaning. Tick ``i`` starts at
``start + i * G``; the files carry no timestamps, so ``start`` is

* the ``start`` argument (Unix seconds) when given, else
* midnight UTC of the date in the folder name when it reads ``<cloud>-MM-DD-YYYY``
  (``aws-02-15-2023`` → 2023-02-15T00:00:00Z), else
* :data:`DEFAULT_START`, 2023-01-01T00:00:00Z.

The market comes from the file name ``<zone>_<device>.json[.gz]`` (``us-east-1a_v100_1.json``):
the cloud from the folder prefix (else ``aws``), the region from the zone, the instance type
from :data:`DEVICE_INSTANCE_TYPES` (an unknown device is used as the type name). Every part can
be overridden. ``prices`` (optional, one per tick) is the spot price in USD per instance-hour;
without it the spot price is :data:`DEFAULT_SPOT_SHARE` of the on-demand price throughout.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from solver.market import Market, MarketTicks
from streams.traces.errors import (
    MISSING,
    PathLike,
    TraceFormatError,
    count,
    json_type,
    number,
    read_json,
)
from streams.traces.prices import (
    ZONE_EXPECTED,
    UnknownInstanceTypeError,
    on_demand_price,
    region_of_zone,
)

DEFAULT_START = 1672531200.0
"""2023-01-01T00:00:00Z, the start when neither the argument nor the folder name gives one."""

DEFAULT_SPOT_SHARE = 0.30
"""Spot price as a share of on-demand when a file has no ``prices`` (AWS's usual floor)."""

DEVICE_INSTANCE_TYPES: Mapping[str, str] = {
    "v100_1": "p3.2xlarge",
    "v100_8": "p3.16xlarge",
    "k80_1": "p2.xlarge",
    "k80_8": "p2.8xlarge",
    "intel_64": "r5.16xlarge",
    "c3-88": "c3-highcpu-88",
}
"""Device part of the file name → instance type, as the trace collectors launched them."""

_KEYS = ("metadata", "data", "prices")
_FILE = re.compile(r"(?P<zone>[^_]+)_(?P<device>.+?)\.json(?:\.gz)?")
_FOLDER = re.compile(r"(?P<cloud>[a-z]+)-(?P<month>\d\d)-(?P<day>\d\d)-(?P<year>\d{4})")


def load_cant_be_late(
    path: PathLike,
    *,
    start: float | None = None,
    cloud: str | None = None,
    region: str | None = None,
    zone: str | None = None,
    instance_type: str | None = None,
    on_demand_prices: Mapping[str, float] | None = None,
    spot_share: float = DEFAULT_SPOT_SHARE,
) -> MarketTicks:
    """Ticks of one Can't Be Late trace file (conventions and defaults in the module doc)."""
    gap, available, prices = _read(path)
    folder = _FOLDER.fullmatch(Path(path).parent.name)
    name = _FILE.fullmatch(Path(path).name)
    if name is None and (zone is None or instance_type is None):
        raise TraceFormatError(
            path, None, "file name", Path(path).name,
            "'<zone>_<device>.json', or zone= and instance_type= arguments",
        )
    zone = zone or name["zone"]
    instance_type = instance_type or DEVICE_INSTANCE_TYPES.get(name["device"], name["device"])
    if start is None:
        start = _folder_start(path, folder) if folder else DEFAULT_START
    try:
        region = region or region_of_zone(zone)
    except ValueError:
        raise TraceFormatError(path, None, "zone", zone, ZONE_EXPECTED) from None
    try:
        on_demand = on_demand_price(instance_type, on_demand_prices)
    except UnknownInstanceTypeError as error:
        raise TraceFormatError(
            path, None, "instance type", instance_type,
            f"a type with a known on-demand price ({', '.join(error.known)}) or an "
            "on_demand_prices entry for it",
        ) from None
    market = Market(cloud or (folder["cloud"] if folder else "aws"), region, zone,
                    instance_type, on_demand)
    if prices is None:
        prices = np.full(len(available), spot_share * on_demand)
    times = float(start) + gap * np.arange(len(available))
    return MarketTicks(market, times, prices, available)


def _folder_start(path: PathLike, folder: re.Match[str]) -> float:
    try:
        day = datetime(int(folder["year"]), int(folder["month"]), int(folder["day"]), tzinfo=UTC)
    except ValueError:
        raise TraceFormatError(
            path, None, "folder name", folder[0], "'<cloud>-MM-DD-YYYY' with a valid date"
        ) from None
    return day.timestamp()


def _read(path: PathLike) -> tuple[float, np.ndarray, np.ndarray | None]:
    document = read_json(path)
    if not isinstance(document, dict):
        raise TraceFormatError(
            path, None, "top level", json_type(document),
            'an object {"metadata": {"gap_seconds": G}, "data": [...]}',
        )
    for key, value in document.items():
        if key not in _KEYS:
            raise TraceFormatError(path, None, key, json_type(value), f"only the keys {_KEYS}")
    metadata = document.get("metadata", MISSING)
    if not isinstance(metadata, dict):
        shown = metadata if metadata is MISSING else json_type(metadata)
        raise TraceFormatError(path, None, "metadata", shown, 'an object {"gap_seconds": G}')
    gap = number(metadata.get("gap_seconds", MISSING), path, "metadata", "gap_seconds",
                 strict=True)
    available = _counts(path, _array(path, document, "data"))
    if "prices" not in document:
        return gap, available, None
    prices = _prices(path, _array(path, document, "prices"))
    if len(prices) != len(available):
        raise TraceFormatError(
            path, "prices", "length", len(prices),
            f"{len(available)}, one price per value of 'data'",
        )
    return gap, available, prices


def _array(path: PathLike, document: dict[str, Any], key: str) -> list[Any]:
    value = document.get(key, MISSING)
    if not isinstance(value, list) or not value:
        shown = value if value is MISSING or value == [] else json_type(value)
        raise TraceFormatError(path, None, key, shown, "a non-empty array of numbers")
    return value


def _counts(path: PathLike, values: list[Any]) -> np.ndarray:
    if not all(type(v) is int and v >= 0 for v in values):
        values = [count(v, path, f"data[{i}]", "data") for i, v in enumerate(values)]
    return np.array(values, dtype=np.int64)


def _prices(path: PathLike, values: list[Any]) -> np.ndarray:
    if all(type(v) is int or type(v) is float for v in values):
        prices = np.array(values, dtype=float)
        if np.all(prices >= 0):
            return prices
    return np.array([number(v, path, f"prices[{i}]", "prices") for i, v in enumerate(values)])
