"""User price tables: --on-demand-price flags and --prices files."""

from __future__ import annotations

from pathlib import Path

import pytest

from solver.traces.price_table import on_demand_overrides, parse_flag, read_price_file

from .checks import fails, write_csv, write_json


def test_flags_win_over_the_file(tmp_path: Path) -> None:
    table = write_json(tmp_path / "p.json", {"x1": 1.5, "x2": 2})
    assert on_demand_overrides(["x2=3", " x3 = 4.25"], table) == {"x1": 1.5, "x2": 3.0,
                                                                  "x3": 4.25}
    assert on_demand_overrides() == {}


@pytest.mark.parametrize("value", ["x1", "=3", "x1=", "x1=free", "x1=0", "x1=-2", "x1=nan",
                                   "x1=inf"])
def test_bad_flag_names_the_flag_and_the_form(value: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_flag(value)
    assert str(caught.value) == (f"--on-demand-price {value!r}: expected TYPE=USD_PER_HOUR "
                                 "with a positive price, e.g. a3-highgpu-8g=88.49")


def test_csv_and_gzip_tables(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "p.csv.gz", ["instance_type", "on_demand_price"],
                     [["a", "1.25"], ["b", "3"]])
    assert read_price_file(path) == {"a": 1.25, "b": 3.0}


def test_csv_bad_price(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "p.csv", ["instance_type", "on_demand_price"], [["a", "0"]])
    fails(lambda: read_price_file(path), path, "line 2", "on_demand_price", "'0'",
          "a number > 0")


def test_csv_wrong_header(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "p.csv", ["type", "usd"], [["a", "1"]])
    fails(lambda: read_price_file(path), path, "line 1", "instance_type", "is missing",
          "a header column 'instance_type'")


@pytest.mark.parametrize(("document", "shown"), [([1], "'array'"), ({}, "{}")])
def test_json_must_be_a_non_empty_object(tmp_path: Path, document: object, shown: str) -> None:
    path = write_json(tmp_path / "p.json", document)
    fails(lambda: read_price_file(path), path, None, "top level", shown,
          'a non-empty object {"instance type": USD per hour}')


def test_other_file_kinds_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("a: 1\n")
    fails(lambda: read_price_file(path), path, None, "file name", "'prices.yaml'",
          "a .json or .csv price table (optionally .gz)")
