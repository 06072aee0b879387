"""Format detection and loading several trace files."""

from __future__ import annotations

from pathlib import Path

import pytest

from solver.traces import load_trace, load_traces

from .checks import fails, write_json, write_lines

PLAIN = ("timestamp,market,spot_price,available", "0,aws/us-east-1/us-east-1a/p3.2xlarge,1,1")
SKYNOMAD = ("timestamp_utc,zone,instance_type,tick,available,spot_price_usd_per_hour",
            "2023-02-15T22:08:16Z,us-east-1b,p3.2xlarge,0,1,1.2")
CANT_BE_LATE = {"metadata": {"gap_seconds": 60}, "data": [1, 0]}
AWS = {"SpotPriceHistory": [{"AvailabilityZone": "us-east-1c", "InstanceType": "p3.2xlarge",
                             "ProductDescription": "Linux/UNIX", "SpotPrice": "0.9",
                             "Timestamp": "2023-02-15T22:08:16+00:00"}]}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    return {
        "plain": write_lines(tmp_path / "plain.csv", *PLAIN),
        "skynomad": write_lines(tmp_path / "sky.csv", *SKYNOMAD),
        "cant_be_late": write_json(tmp_path / "us-east-1d_v100_1.json.gz", CANT_BE_LATE),
        "aws": write_json(tmp_path / "history.json", AWS),
    }


@pytest.mark.parametrize(("kind", "zone"), [("plain", "us-east-1a"), ("skynomad", "us-east-1b"),
                                            ("aws", "us-east-1c"), ("cant_be_late", "us-east-1d")])
def test_detects_format(files: dict[str, Path], kind: str, zone: str) -> None:
    (ticks,) = load_trace(files[kind])
    assert ticks.market.key == f"aws/{zone[:-1]}/{zone}/p3.2xlarge"


def test_overrides_reach_the_loader(files: dict[str, Path]) -> None:
    (ticks,) = load_trace(files["cant_be_late"], start=100.0)
    assert ticks.times[0] == 100.0
    with pytest.raises(TypeError, match="start"):
        load_trace(files["plain"], start=100.0)


def test_load_traces_concatenates_in_order(files: dict[str, Path]) -> None:
    series = load_traces([files["plain"], files["skynomad"], files["aws"], files["cant_be_late"]])
    assert [t.market.zone for t in series] == ["us-east-1a", "us-east-1b", "us-east-1c",
                                               "us-east-1d"]


def test_load_traces_rejects_a_market_twice(files: dict[str, Path], tmp_path: Path) -> None:
    again = write_lines(tmp_path / "again.csv", *PLAIN)
    fails(lambda: load_traces([files["plain"], files["aws"], again]), again, None, "market",
          "'aws/us-east-1/us-east-1a/p3.2xlarge'",
          f"a market not already loaded from {files['plain']}")


def test_unknown_extension(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "trace.parquet", "x")
    fails(lambda: load_trace(path), path, None, "file name", "'trace.parquet'",
          "one of: Can't Be Late / SkyNomad JSON")


def test_unknown_json_shape(tmp_path: Path) -> None:
    path = write_json(tmp_path / "t.json", {"prices": []})
    fails(lambda: load_trace(path), path, None, "top level", "['prices']",
          "one of: Can't Be Late / SkyNomad JSON")


def test_json_array(tmp_path: Path) -> None:
    path = write_json(tmp_path / "t.json", [1, 0])
    fails(lambda: load_trace(path), path, None, "top level", "'array'", "one of: Can't Be Late")


def test_unknown_csv_header(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.csv", "time,price", "0,1")
    error = fails(lambda: load_trace(path), path, "line 1", "header", "'time,price'", "one of:")
    assert "plain CSV timestamp,market,spot_price,available[,on_demand_price]" in str(error)


def test_partial_cant_be_late_is_reported_by_its_loader(tmp_path: Path) -> None:
    path = write_json(tmp_path / "us-east-1a_v100_1.json", {"data": [1]})
    fails(lambda: load_trace(path), path, None, "metadata", "is missing", "an object")


def test_empty_csv(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.csv")
    fails(lambda: load_trace(path), path, "line 1", "header", "''", "one of:")
