"""AWS spot price history: the JSON that ``aws ec2 describe-spot-price-history`` prints.

``{"SpotPriceHistory": [{"AvailabilityZone", "InstanceType", "ProductDescription", "SpotPrice",
"Timestamp"}, ...], "NextToken": ...}``. Each record is a price change; AWS lists them newest
first, so records are sorted by time within each (zone, instance type) market, and each price
holds until the next change. Conventions:

* Only records whose ``ProductDescription`` equals ``product`` (default ``Linux/UNIX``) are
  kept; other keys of a record are ignored.
* Records repeating the same market, time and price (as overlapping queries produce) count
  once; two different prices for one market at one time are an error.
* The format says nothing about availability: every tick gets ``available`` instances
  (default 1, i.e. a spot request is always fulfilled).
* The history ends at the last change unless ``end`` (Unix seconds, the query's end time)
  is given; then the last price is extended to ``end``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from solver.market import Market, MarketTicks
from solver.timefmt import iso_utc
from solver.traces.errors import (
    MISSING,
    PathLike,
    TraceFormatError,
    json_type,
    number,
    parse_time,
    read_json,
)
from solver.traces.prices import ZONE_EXPECTED, priced, region_of_zone

_TEXT_KEYS = ("AvailabilityZone", "InstanceType", "ProductDescription", "Timestamp")


def load_aws_spot_history(
    path: PathLike,
    *,
    product: str = "Linux/UNIX",
    available: int = 1,
    end: float | None = None,
    on_demand_prices: Mapping[str, float] | None = None,
) -> list[MarketTicks]:
    """One :class:`MarketTicks` per (zone, instance type), in order of first appearance."""
    records = _records(path)
    changes: dict[tuple[str, str], list[tuple[float, int, float]]] = {}
    for index, record in enumerate(records):
        if record["ProductDescription"] == product:
            where = f"SpotPriceHistory[{index}]"
            time = parse_time(record["Timestamp"], path, where, "Timestamp")
            price = number(record["SpotPrice"], path, where, "SpotPrice")
            key = (record["AvailabilityZone"], record["InstanceType"])
            changes.setdefault(key, []).append((time, index, price))
    if not changes:
        raise TraceFormatError(
            path, None, "SpotPriceHistory", f"{len(records)} records",
            f"at least one record with ProductDescription {product!r}",
        )
    return [
        _market_ticks(path, records, market, sorted(rows), available, end, on_demand_prices)
        for market, rows in changes.items()
    ]


def _records(path: PathLike) -> list[dict[str, Any]]:
    document = read_json(path)
    if not isinstance(document, dict) or "SpotPriceHistory" not in document:
        shown = MISSING if isinstance(document, dict) else json_type(document)
        raise TraceFormatError(
            path, None, "SpotPriceHistory", shown, "an object with a 'SpotPriceHistory' array"
        )
    records = document["SpotPriceHistory"]
    if not isinstance(records, list):
        raise TraceFormatError(path, None, "SpotPriceHistory", json_type(records), "an array")
    for index, record in enumerate(records):
        where = f"SpotPriceHistory[{index}]"
        if not isinstance(record, dict):
            raise TraceFormatError(path, where, "record", json_type(record), "an object")
        for key in _TEXT_KEYS:
            if not isinstance(record.get(key, MISSING), str):
                raise TraceFormatError(path, where, key, record.get(key, MISSING), "a string")
        if "SpotPrice" not in record:
            raise TraceFormatError(path, where, "SpotPrice", MISSING, "a price in USD per hour")
    return records


def _market_ticks(
    path: PathLike,
    records: list[dict[str, Any]],
    key: tuple[str, str],
    changes: list[tuple[float, int, float]],
    available: int,
    end: float | None,
    on_demand_prices: Mapping[str, float] | None,
) -> MarketTicks:
    """Ticks of one market from its ``(time, record index, price)`` changes, sorted."""
    zone, instance_type = key
    first = f"SpotPriceHistory[{min(index for _, index, _ in changes)}]"
    try:
        region = region_of_zone(zone)
    except ValueError:
        raise TraceFormatError(path, first, "AvailabilityZone", zone, ZONE_EXPECTED) from None
    on_demand = priced(path, first, "InstanceType", instance_type, instance_type,
                       on_demand_prices)
    market = Market("aws", region, zone, instance_type, on_demand)
    kept = changes[:1]
    for time, index, price in changes[1:]:
        _, before, previous_price = kept[-1]
        if time != kept[-1][0]:
            kept.append((time, index, price))
        elif price != previous_price:
            raise TraceFormatError(
                path, f"SpotPriceHistory[{index}]", "Timestamp", records[index]["Timestamp"],
                f"one price per time in market {market.key}: SpotPriceHistory[{before}] has "
                f"the same time with SpotPrice {records[before]['SpotPrice']!r}",
            )
    times = [time for time, _, _ in kept]
    prices = [price for _, _, price in kept]
    if end is not None:
        if end <= times[-1]:
            last = kept[-1][1]
            raise TraceFormatError(
                path, f"SpotPriceHistory[{last}]", "Timestamp", records[last]["Timestamp"],
                f"a time before end={iso_utc(end)}",
            )
        times.append(end)
        prices.append(prices[-1])
    return MarketTicks(market, np.array(times), np.array(prices), np.full(len(times), available))
