"""Can't Be Late / SkyNomad JSON traces that carry a metadata block, whatever the file is
called."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from solver.traces import load_trace
from solver.traces.cant_be_late import load_cant_be_late

from .checks import fails, write_json

START = "2025-10-04T00:10:00+00:00"
START_SECONDS = datetime(2025, 10, 4, 0, 10, tzinfo=UTC).timestamp()


def full_json(tmp_path: Path, metadata: dict, data: list, folder: str = "us-central1-a_h100_8",
              **extra: object) -> Path:
    """A SkyNomad-style ``<folder>/full.json``."""
    (tmp_path / folder).mkdir(exist_ok=True)
    return write_json(tmp_path / folder / "full.json",
                      {"metadata": {"gap_seconds": 600, **metadata}, "data": data, **extra})


def gcp_h100_metadata(**price_info: object) -> dict:
    return {"start_time": START, "zone": "us-central1-a",
            "price_info": {"price": 18.98, "on_demand_price": 82.53,
                           "machine_type": "a3-highgpu-8g", **price_info}}


def test_full_json_loads_with_its_own_zone_type_start_and_prices(tmp_path: Path) -> None:
    path = full_json(tmp_path, gcp_h100_metadata(), [0, 0, 1, 0], prices=[18.98, 18.98, 19.5,
                                                                           19.5])
    ticks = load_trace(path)[0]
    assert ticks.market.key == "gcp/us-central1/us-central1-a/a3-highgpu-8g"
    assert ticks.market.on_demand_price == 82.53
    np.testing.assert_array_equal(ticks.times, START_SECONDS + 600 * np.arange(4))
    np.testing.assert_array_equal(ticks.prices, [18.98, 18.98, 19.5, 19.5])
    # SkyNomad's data marks preempted ticks: 1 = preempted, so 1 - data are available.
    np.testing.assert_array_equal(ticks.available, [1, 1, 0, 1])


def test_constant_spot_price_from_price_info_and_zone_type_from_metadata(tmp_path: Path) -> None:
    metadata = {"start_time": "2023-02-15T22:08:16",
                "price_info": {"zone": "us-east-1f", "device": "v100_1",
                               "instance_type": "p3.2xlarge", "on_demand_price": 3.06,
                               "price": 1.2648}}
    path = full_json(tmp_path, metadata, [1, 0], folder="us-east-1f_v100_1")
    ticks = load_cant_be_late(path)
    assert ticks.market.key == "aws/us-east-1/us-east-1f/p3.2xlarge"
    # A start time without an offset is UTC, as the SkyNomad converters write it.
    assert ticks.times[0] == datetime(2023, 2, 15, 22, 8, 16, tzinfo=UTC).timestamp()
    np.testing.assert_allclose(ticks.prices, 1.2648)
    np.testing.assert_array_equal(ticks.available, [0, 1])


def test_folder_name_gives_zone_and_device_when_the_metadata_does_not(tmp_path: Path) -> None:
    path = full_json(tmp_path, {"price_info": {"on_demand_price": 3.06, "price": 0.93}}, [0],
                     folder="us-west-2c_v100_1")
    ticks = load_cant_be_late(path)
    assert ticks.market.key == "aws/us-west-2/us-west-2c/p3.2xlarge"
    assert ticks.times[0] == 1672531200.0


def test_file_name_still_works_and_metadata_start_wins_over_the_folder_date(
        tmp_path: Path) -> None:
    folder = tmp_path / "aws-02-15-2023"
    folder.mkdir()
    path = write_json(folder / "us-east-1a_v100_1.json",
                      {"metadata": {"gap_seconds": 195, "start_time": 1676498896}, "data": [1]})
    ticks = load_cant_be_late(path)
    assert ticks.times[0] == 1676498896.0
    assert ticks.available[0] == 1  # no price_info: Can't Be Late's own convention


def test_user_on_demand_price_wins_over_the_metadata(tmp_path: Path) -> None:
    path = full_json(tmp_path, gcp_h100_metadata(), [0])
    ticks = load_cant_be_late(path, on_demand_prices={"a3-highgpu-8g": 80.0})
    assert ticks.market.on_demand_price == 80.0


def test_preempted_override_keeps_counts(tmp_path: Path) -> None:
    path = full_json(tmp_path, gcp_h100_metadata(), [3, 0])
    np.testing.assert_array_equal(load_cant_be_late(path, preempted=False).available, [3, 0])


def test_unknown_device_folder_does_not_contradict_the_metadata_type(tmp_path: Path) -> None:
    path = full_json(tmp_path, gcp_h100_metadata(), [0], folder="us-central1-a_h100_16")
    assert load_cant_be_late(path).market.instance_type == "a3-highgpu-8g"


def test_folder_that_names_no_zone_is_not_read(tmp_path: Path) -> None:
    path = full_json(tmp_path, {"price_info": {"on_demand_price": 3.06}}, [0],
                     folder="h100_16_runs")
    fails(lambda: load_cant_be_late(path), path, None, "file name", "'full.json'",
          "'<zone>_<device>.json', a '<zone>_<device>' folder, metadata naming the zone")


def test_metadata_zone_contradicting_the_name_is_an_error(tmp_path: Path) -> None:
    path = full_json(tmp_path, {"zone": "us-east-1a"}, [0], folder="us-east-1c_v100_1")
    fails(lambda: load_cant_be_late(path), path, "metadata", "zone", "'us-east-1a'",
          "'us-east-1c' as the file or folder name gives, or the zone= argument to choose")
    assert load_cant_be_late(path, zone="us-east-1a").market.zone == "us-east-1a"


def test_metadata_type_contradicting_a_known_device_is_an_error(tmp_path: Path) -> None:
    path = full_json(tmp_path, {"instance_type": "p3.8xlarge"}, [0], folder="us-east-1c_v100_1")
    fails(lambda: load_cant_be_late(path), path, "metadata", "instance_type", "'p3.8xlarge'",
          "'p3.2xlarge' as the file or folder name gives")


def test_two_metadata_keys_for_one_field_must_agree(tmp_path: Path) -> None:
    path = full_json(tmp_path, gcp_h100_metadata(zone="us-central1-b"), [0])
    fails(lambda: load_cant_be_late(path), path, "metadata.price_info", "zone",
          "'us-central1-b'", "'us-central1-a' as metadata.zone gives")


def test_metadata_region_must_be_the_zones(tmp_path: Path) -> None:
    path = full_json(tmp_path, gcp_h100_metadata(region="europe-west4"), [0])
    fails(lambda: load_cant_be_late(path), path, "metadata", "region", "'europe-west4'",
          "'us-central1' as the zone gives")


@pytest.mark.parametrize(("start", "shown"), [("yesterday", "'yesterday'"), (True, "= True"),
                                              ([2025], "[2025]")])
def test_bad_start_time(tmp_path: Path, start: object, shown: str) -> None:
    path = full_json(tmp_path, {**gcp_h100_metadata(), "start_time": start}, [0])
    fails(lambda: load_cant_be_late(path), path, "metadata", "start_time", shown,
          "Unix seconds or an ISO-8601 time (UTC when it carries no offset)")


@pytest.mark.parametrize(("price_info", "key", "shown", "expected"), [
    ({"on_demand_price": "dear"}, "on_demand_price", "'dear'", "a number > 0"),
    ({"price": -1}, "price", "= -1", "a number > 0"),
    ({"zone": ""}, "zone", "= ''", "a non-empty string"),
])
def test_bad_price_info_values(tmp_path: Path, price_info: dict, key: str, shown: str,
                               expected: str) -> None:
    path = full_json(tmp_path, {"price_info": price_info}, [0], folder="us-east-1c_v100_1")
    fails(lambda: load_cant_be_late(path), path, "metadata.price_info", key, shown, expected)


def test_price_info_must_be_an_object(tmp_path: Path) -> None:
    path = full_json(tmp_path, {"price_info": 3.06}, [0], folder="us-east-1c_v100_1")
    fails(lambda: load_cant_be_late(path), path, "metadata", "price_info", "'number'",
          "an object")


def test_preemption_marks_are_zero_or_one(tmp_path: Path) -> None:
    path = full_json(tmp_path, gcp_h100_metadata(), [0, 2])
    fails(lambda: load_cant_be_late(path), path, "data[1]", "data", "= 2",
          "0 or 1: with metadata.price_info, data marks preempted ticks (1 = preempted)")
