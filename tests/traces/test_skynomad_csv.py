"""Timestamped availability-and-price CSV (SkyNomad layout)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from solver.market import Market, MarketTicks
from solver.traces.skynomad_csv import COLUMNS, load_skynomad_csv

from .checks import fails, write_csv, write_lines

HEADER = ",".join(COLUMNS)


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_ticks(path: Path, series: list[MarketTicks]) -> Path:
    """Write ticks in the SkyNomad layout, one zone after the other."""
    rows = [
        [iso(t.times[i]), t.market.zone, t.market.instance_type, i, int(t.available[i]),
         repr(float(t.prices[i]))]
        for t in series for i in range(len(t.times))
    ]
    return write_csv(path, COLUMNS, rows)


def test_round_trip_several_zones(tmp_path: Path) -> None:
    start = datetime(2023, 2, 15, 22, 8, 16, tzinfo=UTC).timestamp()
    series = [
        MarketTicks(Market("aws", "us-east-1", "us-east-1a", "p3.2xlarge", 3.06),
                    start + np.array([0, 195, 391]), [1.6703, 1.6703, 1.7], [0, 0, 1]),
        MarketTicks(Market("aws", "us-west-2", "us-west-2b", "p3.2xlarge", 3.06),
                    start + np.array([0, 195]), [0.918, 1.0339], [1, 1]),
        MarketTicks(Market("aws", "us-west-2", "us-west-2b", "g4dn.xlarge", 0.526),
                    start + np.array([5]), [0.2], [2]),
    ]
    for name in ("t.csv", "t.csv.gz"):
        loaded = load_skynomad_csv(write_ticks(tmp_path / name, series))
        assert [t.market for t in loaded] == [t.market for t in series]
        for got, want in zip(loaded, series, strict=True):
            np.testing.assert_array_equal(got.times, want.times)
            np.testing.assert_array_equal(got.prices, want.prices)
            np.testing.assert_array_equal(got.available, want.available)


def test_interleaved_rows_cloud_and_price_override(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "t.csv", HEADER,
        "2023-02-15T22:08:16Z,us-east-1a,p3.2xlarge,0,0,1.6703",
        "2023-02-15T22:08:16Z,us-east-1c,p3.2xlarge,0,1,1.2",
        "2023-02-15T22:11:31Z,us-east-1a,p3.2xlarge,1,1,1.6703",
    )
    a, c = load_skynomad_csv(path, cloud="aws2", on_demand_prices={"p3.2xlarge": 3.0})
    assert a.market == Market("aws2", "us-east-1", "us-east-1a", "p3.2xlarge", 3.0)
    assert c.market.zone == "us-east-1c"
    np.testing.assert_array_equal(a.times - a.times[0], [0.0, 195.0])


# Malformed input: one test per case.

def test_empty_file(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.csv")
    fails(lambda: load_skynomad_csv(path), path, "line 1", "header", "''", f"the header {HEADER!r}")


def test_header_only(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.csv", HEADER)
    fails(lambda: load_skynomad_csv(path), path, None, "rows", "= 0", "at least one data row")


def test_missing_column(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.csv", "timestamp_utc,zone,instance_type,tick,available",
                       "2023-02-15T22:08:16Z,us-east-1a,p3.2xlarge,0,0")
    fails(lambda: load_skynomad_csv(path), path, "line 1", "spot_price_usd_per_hour", "is missing",
          "a header column 'spot_price_usd_per_hour'")


def test_wrong_field_count(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.csv", HEADER, "2023-02-15T22:08:16Z,us-east-1a,p3.2xlarge,0,0")
    fails(lambda: load_skynomad_csv(path), path, "line 2", "row",
          "'2023-02-15T22:08:16Z,us-east-1a,p3.2xlarge,0,0'", "6 fields like the header")


def rows(*cells: str) -> list[str]:
    """Two good rows of us-east-1a, then the given row."""
    return [HEADER, "2023-02-15T22:08:16Z,us-east-1a,p3.2xlarge,0,0,1.6",
            "2023-02-15T22:11:31Z,us-east-1a,p3.2xlarge,1,1,1.6", ",".join(cells)]


@pytest.mark.parametrize(("price", "shown"), [("abc", "'abc'"), ("NaN", "'NaN'"),
                                              ("-1.6", "'-1.6'")])
def test_bad_price(tmp_path: Path, price: str, shown: str) -> None:
    path = write_lines(tmp_path / "t.csv",
                       *rows("2023-02-15T22:14:46Z", "us-east-1a", "p3.2xlarge", "2", "1", price))
    fails(lambda: load_skynomad_csv(path), path, "line 4", "spot_price_usd_per_hour", shown,
          "a number >= 0")


@pytest.mark.parametrize(("count", "shown"), [("-1", "'-1'"), ("yes", "'yes'")])
def test_bad_availability(tmp_path: Path, count: str, shown: str) -> None:
    path = write_lines(tmp_path / "t.csv",
                       *rows("2023-02-15T22:14:46Z", "us-east-1a", "p3.2xlarge", "2", count, "1"))
    fails(lambda: load_skynomad_csv(path), path, "line 4", "available", shown,
          "an integer count >= 0")


def test_bad_tick(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.csv",
                       *rows("2023-02-15T22:14:46Z", "us-east-1a", "p3.2xlarge", "two", "1", "1"))
    fails(lambda: load_skynomad_csv(path), path, "line 4", "tick", "'two'", "an integer count >= 0")


def test_timestamp_without_offset(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.csv",
                       *rows("2023-02-15T22:14:46", "us-east-1a", "p3.2xlarge", "2", "1", "1"))
    fails(lambda: load_skynomad_csv(path), path, "line 4", "timestamp_utc",
          "'2023-02-15T22:14:46'", "Unix seconds or an ISO-8601 time with 'Z' or a UTC offset")


def test_repeated_timestamp_in_a_zone(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.csv",
                       *rows("2023-02-15T22:11:31Z", "us-east-1a", "p3.2xlarge", "2", "1", "1"))
    fails(lambda: load_skynomad_csv(path), path, "line 4", "timestamp_utc",
          "'2023-02-15T22:11:31Z'",
          "a time after '2023-02-15T22:11:31Z' on line 3, the previous row of market "
          "aws/us-east-1/us-east-1a/p3.2xlarge")


def test_bad_zone(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.csv",
                       *rows("2023-02-15T22:14:46Z", "east", "p3.2xlarge", "2", "1", "1"))
    fails(lambda: load_skynomad_csv(path), path, "line 4", "zone", "'east'",
          "an availability zone name")


def test_unknown_instance_type(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.csv",
                       *rows("2023-02-15T22:14:46Z", "us-east-1a", "p9.max", "2", "1", "1"))
    fails(lambda: load_skynomad_csv(path), path, "line 4", "instance_type", "'p9.max'",
          "a type with a known on-demand price: pass --on-demand-price p9.max=USD_PER_HOUR")
