"""Timestamped availability-and-price CSV (the SkyNomad artifact's p3.2xlarge trace).

Header ``timestamp_utc,zone,instance_type,tick,available,spot_price_usd_per_hour``, plain or
``.gz``; several zones in one file give one :class:`MarketTicks` per (zone, instance type), in
order of first appearance. ``available`` is the number of spot instances obtainable at the
probe (1 = a fresh spot request was fulfilled), ``spot_price_usd_per_hour`` the spot price in
force. ``tick`` is checked to be an integer ``>= 0``; times come from ``timestamp_utc``.
Regions come from the zone names; on-demand prices from ``on_demand_prices`` or the table in
:mod:`solver.traces.prices`.
"""

from __future__ import annotations

from collections.abc import Mapping

from solver.market import Market, MarketTicks
from solver.traces.errors import PathLike, TraceFormatError
from solver.traces.plain_csv import (
    count_column,
    float_column,
    group_rows,
    lookup_on_demand,
    market_ticks,
    read_csv,
    time_column,
)
from solver.traces.prices import ZONE_EXPECTED, region_of_zone

COLUMNS = ("timestamp_utc", "zone", "instance_type", "tick", "available",
           "spot_price_usd_per_hour")


def load_skynomad_csv(
    path: PathLike, *, cloud: str = "aws", on_demand_prices: Mapping[str, float] | None = None
) -> list[MarketTicks]:
    """One :class:`MarketTicks` per (zone, instance type) of the file."""
    table = read_csv(path, COLUMNS)
    times = time_column(table, "timestamp_utc")
    prices = float_column(table, "spot_price_usd_per_hour")
    available = count_column(table, "available")
    count_column(table, "tick")
    series = []
    markets = group_rows(table.columns["zone"], table.columns["instance_type"])
    for (zone, instance_type), rows in markets.items():
        try:
            region = region_of_zone(zone)
        except ValueError:
            where = table.where(rows[0])
            raise TraceFormatError(path, where, "zone", zone, ZONE_EXPECTED) from None
        on_demand = lookup_on_demand(table, rows[0], "instance_type", instance_type,
                                     on_demand_prices)
        market = Market(cloud, region, zone, instance_type, on_demand)
        series.append(market_ticks(table, "timestamp_utc", market, rows, times, prices, available))
    return series
