"""On-demand price table and zone naming."""

from __future__ import annotations

import pytest

from streams.traces.prices import (
    ON_DEMAND_USD_PER_HOUR,
    UnknownInstanceTypeError,
    on_demand_price,
    region_of_zone,
)


def test_table_prices() -> None:
    assert on_demand_price("p3.2xlarge") == 3.06
    assert on_demand_price("p2.8xlarge") == 7.20
    assert ON_DEMAND_USD_PER_HOUR["p5.48xlarge"] == 98.32


def test_override_adds_and_replaces() -> None:
    assert on_demand_price("r5.16xlarge", {"r5.16xlarge": 4.032}) == 4.032
    assert on_demand_price("p3.2xlarge", {"p3.2xlarge": 2.5}) == 2.5


def test_unknown_type_names_it_and_the_known_ones() -> None:
    with pytest.raises(UnknownInstanceTypeError) as caught:
        on_demand_price("x9.huge", {"r5.16xlarge": 4.0})
    message = str(caught.value)
    assert "'x9.huge'" in message
    assert "p3.2xlarge" in message and "r5.16xlarge" in message
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
