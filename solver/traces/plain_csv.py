"""Plain CSV market traces, and the checked CSV reading the other CSV formats share.

Header ``timestamp,market,spot_price,available[,on_demand_price]``, one row per tick of one
market, any number of markets per file (plain or ``.gz``):

* ``timestamp``: Unix seconds, or ISO-8601 with ``Z`` or a UTC offset; strictly increasing
  within each market (markets may interleave).
* ``market``: ``cloud/region/zone/instance_type``.
* ``spot_price``: USD per instance-hour, finite, ``>= 0``. ``available``: integer ``>= 0``.
* ``on_demand_price`` (optional): USD per instance-hour, the same on every row of a market.
  Without the column the price comes from ``on_demand_prices`` or the table in
  :mod:`solver.traces.prices`.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from solver.market import Market, MarketTicks
from solver.suggest import closest, did_you_mean
from solver.traces.errors import (
    MISSING,
    PathLike,
    TraceFormatError,
    count,
    number,
    parse_time,
    read_text,
)
from solver.traces.prices import priced

COLUMNS = ("timestamp", "market", "spot_price", "available")
OPTIONAL_COLUMNS = ("on_demand_price",)
MARKET_EXPECTED = "a market key 'cloud/region/zone/instance_type' of non-empty names"


def load_plain_csv(
    path: PathLike, *, on_demand_prices: Mapping[str, float] | None = None
) -> list[MarketTicks]:
    """One :class:`MarketTicks` per market, in order of first appearance."""
    table = read_csv(path, COLUMNS, OPTIONAL_COLUMNS)
    times = time_column(table, "timestamp")
    prices = float_column(table, "spot_price")
    available = count_column(table, "available")
    listed = (
        float_column(table, "on_demand_price", strict=True)
        if "on_demand_price" in table.columns else None
    )
    series = []
    for (key,), rows in group_rows(table.columns["market"]).items():
        parts = key.split("/")
        if len(parts) != 4 or not all(parts):
            raise TraceFormatError(path, table.where(rows[0]), "market", key, MARKET_EXPECTED)
        if listed is None:
            on_demand = lookup_on_demand(table, rows[0], "market", parts[3], on_demand_prices,
                                         "an on_demand_price column")
        else:
            on_demand = _one_on_demand(table, listed, rows, key)
        market = Market.parse_key(key, on_demand)
        series.append(market_ticks(table, "timestamp", market, rows, times, prices, available))
    return series


def _one_on_demand(table: CsvTable, prices: np.ndarray, rows: np.ndarray, key: str) -> float:
    """The on-demand price every row of a market gives, or an error at the first that differs."""
    differ = np.flatnonzero(prices[rows] != prices[rows[0]])
    if differ.size:
        row, first = rows[differ[0]], rows[0]
        raw = table.columns["on_demand_price"]
        raise TraceFormatError(
            table.path, table.where(row), "on_demand_price", raw[row],
            f"{raw[first]!r} as on line {table.lines[first]}: one on-demand price per market "
            f"({key})",
        )
    return float(prices[rows[0]])


@dataclass(frozen=True)
class CsvTable:
    """Data rows of a CSV file by column name, with each row's 1-based line number."""

    path: PathLike
    columns: dict[str, list[str]]
    lines: Sequence[int]

    def where(self, row: int) -> str:
        return f"line {self.lines[row]}"


def read_csv(
    path: PathLike, required: Sequence[str], optional: Sequence[str] = ()
) -> CsvTable:
    """Read a CSV file whose header holds every ``required`` column, perhaps some
    ``optional`` ones, and nothing else; at least one data row; blank lines are skipped."""
    rows, lines = _rows(path)
    header = [name.strip() for name in rows[0]] if rows else []
    _check_header(path, header, required, optional)
    rows, lines = rows[1:], lines[1:]
    if not all(rows):
        kept = [k for k, row in enumerate(rows) if row]
        rows, lines = [rows[k] for k in kept], [lines[k] for k in kept]
    if not rows:
        raise TraceFormatError(path, None, "rows", 0, "at least one data row after the header")
    if any(len(row) != len(header) for row in rows):
        k = next(k for k, row in enumerate(rows) if len(row) != len(header))
        raise TraceFormatError(
            path, f"line {lines[k]}", "row", ",".join(rows[k]),
            f"{len(header)} fields like the header",
        )
    columns = {name: list(map(itemgetter(k), rows)) for k, name in enumerate(header)}
    return CsvTable(path, columns, lines)


