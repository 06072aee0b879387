"""User migration tables: --migration-table files laid over the built-in table."""

from __future__ import annotations

from pathlib import Path

import pytest

from solver.migration import Place
from solver.traces.errors import TraceFormatError
from solver.traces.migration_table import read_migration_table

from .checks import fails, write_csv, write_json

EAST = Place("aws", "us-east-1", "us-east-1a")
WEST = Place("aws", "us-west-2", "us-west-2a")


def test_a_json_table_overrides_rules_bandwidths_and_rounding(tmp_path: Path) -> None:
    path = write_json(tmp_path / "m.json.gz", {
        "bandwidth_gbps": {"cross-region": 4.0},
        "egress_usd_per_gb": [{"from": "aws/us-east-1", "to": "aws/us-west-*",
                               "usd_per_gb": 0.05, "source": "negotiated rate"}],
        "transfer_rounding_seconds": 0})
    table = read_migration_table(path)
    move = table.move(EAST, WEST, 10.0)
    assert move.egress_usd == pytest.approx(0.5) and move.transfer_seconds == pytest.approx(20)
    assert table.move(WEST, EAST, 10.0).egress_usd == pytest.approx(0.2)  # built-in rule


def test_a_csv_table_lists_egress_rules(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "m.csv", ["from", "to", "locality", "usd_per_gb"],
                     [["aws/*", "", "cross-region", "0.03"]])
    assert read_migration_table(path).move(WEST, EAST, 10.0).egress_usd == pytest.approx(0.3)


def test_bad_tables_name_the_file_and_the_field(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "m.csv", ["from", "usd_per_gb"], [["aws/*", "-1"]])
    fails(lambda: read_migration_table(path), path, "line 2", "usd_per_gb", "'-1'",
          "a number >= 0")
    bad = write_json(tmp_path / "m.json", {"bandwidth_gbps": {"cross-region": 0}})
    with pytest.raises(TraceFormatError, match=r"m\.json table: migration table "
                                               r"bandwidth_gbps\['cross-region'\]=0\.0"):
        read_migration_table(bad)
    listed = write_json(tmp_path / "l.json", [1, 2])
    fails(lambda: read_migration_table(listed), listed, None, "top level", "'array'",
          "an object")
    other = write_json(tmp_path / "m.yaml", {})
    fails(lambda: read_migration_table(other), other, None, "file name", "'m.yaml'",
          "a .json or .csv migration table (optionally .gz)")
