"""Can't Be Late and SkyNomad JSON traces: ``{"metadata": {...}, "data": [...], "prices": [...]}``.

``data[i]`` is the number of spot instances available at tick ``i`` (1, or k of k, means
available; 0 means not), as in Can't Be Late's published files. Files whose metadata has a
``price_info`` block (SkyNomad's converters) mark preempted ticks instead (1 = preempted, the
convention of the Can't Be Late simulator) and are inverted on load; ``preempted=`` overrides
the choice. Tick ``i`` starts at ``start + i * G`` (``G`` = ``metadata.gap_seconds``).

Every value comes from the first of these that gives it (:mod:`solver.traces.trace_metadata`
lists the metadata keys read):

* start: the ``start`` argument; ``metadata.start_time``; midnight UTC of the date in a folder
  named ``<cloud>-MM-DD-YYYY`` (``aws-02-15-2023``); :data:`DEFAULT_START` (2023-01-01).
* zone and instance type: the arguments; the metadata; the file name ``<zone>_<device>.json``
  or, for any other file name (``full.json``), the folder name ``<zone>_<device>``. The device
  becomes an instance type through :data:`DEVICE_INSTANCE_TYPES`; an unknown device is used as
  the type only when nothing else names one. When the metadata and the name disagree on the
  zone, or on the type of a known device, loading fails (pass the argument to choose).
* cloud: the argument; ``metadata.cloud``; the folder prefix; ``gcp`` for zones named like
  ``us-central1-a``, else ``aws``. Region: the argument; the metadata (which must match the
  zone); the zone.
* on-demand price: ``on_demand_prices`` (the ``--on-demand-price``/``--prices`` options); the
  metadata; the table in :mod:`solver.traces.prices`.
* spot price: ``prices`` (one per tick); the metadata's constant ``price_info.price``;
  :data:`DEFAULT_SPOT_SHARE` of the on-demand price.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from solver.market import Market, MarketTicks
from solver.traces.errors import (
    MISSING,
    PathLike,
    TraceFormatError,
    count,
    json_type,
    number,
    read_json,
)
from solver.traces.prices import ZONE_EXPECTED, cloud_of_zone, priced, region_of_zone
from solver.traces.trace_metadata import TraceMetadata, read_metadata

DEFAULT_START = 1672531200.0
"""2023-01-01T00:00:00Z, the start when nothing else gives one."""

DEFAULT_SPOT_SHARE = 0.30
"""Spot price as a share of on-demand when a file gives no spot price (AWS's usual floor)."""

DEVICE_INSTANCE_TYPES: Mapping[str, str] = {
    "v100_1": "p3.2xlarge",
    "v100_8": "p3.16xlarge",
    "k80_1": "p2.xlarge",
    "k80_8": "p2.8xlarge",
    "intel_64": "r5.16xlarge",
    "c3-88": "c3-highcpu-88",
}
"""Device part of a file or folder name → instance type, as the trace collectors launched
them."""

_KEYS = ("metadata", "data", "prices")
_FILE = re.compile(r"(?P<zone>[^_]+)_(?P<device>.+?)\.json(?:\.gz)?")
_ZONE_FOLDER = re.compile(r"(?P<zone>[^_]+)_(?P<device>.+)")
_FOLDER = re.compile(r"(?P<cloud>[a-z]+)-(?P<month>\d\d)-(?P<day>\d\d)-(?P<year>\d{4})")
_NAME_EXPECTED = (
    "'<zone>_<device>.json', a '<zone>_<device>' folder, metadata naming the zone and the "
    "instance type, or zone= and instance_type= arguments"
)


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
    preempted: bool | None = None,
) -> MarketTicks:
    """Ticks of one trace file (precedence of every value in the module doc)."""
    meta, data, prices = _read(path)
    named = _name(path)
    zone = zone or _agree(path, "zone", meta.zone, named[0] if named else None, named)
    device = _agree(path, "device", meta.device, named[1] if named else None, named,
                    "instance_type")
    instance_type = instance_type or _instance_type(path, meta, device, named)
    if zone is None or instance_type is None:
        raise TraceFormatError(path, None, "file name", Path(path).name, _NAME_EXPECTED)
    if region is None:
        try:
            zone_region = region_of_zone(zone)
        except ValueError:
            raise TraceFormatError(path, None, "zone", zone, ZONE_EXPECTED) from None
        _agree(path, "region", meta.region, zone_region, None)  # refuses a contradiction
        region = zone_region
    folder = _FOLDER.fullmatch(Path(path).parent.name)
    cloud = cloud or meta.cloud or (folder["cloud"] if folder else cloud_of_zone(zone))
    if start is None:
        start = meta.start if meta.start is not None else (
            _folder_start(path, folder) if folder else DEFAULT_START)
    if meta.on_demand is not None and instance_type not in (on_demand_prices or {}):
        on_demand = meta.on_demand
    else:
        on_demand = priced(path, None, "instance type", instance_type, instance_type,
                           on_demand_prices)
    market = Market(cloud, region, zone, instance_type, on_demand)
    available = _available(path, data, meta.counts_preemptions if preempted is None
                           else preempted)
    if prices is None:
        spot = meta.spot_price if meta.spot_price is not None else spot_share * on_demand
        prices = np.full(len(available), spot)
    times = float(start) + meta.gap_seconds * np.arange(len(available))
    return MarketTicks(market, times, prices, available)


