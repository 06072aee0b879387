"""SpotLake daily region-mean spot prices (``cloud,region,instance_type,date,open,high,low,close,
avg`` CSV, optionally gzipped), as market ticks.

Each (cloud, region, instance type) becomes one market in zone ``all``: the prices are means
over the region's zones. A day's ``avg`` holds from midnight UTC until the next listed day, so
a missing day repeats the day before; a closing tick one day after the last listed day ends
the series (by the slot rules of :mod:`solver.market`, that last day is not a whole slot).

The file says nothing about capacity, so every market counts as available (1) throughout. Nor
does it give on-demand prices: a market's comes from ``on_demand_prices`` (instance type → USD
per instance-hour), else from :data:`solver.traces.prices.ON_DEMAND_USD_PER_HOUR`, else it is
set to the highest spot price of the series, a placeholder good for forecasting and not for
cost studies.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Collection, Iterator, Mapping
from datetime import UTC, date, datetime

import numpy as np

from solver.market import Market, MarketTicks
from solver.traces.errors import PathLike, TraceFormatError, number, read_text
from solver.traces.prices import ON_DEMAND_USD_PER_HOUR

COLUMNS = ("cloud", "region", "instance_type", "date", "avg")
SECONDS_PER_DAY = 86400.0


def load_spotlake_daily(
    path: PathLike,
    *,
    clouds: Collection[str] | None = None,
    regions: Collection[str] | None = None,
    instance_types: Collection[str] | None = None,
    on_demand_prices: Mapping[str, float] | None = None,
) -> list[MarketTicks]:
    """One market per series that the filters keep (``None`` keeps all), ordered by key."""
    series: dict[tuple[str, str, str], dict[date, float]] = {}
    for where, row in _rows(path):
        key = (row["cloud"], row["region"], row["instance_type"])
        if (
            (clouds is not None and key[0] not in clouds)
            or (regions is not None and key[1] not in regions)
            or (instance_types is not None and key[2] not in instance_types)
        ):
            continue
        day = _day(path, where, row["date"])
        days = series.setdefault(key, {})
        if day in days:
            raise TraceFormatError(
                path, where, "date", row["date"], f"one row per day of {'/'.join(key)}"
            )
        days[day] = number(row["avg"], path, where, "avg", strict=True)
    prices = {**ON_DEMAND_USD_PER_HOUR, **(on_demand_prices or {})}
    return [_ticks(key, days, prices.get(key[2])) for key, days in sorted(series.items())]


def _rows(path: PathLike) -> Iterator[tuple[str, dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(read_text(path)))
    header = reader.fieldnames or []
    missing = [column for column in COLUMNS if column not in header]
    if missing:
        raise TraceFormatError(
            path, "line 1", "header", ",".join(header), f"columns including {', '.join(COLUMNS)}"
        )
    for line, row in enumerate(reader, start=2):
        yield f"line {line}", row


def _day(path: PathLike, where: str, value: str) -> date:
    try:
        return date.fromisoformat(value)
    except (TypeError, ValueError):
        raise TraceFormatError(path, where, "date", value, "a day as YYYY-MM-DD") from None


def _ticks(
    key: tuple[str, str, str], days: dict[date, float], on_demand: float | None
) -> MarketTicks:
    ordered = sorted(days)
    prices = np.array([days[d] for d in ordered])
    starts = [datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp() for d in ordered]
    cloud, region, instance_type = key
    market = Market(
        cloud, region, "all", instance_type,
        float(prices.max()) if on_demand is None else float(on_demand),
    )
    return MarketTicks(
        market,
        np.array([*starts, starts[-1] + SECONDS_PER_DAY]),
        np.append(prices, prices[-1]),
        np.ones(len(starts) + 1, dtype=np.int64),
    )
