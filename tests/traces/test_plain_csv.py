"""Plain CSV market traces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.market import Market, MarketTicks
from solver.traces.plain_csv import load_plain_csv
from tests.properties import examples

from .checks import fails, write_csv, write_lines

A = "aws/us-east-1/us-east-1a/p3.2xlarge"
B = "aws/us-west-2/us-west-2b/g5.xlarge"
HEADER = "timestamp,market,spot_price,available"


def write_ticks(path: Path, series: list[MarketTicks], on_demand: bool = True) -> Path:
    """Write ticks as plain CSV, markets interleaved row by row, times as Unix seconds."""
    header = ["timestamp", "market", "spot_price", "available"]
    rows = [
        [repr(float(t.times[i])), t.market.key, repr(float(t.prices[i])), int(t.available[i])]
        + ([repr(t.market.on_demand_price)] if on_demand else [])
        for i in range(max(len(t.times) for t in series)) for t in series if i < len(t.times)
    ]
    return write_csv(path, header + (["on_demand_price"] if on_demand else []), rows)


def test_iso_and_unix_times_interleaved_markets(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "prices.csv", HEADER,
        f"2023-02-15T00:00:00Z,{A},0.918,1",
        f"1676419200,{B},0.5,3",
        f"2023-02-15T01:00:00+00:30,{A},1.1,0",
        f"1676422800.5,{B},0.6,2",
    )
    a, b = load_plain_csv(path)
    assert a.market == Market.parse_key(A, 3.06)
    assert b.market == Market.parse_key(B, 1.006)
    np.testing.assert_array_equal(a.times, [1676419200.0, 1676421000.0])
    np.testing.assert_array_equal(b.times, [1676419200.0, 1676422800.5])
    np.testing.assert_array_equal(a.prices, [0.918, 1.1])
    np.testing.assert_array_equal(b.available, [3, 2])


def test_on_demand_column_and_override(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.csv", HEADER + ",on_demand_price",
                       "0,c/r/z/custom,1,1,4.5", "60,c/r/z/custom,1,1,4.5")
    assert load_plain_csv(path)[0].market.on_demand_price == 4.5
    path = write_lines(tmp_path / "q.csv", HEADER, "0,c/r/z/custom,1,1")
    assert load_plain_csv(path, on_demand_prices={"custom": 2.0})[0].market.on_demand_price == 2.0


def test_gzip_blank_lines_and_spaces_in_header(tmp_path: Path) -> None:
    series = [MarketTicks(Market.parse_key(A, 3.06), [0.0, 10.0], [1.0, 2.0], [1, 0])]
    path = write_ticks(tmp_path / "t.csv.gz", series)
    assert load_plain_csv(path)[0].market.key == A
    path = write_lines(tmp_path / "b.csv", " timestamp , market,spot_price,available", "",
                       f"0,{A},1,1", "", f"5,{A},1,0", "")
    np.testing.assert_array_equal(load_plain_csv(path)[0].available, [1, 0])


def test_round_trip_fixed(tmp_path: Path) -> None:
    series = [
        MarketTicks(Market.parse_key(A, 3.06), [0.0, 195.0, 391.0], [1.5, 1.25, 0.918], [0, 1, 1]),
        MarketTicks(Market.parse_key(B, 9.0), [10.0, 20.0], [0.0, 2.0], [16, 4]),
    ]
    loaded = load_plain_csv(write_ticks(tmp_path / "t.csv", series))
    assert_same(loaded, series)


@settings(max_examples=examples(25), deadline=None)
@given(st.lists(st.tuples(
    st.floats(0.01, 1e5), st.floats(0, 100, allow_subnormal=False), st.integers(0, 64),
), min_size=1, max_size=20), st.floats(0, 2e9), st.booleans())
def test_round_trip_generated(tmp_path_factory: pytest.TempPathFactory,
                              steps: list[tuple[float, float, int]], start: float,
                              on_demand: bool) -> None:
    times = start + np.cumsum([step for step, _, _ in steps])
    series = [MarketTicks(Market.parse_key(A, 3.06), times, [p for _, p, _ in steps],
                          [n for _, _, n in steps])]
    path = write_ticks(tmp_path_factory.mktemp("rt") / "t.csv", series, on_demand)
    assert_same(load_plain_csv(path), series)


def assert_same(loaded: list[MarketTicks], expected: list[MarketTicks]) -> None:
    assert [t.market for t in loaded] == [t.market for t in expected]
    for got, want in zip(loaded, expected, strict=True):
        np.testing.assert_array_equal(got.times, want.times)
        np.testing.assert_array_equal(got.prices, want.prices)
        np.testing.assert_array_equal(got.available, want.available)


# Malformed input: one test per case.

def test_empty_file(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.csv")
    fails(lambda: load_plain_csv(path), path, "line 1", "header", "''",
          "the header 'timestamp,market,spot_price,available[,on_demand_price]'")


def test_header_only(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.csv", HEADER)
    fails(lambda: load_plain_csv(path), path, None, "rows", "= 0", "at least one data row")


def test_missing_column(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.csv", "timestamp,market,spot_price", f"0,{A},1")
    fails(lambda: load_plain_csv(path), path, "line 1", "available", "is missing",
          "a header column 'available'")


def test_unknown_column(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.csv", HEADER + ",ondemand", f"0,{A},1,1,3")
    fails(lambda: load_plain_csv(path), path, "line 1", "header", "'ondemand'",
          "only the columns timestamp,market,spot_price,available[,on_demand_price], each once")


def test_repeated_column(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.csv", HEADER + ",available", f"0,{A},1,1,1")
    fails(lambda: load_plain_csv(path), path, "line 1", "header", "'available'",
          "only the columns")


def test_wrong_field_count(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.csv", HEADER, f"0,{A},1,1", f"60,{A},1")
    fails(lambda: load_plain_csv(path), path, "line 3", "row", f"'60,{A},1'",
          "4 fields like the header")


def test_unterminated_quote(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.csv", HEADER, f'0,"{A},1,1')
    fails(lambda: load_plain_csv(path), path, "line 2", "row", "unexpected end of data",
          "well-formed CSV")


def test_line_numbers_after_quoted_multi_line_field(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.csv", HEADER, f'0,"{A}",1,1', '"60","c/r/z/x', 'y",1,1',
                       f"120,{A},abc,1")
    fails(lambda: load_plain_csv(path), path, "line 5", "spot_price", "'abc'", "a number >= 0")


@pytest.mark.parametrize(("price", "shown"), [("abc", "'abc'"), ("", "''"), ("nan", "'nan'"),
                                              ("inf", "'inf'"), ("-0.5", "'-0.5'")])
def test_bad_spot_price(tmp_path: Path, price: str, shown: str) -> None:
    path = write_lines(tmp_path / "prices.csv", HEADER, f"0,{A},1,1", f"60,{B},1,1",
                       f"120,{A},{price},1")
    fails(lambda: load_plain_csv(path), path, "line 4", "spot_price", shown, "a number >= 0")


@pytest.mark.parametrize(("count", "shown"), [("-1", "'-1'"), ("1.5", "'1.5'"), ("x", "'x'"),
                                              ("", "''")])
def test_bad_availability(tmp_path: Path, count: str, shown: str) -> None:
    path = write_lines(tmp_path / "p.csv", HEADER, f"0,{A},1,{count}")
    fails(lambda: load_plain_csv(path), path, "line 2", "available", shown,
          "an integer count >= 0")


@pytest.mark.parametrize("time", ["2023-02-15T00:00:00", "yesterday", "", "nan"])
def test_bad_timestamp(tmp_path: Path, time: str) -> None:
    path = write_lines(tmp_path / "p.csv", HEADER, f"0,{A},1,1", f"{time},{A},1,1")
    fails(lambda: load_plain_csv(path), path, "line 3", "timestamp", repr(time),
          "Unix seconds or an ISO-8601 time with 'Z' or a UTC offset")


@pytest.mark.parametrize("time", ["60", "59.5"])
def test_non_increasing_times_in_a_market(tmp_path: Path, time: str) -> None:
    path = write_lines(tmp_path / "p.csv", HEADER, f"0,{A},1,1", f"60,{A},1,1", f"0,{B},1,1",
                       f"{time},{A},1,1")
    fails(lambda: load_plain_csv(path), path, "line 5", "timestamp", repr(time),
          f"a time after '60' on line 3, the previous row of market {A}")


@pytest.mark.parametrize("key", ["aws/us-east-1/p3.2xlarge", "aws//us-east-1a/p3.2xlarge",
                                 "a/b/c/d/e"])
def test_bad_market_key(tmp_path: Path, key: str) -> None:
    path = write_lines(tmp_path / "p.csv", HEADER, f"0,{A},1,1", f"0,{key},1,1")
    fails(lambda: load_plain_csv(path), path, "line 3", "market", repr(key),
          "a market key 'cloud/region/zone/instance_type' of non-empty names")


def test_unknown_instance_type_without_on_demand_column(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.csv", HEADER, "0,aws/r/z/x9.huge,1,1")
    error = fails(lambda: load_plain_csv(path), path, "line 2", "market", "'aws/r/z/x9.huge'",
                  "a type with a known on-demand price: pass --on-demand-price "
                  "x9.huge=USD_PER_HOUR or --prices FILE")
    assert str(error).endswith("; or an on_demand_price column")


def test_on_demand_disagreement(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.csv", HEADER + ",on_demand_price", f"0,{A},1,1,3.06",
                       f"0,{B},1,1,1.0", f"60,{A},1,1,3.10")
    fails(lambda: load_plain_csv(path), path, "line 4", "on_demand_price", "'3.10'",
          f"'3.06' as on line 2: one on-demand price per market ({A})")


@pytest.mark.parametrize("price", ["0", "-3", "", "NaN"])
def test_bad_on_demand_price(tmp_path: Path, price: str) -> None:
    path = write_lines(tmp_path / "p.csv", HEADER + ",on_demand_price", f"0,{A},1,1,{price}")
    fails(lambda: load_plain_csv(path), path, "line 2", "on_demand_price", repr(price),
          "a number > 0")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_bytes(HEADER.encode() + b"\n0,\xff,1,1\n")
    fails(lambda: load_plain_csv(path), path, None, "content", "can't decode", "UTF-8 text")
