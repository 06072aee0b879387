"""On-demand prices a user supplies: ``--on-demand-price TYPE=USD_PER_HOUR`` (repeatable) and
``--prices FILE``, merged into the ``on_demand_prices`` every trace loader takes.

``FILE`` is JSON, an object of instance type → USD per instance-hour
(``{"a3-highgpu-8g": 88.49}``), or CSV with the header ``instance_type,on_demand_price``; either
may be gzipped. A flag wins over the file, and both win over the built-in table.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path

from solver.traces.errors import PathLike, TraceFormatError, json_type, number, read_json
from solver.traces.plain_csv import float_column, read_csv

FLAG = "--on-demand-price"
FLAG_EXPECTED = "TYPE=USD_PER_HOUR with a positive price, e.g. a3-highgpu-8g=88.49"
CSV_COLUMNS = ("instance_type", "on_demand_price")


def on_demand_overrides(flags: Iterable[str] = (), file: PathLike | None = None
                        ) -> dict[str, float]:
    """Instance type → USD per hour from a ``--prices`` file and ``--on-demand-price`` flags."""
    prices = read_price_file(file) if file is not None else {}
    prices.update(parse_flag(value) for value in flags)
    return prices


def parse_flag(value: str) -> tuple[str, float]:
    """``"TYPE=USD"`` as ``(type, price)``; a one-line ``ValueError`` naming the flag."""
    name, _, raw = value.partition("=")
    try:
        price = float(raw)
    except ValueError:
        price = math.nan
    if not name.strip() or not (math.isfinite(price) and price > 0):
        raise ValueError(f"{FLAG} {value!r}: expected {FLAG_EXPECTED}")
    return name.strip(), price


def read_price_file(path: PathLike) -> dict[str, float]:
    """A JSON or CSV price table (format in the module doc)."""
    name = os.fspath(path).removesuffix(".gz")
    if name.endswith(".json"):
        return _json_table(path)
    if name.endswith(".csv"):
        table = read_csv(path, CSV_COLUMNS)
        prices = float_column(table, "on_demand_price", strict=True)
        return dict(zip(table.columns["instance_type"], prices.tolist(), strict=True))
    raise TraceFormatError(path, None, "file name", Path(path).name,
                           "a .json or .csv price table (optionally .gz)")


def _json_table(path: PathLike) -> dict[str, float]:
    document = read_json(path)
    if not isinstance(document, dict) or not document:
        shown = document if isinstance(document, dict) else json_type(document)
        raise TraceFormatError(path, None, "top level", shown,
                               'a non-empty object {"instance type": USD per hour}')
    return {name: number(price, path, None, name, strict=True)
            for name, price in document.items()}