def _rows(path: PathLike) -> tuple[list[list[str]], Sequence[int]]:
    """All rows (blank ones as ``[]``) and the line each starts on."""
    text = read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        if '"' not in text:  # no quoted field, so one row per line
            rows = list(reader)
            return rows, range(1, len(rows) + 1)
        rows, lines, start = [], [], 1
        for row in reader:
            rows.append(row)
            lines.append(start)
            start = reader.line_num + 1
        return rows, lines
    except csv.Error as error:
        raise TraceFormatError(
            path, f"line {reader.line_num}", "row", str(error), "well-formed CSV"
        ) from None


def _check_header(
    path: PathLike, header: list[str], required: Sequence[str], optional: Sequence[str]
) -> None:
    expected = ",".join(required) + "".join(f"[,{name}]" for name in optional)
    if not any(header):
        raise TraceFormatError(path, "line 1", "header", "", f"the header {expected!r}")
    known = [*required, *optional]
    for name in required:
        if name not in header:
            typo = closest(name, [h for h in header if h not in known])
            meant = f"; the header has {typo!r} (a typo?)" if typo else ""
            raise TraceFormatError(
                path, "line 1", name, MISSING, f"a header column {name!r} ({expected}){meant}"
            )
    for position, name in enumerate(header):
        if name not in known or name in header[:position]:
            raise TraceFormatError(
                path, "line 1", "header", name,
                f"only the columns {expected}, each once{did_you_mean(name, known)}"
            )


def float_column(table: CsvTable, name: str, *, strict: bool = False) -> np.ndarray:
    """A column of finite numbers ``>= 0`` (``> 0`` when ``strict``)."""
    values = table.columns[name]
    try:
        parsed = np.asarray(values, dtype=float)
    except ValueError:  # a value that is no number: the parse below names it
        parsed = None
    if parsed is not None and np.all(np.isfinite(parsed)
                                     & ((parsed > 0) if strict else (parsed >= 0))):
        return parsed
    return np.array(
        [number(v, table.path, table.where(i), name, strict=strict) for i, v in enumerate(values)]
    )


def count_column(table: CsvTable, name: str) -> np.ndarray:
    """A column of integers ``>= 0``."""
    values = table.columns[name]
    try:
        parsed = np.asarray(values, dtype=np.int64)
    except (ValueError, OverflowError):  # a value that is no count: the parse below names it
        parsed = None
    if parsed is not None and np.all(parsed >= 0):
        return parsed
    return np.array(
        [count(v, table.path, table.where(i), name) for i, v in enumerate(values)], dtype=np.int64
    )


def time_column(table: CsvTable, name: str) -> np.ndarray:
    """A column of times (Unix seconds or ISO-8601 with an offset) as Unix seconds."""
    values = table.columns[name]
    seconds: dict[str, float] = {}  # each distinct text parsed once
    for i, raw in enumerate(values):
        if raw not in seconds:
            seconds[raw] = parse_time(raw, table.path, table.where(i), name)
    return np.fromiter(map(seconds.__getitem__, values), dtype=float, count=len(values))


def group_rows(*columns: Sequence[str]) -> dict[tuple[str, ...], np.ndarray]:
    """Row indices of each distinct combination of the key columns, in order of first
    appearance."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for row, key in enumerate(zip(*columns, strict=True)):
        groups.setdefault(key, []).append(row)
    return {key: np.array(rows) for key, rows in groups.items()}


def lookup_on_demand(
    table: CsvTable, row: int, field: str, instance_type: str,
    overrides: Mapping[str, float] | None, alternative: str = "",
) -> float:
    """On-demand price of ``instance_type``, or an error located at ``row``."""
    return priced(table.path, table.where(row), field, table.columns[field][row], instance_type,
                  overrides, alternative)


def market_ticks(
    table: CsvTable, time_name: str, market: Market, rows: np.ndarray,
    times: np.ndarray, prices: np.ndarray, available: np.ndarray,
) -> MarketTicks:
    """The ticks of ``market`` at ``rows``, whose times must strictly increase."""
    steps = np.diff(times[rows])
    if np.any(steps <= 0):
        before = int(np.argmax(steps <= 0))
        row, previous = rows[before + 1], rows[before]
        raw = table.columns[time_name]
        raise TraceFormatError(
            table.path, table.where(row), time_name, raw[row],
            f"a time after {raw[previous]!r} on line {table.lines[previous]}, the previous "
            f"row of market {market.key}",
        )
    return MarketTicks(market, times[rows], prices[rows], available[rows])
