"""On-demand price table and zone naming."""

from __future__ import annotations

import csv
import gzip
import io

import pytest

from solver.traces.prices import (
    ON_DEMAND_USD_PER_HOUR,
    UnknownInstanceTypeError,
    cloud_of_zone,
    on_demand_price,
    region_of_zone,
)
from tests.traces_dir import needs_traces, traces_dir


def test_table_prices() -> None:
    assert on_demand_price("p3.2xlarge") == 3.06
    assert on_demand_price("p2.8xlarge") == 7.20
    assert ON_DEMAND_USD_PER_HOUR["p5.48xlarge"] == 98.32


def test_override_adds_and_replaces() -> None:
    assert on_demand_price("r5.16xlarge", {"r5.16xlarge": 4.032}) == 4.032
    assert on_demand_price("p3.2xlarge", {"p3.2xlarge": 2.5}) == 2.5


def test_unknown_type_names_it_and_the_options_that_price_it() -> None:
    with pytest.raises(UnknownInstanceTypeError) as caught:
        on_demand_price("x9.huge", {"r5.16xlarge": 4.0})
    message = str(caught.value)
    assert message.startswith("instance type 'x9.huge': expected a type with a known on-demand")
    assert "--on-demand-price x9.huge=USD_PER_HOUR or --prices FILE" in message
    assert "\n" not in message
    assert caught.value.known == sorted([*ON_DEMAND_USD_PER_HOUR, "r5.16xlarge"])


@pytest.mark.parametrize("price", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_override_is_rejected(price: float) -> None:
    with pytest.raises(ValueError, match="expected a positive finite"):
        on_demand_price("p3.2xlarge", {"p3.2xlarge": price})


@pytest.mark.parametrize(
    ("zone", "region"),
    [("us-east-1a", "us-east-1"), ("eu-west-2c", "eu-west-2"), ("us-central1-a", "us-central1")],
)
def test_region_of_zone(zone: str, region: str) -> None:
    assert region_of_zone(zone) == region


@pytest.mark.parametrize("zone", ["us-east-1", "zone", "", "US-EAST-1A"])
def test_region_of_bad_zone(zone: str) -> None:
    with pytest.raises(ValueError, match="expected an availability zone name"):
        region_of_zone(zone)


@pytest.mark.parametrize(("instance_type", "price"), [
    ("a2-highgpu-1g", 3.673385), ("a3-highgpu-8g", 88.4899999), ("g2-standard-4", 0.706832255),
    ("NC24ads_A100_v4", 3.673), ("ND96isr_H100_v5", 98.32), ("NC4as_T4_v3", 0.526),
])
def test_gcp_and_azure_gpu_types_are_in_the_table(instance_type: str, price: float) -> None:
    assert on_demand_price(instance_type) == price


def test_azure_sizes_may_carry_their_standard_prefix() -> None:
    assert on_demand_price("Standard_NC24ads_A100_v4") == on_demand_price("NC24ads_A100_v4")
    assert on_demand_price("Standard_NC4as_T4_v3", {"NC4as_T4_v3": 0.5}) == 0.5


UNPRICED = {"a3-edgegpu-8g", "a3-edgegpu-8g-nolssd", "a3-ultragpu-8g", "a3-ultragpu-8g-nolssd"}
"""GCP types of the SpotLake daily file that the price source does not list in us-central1."""


@pytest.mark.traces
@needs_traces
def test_every_gcp_and_azure_type_of_the_spotlake_daily_file_is_priced() -> None:
    path = traces_dir() / "spotlake-daily-via-ec2-spot-dashboard/gpu_spot_price_daily.csv.gz"
    rows = csv.DictReader(io.StringIO(gzip.decompress(path.read_bytes()).decode()))
    listed = {row["instance_type"] for row in rows if row["cloud"] in ("gcp", "azure")}
    assert len(listed) > 25
    assert listed - set(ON_DEMAND_USD_PER_HOUR) == UNPRICED


@pytest.mark.parametrize(("zone", "cloud"), [("us-east-1a", "aws"), ("us-central1-a", "gcp"),
                                             ("europe-west4-b", "gcp"), ("zone", "aws")])
def test_cloud_of_zone(zone: str, cloud: str) -> None:
    assert cloud_of_zone(zone) == cloud
