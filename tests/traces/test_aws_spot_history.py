"""AWS ``describe-spot-price-history`` JSON."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from solver.traces.aws_spot_history import load_aws_spot_history

from .checks import fails, write_json


def record(time: str, price: str = "0.918000", zone: str = "us-east-1a",
           instance_type: str = "p3.2xlarge", product: str = "Linux/UNIX") -> dict:
    return {"AvailabilityZone": zone, "InstanceType": instance_type, "ProductDescription": product,
            "SpotPrice": price, "Timestamp": time}


def history(tmp_path: Path, *records: object, name: str = "history.json") -> Path:
    return write_json(tmp_path / name, {"SpotPriceHistory": list(records), "NextToken": ""})


def seconds(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


T0, T1, T2 = "2023-02-15T22:08:16+00:00", "2023-02-16T01:00:00+00:00", "2023-02-16T03:30:00Z"


def test_newest_first_records_are_sorted_per_market(tmp_path: Path) -> None:
    path = history(
        tmp_path,
        record(T2, "1.100000"),
        record(T1, "0.300000", zone="us-west-2b", instance_type="g5.xlarge"),
        record(T1, "1.000000"),
        record(T0, "0.918000"),
    )
    a, b = load_aws_spot_history(path)
    assert a.market.key == "aws/us-east-1/us-east-1a/p3.2xlarge"
    assert a.market.on_demand_price == 3.06
    np.testing.assert_array_equal(a.times, [seconds(T0), seconds(T1), seconds(T2)])
    np.testing.assert_array_equal(a.prices, [0.918, 1.0, 1.1])
    np.testing.assert_array_equal(a.available, [1, 1, 1])
    assert b.market.key == "aws/us-west-2/us-west-2b/g5.xlarge"


def test_product_filter_available_end_and_gzip(tmp_path: Path) -> None:
    path = history(tmp_path, record(T1, "9.9", product="Windows"), record(T1, "1.0"),
                   record(T0, "0.9"), name="h.json.gz")
    (ticks,) = load_aws_spot_history(path, available=4, end=seconds(T2))
    np.testing.assert_array_equal(ticks.times, [seconds(T0), seconds(T1), seconds(T2)])
    np.testing.assert_array_equal(ticks.prices, [0.9, 1.0, 1.0])
    np.testing.assert_array_equal(ticks.available, [4, 4, 4])
    (windows,) = load_aws_spot_history(path, product="Windows")
    np.testing.assert_array_equal(windows.prices, [9.9])


def test_identical_duplicates_count_once(tmp_path: Path) -> None:
    path = history(tmp_path, record(T1, "1.0"), record(T0, "0.9"), record(T1, "1.0"))
    (ticks,) = load_aws_spot_history(path)
    np.testing.assert_array_equal(ticks.prices, [0.9, 1.0])


def test_on_demand_override(tmp_path: Path) -> None:
    path = history(tmp_path, record(T0, instance_type="r5.16xlarge"))
    (ticks,) = load_aws_spot_history(path, on_demand_prices={"r5.16xlarge": 4.032})
    assert ticks.market.on_demand_price == 4.032


# Malformed input: one test per case.

def test_conflicting_duplicate_is_rejected(tmp_path: Path) -> None:
    path = history(tmp_path, record(T1, "1.0"), record(T0, "0.9"), record(T1, "1.2"))
    fails(lambda: load_aws_spot_history(path), path, "SpotPriceHistory[2]", "Timestamp", repr(T1),
          "one price per time in market aws/us-east-1/us-east-1a/p3.2xlarge: "
          "SpotPriceHistory[0] has the same time with SpotPrice '1.0'")


def test_end_not_after_last_change(tmp_path: Path) -> None:
    path = history(tmp_path, record(T1, "1.0"), record(T0, "0.9"))
    fails(lambda: load_aws_spot_history(path, end=seconds(T1)), path, "SpotPriceHistory[0]",
          "Timestamp", repr(T1), "a time before end=2023-02-16T01:00:00Z")


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text("  \n")
    fails(lambda: load_aws_spot_history(path), path, None, "content", "''",
          "a JSON document")


def test_not_an_object(tmp_path: Path) -> None:
    path = write_json(tmp_path / "h.json", [record(T0)])
    fails(lambda: load_aws_spot_history(path), path, None, "SpotPriceHistory", "'array'",
          "an object with a 'SpotPriceHistory' array")


def test_missing_history(tmp_path: Path) -> None:
    path = write_json(tmp_path / "h.json", {"History": []})
    fails(lambda: load_aws_spot_history(path), path, None, "SpotPriceHistory", "is missing",
          "an object with a 'SpotPriceHistory' array")


def test_history_not_an_array(tmp_path: Path) -> None:
    path = write_json(tmp_path / "h.json", {"SpotPriceHistory": {"a": 1}})
    fails(lambda: load_aws_spot_history(path), path, None, "SpotPriceHistory", "'object'",
          "an array")


def test_no_record_of_the_product(tmp_path: Path) -> None:
    path = history(tmp_path, record(T0, product="Windows"))
    fails(lambda: load_aws_spot_history(path), path, None, "SpotPriceHistory", "'1 records'",
          "at least one record with ProductDescription 'Linux/UNIX'")


def test_record_not_an_object(tmp_path: Path) -> None:
    path = history(tmp_path, record(T0), "0.9")
    fails(lambda: load_aws_spot_history(path), path, "SpotPriceHistory[1]", "record", "'string'",
          "an object")


@pytest.mark.parametrize("key", ["AvailabilityZone", "InstanceType", "ProductDescription",
                                 "Timestamp"])
def test_missing_text_field(tmp_path: Path, key: str) -> None:
    broken = record(T1)
    del broken[key]
    path = history(tmp_path, record(T2), broken)
    fails(lambda: load_aws_spot_history(path), path, "SpotPriceHistory[1]", key, "is missing",
          "a string")


def test_missing_price(tmp_path: Path) -> None:
    broken = record(T1)
    del broken["SpotPrice"]
    path = history(tmp_path, broken)
    fails(lambda: load_aws_spot_history(path), path, "SpotPriceHistory[0]", "SpotPrice",
          "is missing", "a price in USD per hour")


@pytest.mark.parametrize(("price", "shown"), [("n/a", "'n/a'"), ("-0.1", "'-0.1'"),
                                              ("NaN", "'NaN'"), (None, "= None")])
def test_bad_price(tmp_path: Path, price: object, shown: str) -> None:
    path = history(tmp_path, record(T2), record(T1, price))
    fails(lambda: load_aws_spot_history(path), path, "SpotPriceHistory[1]", "SpotPrice", shown,
          "a number >= 0")


@pytest.mark.parametrize("time", ["2023-02-16T01:00:00", "Feb 16 2023"])
def test_bad_timestamp(tmp_path: Path, time: str) -> None:
    path = history(tmp_path, record(T2), record(time))
    fails(lambda: load_aws_spot_history(path), path, "SpotPriceHistory[1]", "Timestamp",
          repr(time), "Unix seconds or an ISO-8601 time with 'Z' or a UTC offset")


def test_unknown_instance_type(tmp_path: Path) -> None:
    path = history(tmp_path, record(T2), record(T1, instance_type="x9.huge"))
    fails(lambda: load_aws_spot_history(path), path, "SpotPriceHistory[1]", "InstanceType",
          "'x9.huge'", "a type with a known on-demand price")


def test_bad_zone(tmp_path: Path) -> None:
    path = history(tmp_path, record(T1, zone="use1-az2"))
    fails(lambda: load_aws_spot_history(path), path, "SpotPriceHistory[0]", "AvailabilityZone",
          "'use1-az2'", "an availability zone name")
