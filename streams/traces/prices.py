"""On-demand list prices of the instance types the traces use, and zone → region naming."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from types import MappingProxyType

ON_DEMAND_USD_PER_HOUR: Mapping[str, float] = MappingProxyType({
    "p3.2xlarge": 3.06,
    "p3.8xlarge": 12.24,
    "p3.16xlarge": 24.48,
    "p2.xlarge": 0.90,
    "p2.8xlarge": 7.20,
    "p2.16xlarge": 14.40,
    "g4dn.xlarge": 0.526,
    "g5.xlarge": 1.006,
    "p4d.24xlarge": 32.7726,
    "p5.48xlarge": 98.32,
})
"""AWS on-demand list prices, USD per instance-hour, Linux, us-east-1."""


class UnknownInstanceTypeError(ValueError):
    """No on-demand price is known for an instance type."""

    def __init__(self, instance_type: str, known: list[str]) -> None:
        self.instance_type = instance_type
        self.known = known
        super().__init__(
            f"instance type {instance_type!r} has no known on-demand price; known types: "
            f"{', '.join(known)}; pass on_demand_prices={{{instance_type!r}: <USD per hour>}}"
        )


def on_demand_price(instance_type: str, overrides: Mapping[str, float] | None = None) -> float:
    """USD per instance-hour from ``overrides`` (instance type → price), else the table."""
    prices = {**ON_DEMAND_USD_PER_HOUR, **(overrides or {})}
    if instance_type not in prices:
        raise UnknownInstanceTypeError(instance_type, sorted(prices))
    price = prices[instance_type]
    if not (isinstance(price, int | float) and math.isfinite(price) and price > 0):
        raise ValueError(
            f"on-demand price of {instance_type!r} = {price!r}: expected a positive finite "
            "USD per instance-hour"
        )
    return float(price)


ZONE_EXPECTED = "an availability zone name such as 'us-east-1a' or 'us-central1-a'"
_ZONE = re.compile(r"(?P<region>[a-z][a-z0-9-]*\d)-?[a-z]")


def region_of_zone(zone: str) -> str:
    """Region of an availability zone: ``us-east-1a`` → ``us-east-1`` (AWS),
    ``us-central1-a`` → ``us-central1`` (GCP)."""
    match = _ZONE.fullmatch(zone)
    if match is None:
        raise ValueError(f"zone {zone!r}: expected {ZONE_EXPECTED}")
    return match["region"]
