"""Can't Be Late JSON traces."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from solver.traces.cant_be_late import DEFAULT_SPOT_SHARE, DEFAULT_START, load_cant_be_late
from solver.traces.errors import TraceFormatError

from .checks import fails, write_json


def trace(tmp_path: Path, document: object, name: str = "us-east-1a_v100_1.json",
          folder: str = "aws-02-15-2023") -> Path:
    (tmp_path / folder).mkdir(exist_ok=True)
    return write_json(tmp_path / folder / name, document)


def ok(data: list, gap: float = 195, **extra: object) -> dict:
    return {"metadata": {"gap_seconds": gap}, "data": data, **extra}


def test_market_times_and_default_prices_from_name_and_folder(tmp_path: Path) -> None:
    ticks = load_cant_be_late(trace(tmp_path, ok([0, 1, 1, 0])))
    assert ticks.market.key == "aws/us-east-1/us-east-1a/p3.2xlarge"
    assert ticks.market.on_demand_price == 3.06
    start = datetime(2023, 2, 15, tzinfo=UTC).timestamp()
    np.testing.assert_array_equal(ticks.times, start + 195 * np.arange(4))
    np.testing.assert_array_equal(ticks.available, [0, 1, 1, 0])
    np.testing.assert_allclose(ticks.prices, DEFAULT_SPOT_SHARE * 3.06)


def test_default_start_without_dated_folder(tmp_path: Path) -> None:
    ticks = load_cant_be_late(trace(tmp_path, ok([1]), folder="misc"))
    assert ticks.times[0] == DEFAULT_START == datetime(2023, 1, 1, tzinfo=UTC).timestamp()
    assert ticks.market.cloud == "aws"


@pytest.mark.parametrize(
    ("device", "instance_type", "on_demand"),
    [("v100_8", "p3.16xlarge", 24.48), ("k80_1", "p2.xlarge", 0.90), ("k80_8", "p2.8xlarge", 7.2)],
)
def test_device_names(tmp_path: Path, device: str, instance_type: str, on_demand: float) -> None:
    ticks = load_cant_be_late(trace(tmp_path, ok([1]), name=f"us-west-2b_{device}.json"))
    assert ticks.market.key == f"aws/us-west-2/us-west-2b/{instance_type}"
    assert ticks.market.on_demand_price == on_demand


def test_prices_array_counts_and_gzip(tmp_path: Path) -> None:
    document = ok([16, 3, 0], gap=300, prices=[0.9, 1.25, 1])
    path = trace(tmp_path, document, name="z-1a_v100_1.json.gz")
    ticks = load_cant_be_late(path)
    np.testing.assert_array_equal(ticks.prices, [0.9, 1.25, 1.0])
    np.testing.assert_array_equal(ticks.available, [16, 3, 0])
    assert ticks.market.zone == "z-1a"


def test_overrides(tmp_path: Path) -> None:
    path = trace(tmp_path, ok([1, 0], gap=30), name="anything.json", folder="gcp-04-30-2023")
    ticks = load_cant_be_late(
        path, start=1000.0, region="r", zone="r-b", instance_type="c3-highcpu-88",
        on_demand_prices={"c3-highcpu-88": 3.5}, spot_share=0.5,
    )
    assert ticks.market.key == "gcp/r/r-b/c3-highcpu-88"
    np.testing.assert_array_equal(ticks.times, [1000.0, 1030.0])
    np.testing.assert_allclose(ticks.prices, 1.75)
    assert load_cant_be_late(path, cloud="x", zone="a-1b", instance_type="t",
                             on_demand_prices={"t": 1.0}).market.key == "x/a-1/a-1b/t"


def test_gcp_folder_and_zone(tmp_path: Path) -> None:
    path = trace(tmp_path, ok([1]), name="us-central1-a_c3-88.json", folder="gcp-04-30-2023")
    ticks = load_cant_be_late(path, on_demand_prices={"c3-highcpu-88": 3.5})
    assert ticks.market.key == "gcp/us-central1/us-central1-a/c3-highcpu-88"
    assert ticks.times[0] == datetime(2023, 4, 30, tzinfo=UTC).timestamp()


# Malformed input: one test per case.

def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "us-east-1a_v100_1.json"
    path.write_text("")
    fails(lambda: load_cant_be_late(path), path, None, "content", "''", "a JSON document")


def test_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / "us-east-1a_v100_1.json"
    path.write_text('{"metadata": {"gap_seconds": 195},\n "data": [1, 0,]}')
    with pytest.raises(TraceFormatError) as caught:
        load_cant_be_late(path)
    assert str(caught.value) == f"{path} line 2 column 16: not valid JSON (Expecting value)"


def test_nan_price(tmp_path: Path) -> None:
    path = tmp_path / "us-east-1a_v100_1.json"
    path.write_text('{"metadata": {"gap_seconds": 195}, "data": [1, 1], "prices": [1, NaN]}')
    fails(lambda: load_cant_be_late(path), path, "prices[1]", "prices", "= nan", "a number >= 0")


def test_bad_gzip(tmp_path: Path) -> None:
    path = tmp_path / "us-east-1a_v100_1.json.gz"
    path.write_bytes(b"not gzip at all")
    fails(lambda: load_cant_be_late(path), path, None, "content", "gzip",
          "gzip-compressed UTF-8 text")


def test_truncated_gzip(tmp_path: Path) -> None:
    path = tmp_path / "us-east-1a_v100_1.json.gz"
    path.write_bytes(gzip.compress(b'{"metadata": {}}')[:-6])
    fails(lambda: load_cant_be_late(path), path, None, "content", "", "gzip-compressed UTF-8 text")


def test_top_level_array(tmp_path: Path) -> None:
    path = trace(tmp_path, [1, 0])
    fails(lambda: load_cant_be_late(path), path, None, "top level", "'array'", "an object")


def test_unknown_key(tmp_path: Path) -> None:
    path = trace(tmp_path, ok([1], price=[1.0]))
    fails(lambda: load_cant_be_late(path), path, None, "price", "'array'", "only the keys")


def test_missing_metadata(tmp_path: Path) -> None:
    path = trace(tmp_path, {"data": [1]})
    fails(lambda: load_cant_be_late(path), path, None, "metadata", "is missing",
          'an object {"gap_seconds": G}')


def test_missing_gap(tmp_path: Path) -> None:
    path = trace(tmp_path, {"metadata": {}, "data": [1]})
    fails(lambda: load_cant_be_late(path), path, "metadata", "gap_seconds", "is missing",
          "a number > 0")


@pytest.mark.parametrize(("gap", "shown"), [(0, "= 0"), (-195, "= -195"), ("195s", "'195s'"),
                                            (True, "= True")])
def test_bad_gap(tmp_path: Path, gap: object, shown: str) -> None:
    path = trace(tmp_path, ok([1], gap=gap))
    fails(lambda: load_cant_be_late(path), path, "metadata", "gap_seconds", shown, "a number > 0")


def test_missing_data(tmp_path: Path) -> None:
    path = trace(tmp_path, {"metadata": {"gap_seconds": 195}})
    fails(lambda: load_cant_be_late(path), path, None, "data", "is missing", "a non-empty array")


def test_empty_data(tmp_path: Path) -> None:
    path = trace(tmp_path, ok([]))
    fails(lambda: load_cant_be_late(path), path, None, "data", "= []", "a non-empty array")


def test_data_not_array(tmp_path: Path) -> None:
    path = trace(tmp_path, ok({"0": 1}))
    fails(lambda: load_cant_be_late(path), path, None, "data", "'object'", "a non-empty array")


@pytest.mark.parametrize(("value", "shown"), [(-1, "= -1"), (0.5, "= 0.5"), ("one", "'one'"),
                                              (True, "= True"), (None, "= None")])
def test_bad_availability(tmp_path: Path, value: object, shown: str) -> None:
    path = trace(tmp_path, ok([1, 0, value, 1]))
    fails(lambda: load_cant_be_late(path), path, "data[2]", "data", shown,
          "an integer count >= 0")


def test_integral_float_availability_is_a_count(tmp_path: Path) -> None:
    ticks = load_cant_be_late(trace(tmp_path, ok([1.0, 0.0])))
    np.testing.assert_array_equal(ticks.available, [1, 0])


def test_prices_length_mismatch(tmp_path: Path) -> None:
    path = trace(tmp_path, ok([1, 0, 1], prices=[0.9, 0.9]))
    fails(lambda: load_cant_be_late(path), path, "prices", "length", "= 2",
          "3, one price per value of 'data'")


@pytest.mark.parametrize(("value", "shown"), [(-0.5, "= -0.5"), ("cheap", "'cheap'"),
                                              (None, "= None")])
def test_bad_price(tmp_path: Path, value: object, shown: str) -> None:
    path = trace(tmp_path, ok([1, 0], prices=[0.9, value]))
    fails(lambda: load_cant_be_late(path), path, "prices[1]", "prices", shown, "a number >= 0")


def test_file_name_without_zone_and_device(tmp_path: Path) -> None:
    path = trace(tmp_path, ok([1]), name="trace.json")
    fails(lambda: load_cant_be_late(path), path, None, "file name", "'trace.json'",
          "'<zone>_<device>.json', a '<zone>_<device>' folder, metadata naming the zone and "
          "the instance type, or zone= and instance_type= arguments")


def test_zone_that_names_no_region(tmp_path: Path) -> None:
    path = trace(tmp_path, ok([1]), name="somewhere_v100_1.json")
    fails(lambda: load_cant_be_late(path), path, None, "zone", "'somewhere'",
          "an availability zone name")


def test_unknown_instance_type(tmp_path: Path) -> None:
    path = trace(tmp_path, ok([1]), name="us-east-1b_intel_64.json")
    error = fails(lambda: load_cant_be_late(path), path, None, "instance type", "'r5.16xlarge'",
                  "a type with a known on-demand price: pass --on-demand-price "
                  "r5.16xlarge=USD_PER_HOUR or --prices FILE")
    assert "on_demand_prices=" in str(error) and "\n" not in str(error)
    assert load_cant_be_late(path, on_demand_prices={"r5.16xlarge": 4.032}).market.zone \
        == "us-east-1b"


def test_invalid_folder_date(tmp_path: Path) -> None:
    path = trace(tmp_path, ok([1]), folder="aws-02-30-2023")
    fails(lambda: load_cant_be_late(path), path, None, "folder name", "'aws-02-30-2023'",
          "'<cloud>-MM-DD-YYYY' with a valid date")