def _name(path: PathLike) -> tuple[str, str] | None:
    """``(zone, device)`` from the file name, else from a folder ``<zone>_<device>`` whose zone
    part names a zone; ``None`` when neither does."""
    name = _FILE.fullmatch(Path(path).name)
    if name is not None:
        return name["zone"], name["device"]
    folder = _ZONE_FOLDER.fullmatch(Path(path).parent.name)
    if folder is not None:
        try:
            region_of_zone(folder["zone"])
        except ValueError:
            return None
        return folder["zone"], folder["device"]
    return None


def _agree(path: PathLike, field: str, from_metadata: str | None, from_name: str | None,
           named: tuple[str, str] | None, argument: str | None = None) -> str | None:
    """The metadata's value, else the name's; they must not contradict each other."""
    if from_metadata is not None and from_name is not None and from_metadata != from_name:
        source = "zone" if named is None else "file or folder name"
        raise TraceFormatError(
            path, "metadata", field, from_metadata,
            f"{from_name!r} as the {source} gives, or the {argument or field}= argument to "
            "choose",
        )
    return from_metadata if from_metadata is not None else from_name


def _instance_type(path: PathLike, meta: TraceMetadata, device: str | None,
                   named: tuple[str, str] | None) -> str | None:
    """The metadata's type (checked against a known device), else the device's, else the
    device itself."""
    known = DEVICE_INSTANCE_TYPES.get(device) if device is not None else None
    return _agree(path, "instance_type", meta.instance_type, known, named) or device


def _folder_start(path: PathLike, folder: re.Match[str]) -> float:
    try:
        day = datetime(int(folder["year"]), int(folder["month"]), int(folder["day"]), tzinfo=UTC)
    except ValueError:
        raise TraceFormatError(
            path, None, "folder name", folder[0], "'<cloud>-MM-DD-YYYY' with a valid date"
        ) from None
    return day.timestamp()


def _read(path: PathLike) -> tuple[TraceMetadata, list[Any], np.ndarray | None]:
    document = read_json(path)
    if not isinstance(document, dict):
        raise TraceFormatError(
            path, None, "top level", json_type(document),
            'an object {"metadata": {"gap_seconds": G}, "data": [...]}',
        )
    for key, value in document.items():
        if key not in _KEYS:
            raise TraceFormatError(path, None, key, json_type(value), f"only the keys {_KEYS}")
    meta = read_metadata(path, document.get("metadata", MISSING))
    data = _array(path, document, "data")
    if "prices" not in document:
        return meta, data, None
    prices = _prices(path, _array(path, document, "prices"))
    if len(prices) != len(data):
        raise TraceFormatError(
            path, "prices", "length", len(prices),
            f"{len(data)}, one price per value of 'data'",
        )
    return meta, data, prices


def _array(path: PathLike, document: dict[str, Any], key: str) -> list[Any]:
    value = document.get(key, MISSING)
    if not isinstance(value, list) or not value:
        shown = value if value is MISSING or value == [] else json_type(value)
        raise TraceFormatError(path, None, key, shown, "a non-empty array of numbers")
    return value


def _available(path: PathLike, values: list[Any], preempted: bool) -> np.ndarray:
    """Available counts; from 0/1 preemption marks when ``preempted``."""
    if not all(type(v) is int and v >= 0 for v in values):
        values = [count(v, path, f"data[{i}]", "data") for i, v in enumerate(values)]
    counts = np.array(values, dtype=np.int64)
    if not preempted:
        return counts
    if np.any(counts > 1):
        i = int(np.argmax(counts > 1))
        raise TraceFormatError(
            path, f"data[{i}]", "data", values[i],
            "0 or 1: with metadata.price_info, data marks preempted ticks (1 = preempted); "
            "pass preempted=False if it counts available instances",
        )
    return 1 - counts


def _prices(path: PathLike, values: list[Any]) -> np.ndarray:
    if all(type(v) is int or type(v) is float for v in values):
        prices = np.array(values, dtype=float)
        if np.all(prices >= 0):
            return prices
    return np.array([number(v, path, f"prices[{i}]", "prices") for i, v in enumerate(values)])
