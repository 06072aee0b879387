"""Loaders of market traces and job workloads from files (formats in ``docs/traces.md``).

Every loader raises :class:`TraceFormatError` for malformed input, naming the file, the line
or JSON path, the field, the offending value and what was expected.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from solver.market import MarketTicks
from solver.traces.aws_spot_history import load_aws_spot_history
from solver.traces.cant_be_late import load_cant_be_late
from solver.traces.errors import PathLike, TraceFormatError, json_type, read_json, read_text
from solver.traces.jobs_file import load_jobs
from solver.traces.plain_csv import load_plain_csv
from solver.traces.prices import ON_DEMAND_USD_PER_HOUR, on_demand_price
from solver.traces.skynomad_csv import load_skynomad_csv
from solver.traces.spotlake_daily import load_spotlake_daily

__all__ = [
    "ON_DEMAND_USD_PER_HOUR",
    "SUPPORTED_FORMATS",
    "TraceFormatError",
    "load_aws_spot_history",
    "load_cant_be_late",
    "load_jobs",
    "load_plain_csv",
    "load_skynomad_csv",
    "load_spotlake_daily",
    "load_trace",
    "load_traces",
    "on_demand_price",
]

SUPPORTED_FORMATS = (
    "Can't Be Late / SkyNomad JSON {\"metadata\": {\"gap_seconds\": G, ...}, \"data\": [...]}; "
    "AWS spot price history JSON {\"SpotPriceHistory\": [...]}; "
    "SkyNomad CSV timestamp_utc,zone,instance_type,tick,available,spot_price_usd_per_hour; "
    "plain CSV timestamp,market,spot_price,available[,on_demand_price]; "
    "SpotLake daily CSV cloud,region,instance_type,date,open,high,low,close,avg; "
    "each as .json or .csv, optionally gzipped (.gz)"
)


def load_trace(path: PathLike, **overrides: Any) -> list[MarketTicks]:
    """Ticks of every market in one trace file, its format told by the extension and content;
    ``overrides`` go to that format's loader."""
    name = os.fspath(path).removesuffix(".gz")
    if name.endswith(".json"):
        document = read_json(path)
        keys = set(document) if isinstance(document, dict) else set()
        if "SpotPriceHistory" in keys:
            return load_aws_spot_history(path, **overrides)
        if keys & {"metadata", "data"}:
            return [load_cant_be_late(path, **overrides)]
        shown = sorted(keys) if isinstance(document, dict) else json_type(document)
        raise TraceFormatError(path, None, "top level", shown, f"one of: {SUPPORTED_FORMATS}")
    if name.endswith(".csv"):
        header = read_text(path).partition("\n")[0].strip()
        columns = {column.strip() for column in header.split(",")}
        if "market" in columns:
            return load_plain_csv(path, **overrides)
        if "zone" in columns:
            return load_skynomad_csv(path, **overrides)
        if {"date", "avg"} <= columns:
            return load_spotlake_daily(path, **overrides)
        raise TraceFormatError(path, "line 1", "header", header, f"one of: {SUPPORTED_FORMATS}")
    raise TraceFormatError(path, None, "file name", Path(path).name, f"one of: {SUPPORTED_FORMATS}")


def load_traces(paths: Iterable[PathLike], **overrides: Any) -> list[MarketTicks]:
    """The markets of several trace files, in order; a market key may appear only once."""
    origin: dict[str, PathLike] = {}
    series = []
    for path in paths:
        for ticks in load_trace(path, **overrides):
            key = ticks.market.key
            if key in origin:
                raise TraceFormatError(
                    path, None, "market", key, f"a market not already loaded from {origin[key]}"
                )
            origin[key] = path
            series.append(ticks)
    return series
