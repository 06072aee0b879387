"""A user's migration table (``--migration-table FILE``), laid over the built-in one of
:mod:`solver.migration`.

``FILE`` is JSON, an object with any of ``bandwidth_gbps`` (locality → Gb/s),
``egress_usd_per_gb`` (rules ``{"from": "aws/us-east-1", "to": "aws/us-west-*", "locality":
"cross-region", "usd_per_gb": 0.02}``, ``to`` and ``locality`` optional, tried before the
built-in ones), ``continents`` (region-name prefix → continent) and
``transfer_rounding_seconds``; or CSV of egress rules with the header
``from,to,locality,usd_per_gb`` (``to`` and ``locality`` may be empty). Either may be gzipped.
"""

from __future__ import annotations

import os
from pathlib import Path

from solver.migration import DEFAULT_MIGRATION, MigrationTable
from solver.traces.errors import PathLike, TraceFormatError, json_type, read_json
from solver.traces.plain_csv import float_column, read_csv

CSV_COLUMNS = ("from", "usd_per_gb")
CSV_OPTIONAL = ("to", "locality")


def read_migration_table(path: PathLike, base: MigrationTable = DEFAULT_MIGRATION
                         ) -> MigrationTable:
    """``base`` with the table of ``path`` laid over it (format in the module doc)."""
    name = os.fspath(path).removesuffix(".gz")
    if name.endswith(".json"):
        document = read_json(path)
        if not isinstance(document, dict):
            raise TraceFormatError(path, None, "top level", json_type(document),
                                   "an object (docs/solver.md, the migration table)")
    elif name.endswith(".csv"):
        table = read_csv(path, CSV_COLUMNS, CSV_OPTIONAL)
        prices = float_column(table, "usd_per_gb")
        columns = table.columns
        rules = []
        for k, price in enumerate(prices.tolist()):
            rule = {"from": columns["from"][k].strip(), "usd_per_gb": price}
            for key in CSV_OPTIONAL:
                if key in columns and columns[key][k].strip():
                    rule[key] = columns[key][k].strip()
            rules.append(rule)
        document = {"egress_usd_per_gb": rules}
    else:
        raise TraceFormatError(path, None, "file name", Path(path).name,
                               "a .json or .csv migration table (optionally .gz)")
    try:
        return base.overridden_by(document)
    except ValueError as exc:
        raise TraceFormatError.locate(path, "table", exc) from None
