"""On-demand list prices of GPU instance types (AWS, GCP, Azure), and zone → region naming.

Sources and dates are in ``docs/traces.md`` ("On-demand prices"); every value is USD per
instance-hour, Linux, in the region named there.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from types import MappingProxyType

from solver.traces.errors import PathLike, TraceFormatError

AWS_ON_DEMAND_USD_PER_HOUR: Mapping[str, float] = MappingProxyType({
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
"""AWS on-demand list prices, us-east-1."""

GCP_ON_DEMAND_USD_PER_HOUR: Mapping[str, float] = MappingProxyType({
    "a2-highgpu-1g": 3.673385,
    "a2-highgpu-2g": 7.34677,
    "a2-highgpu-4g": 14.69354,
    "a2-highgpu-8g": 29.38708,
    "a2-megagpu-16g": 55.739504,
    "a2-ultragpu-1g": 5.06879789,
    "a2-ultragpu-2g": 10.13759578,
    "a2-ultragpu-4g": 20.27519156,
    "a2-ultragpu-8g": 40.55038312,
    "a3-highgpu-1g": 11.06124999,
    "a3-highgpu-2g": 22.12249998,
    "a3-highgpu-4g": 44.24499995,
    "a3-highgpu-8g": 88.4899999,
    "a3-megagpu-8g": 92.93758815,
    "g2-standard-4": 0.706832255,
    "g2-standard-8": 0.853624271,
    "g2-standard-12": 1.000416287,
    "g2-standard-16": 1.147208303,
    "g2-standard-24": 2.000832574,
    "g2-standard-32": 1.734376367,
    "g2-standard-48": 4.001665148,
    "g2-standard-96": 8.003330296,
})
"""GCP Compute Engine on-demand prices, us-central1 (a3-megagpu-8g: us-east4)."""

AZURE_ON_DEMAND_USD_PER_HOUR: Mapping[str, float] = MappingProxyType({
    "NC24ads_A100_v4": 3.673,
    "NC48ads_A100_v4": 9.554,
    "NC96ads_A100_v4": 19.108,
    "ND96isr_H100_v5": 98.32,
    "NC4as_T4_v3": 0.526,
    "NC8as_T4_v3": 0.752,
    "NC16as_T4_v3": 1.204,
    "NC64as_T4_v3": 4.352,
})
"""Azure pay-as-you-go Linux prices, East US; sizes are named without the ``Standard_``
prefix, which a lookup ignores."""

ON_DEMAND_USD_PER_HOUR: Mapping[str, float] = MappingProxyType({
    **AWS_ON_DEMAND_USD_PER_HOUR, **GCP_ON_DEMAND_USD_PER_HOUR, **AZURE_ON_DEMAND_USD_PER_HOUR,
})
"""Every built-in on-demand price, by instance type."""

_AZURE_PREFIX = "Standard_"


class UnknownInstanceTypeError(ValueError):
    """No on-demand price is known for an instance type."""

    def __init__(self, instance_type: str, known: list[str]) -> None:
        self.instance_type = instance_type
        self.known = known
        super().__init__(f"instance type {instance_type!r}: expected {self.expected}")

    @property
    def expected(self) -> str:
        """What would have worked, as the ``expected`` part of a one-line error."""
        return (
            "a type with a known on-demand price: pass --on-demand-price "
            f"{self.instance_type}=USD_PER_HOUR or --prices FILE (on_demand_prices= in "
            f"Python); the built-in table has {len(ON_DEMAND_USD_PER_HOUR)} types "
            "(docs/traces.md)"
        )


def on_demand_price(instance_type: str, overrides: Mapping[str, float] | None = None) -> float:
    """USD per instance-hour from ``overrides`` (instance type → price), else the table; an
    Azure size may carry its ``Standard_`` prefix."""
    prices = {**ON_DEMAND_USD_PER_HOUR, **(overrides or {})}
    name = instance_type
    if name not in prices and name.startswith(_AZURE_PREFIX):
        name = name.removeprefix(_AZURE_PREFIX)
    if name not in prices:
        raise UnknownInstanceTypeError(instance_type, sorted(prices))
    price = prices[name]
    if not (isinstance(price, int | float) and math.isfinite(price) and price > 0):
        raise ValueError(
            f"on-demand price of {instance_type!r} = {price!r}: expected a positive finite "
            "USD per instance-hour"
        )
    return float(price)


def priced(
    path: PathLike, where: str | None, field: str, value: object, instance_type: str,
    overrides: Mapping[str, float] | None, alternative: str = "",
) -> float:
    """:func:`on_demand_price`, or a :class:`TraceFormatError` at ``where`` naming ``field``
    and the ``value`` the file gave (``alternative``: a format's own way out, appended)."""
    try:
        return on_demand_price(instance_type, overrides)
    except UnknownInstanceTypeError as error:
        expected = f"{error.expected}; or {alternative}" if alternative else error.expected
        raise TraceFormatError(path, where, field, value, expected) from None


ZONE_EXPECTED = "an availability zone name such as 'us-east-1a' or 'us-central1-a'"
_ZONE = re.compile(r"(?P<region>[a-z][a-z0-9-]*\d)(?P<gcp>-?)[a-z]")


def region_of_zone(zone: str) -> str:
    """Region of an availability zone: ``us-east-1a`` → ``us-east-1`` (AWS),
    ``us-central1-a`` → ``us-central1`` (GCP)."""
    match = _ZONE.fullmatch(zone)
    if match is None:
        raise ValueError(f"zone {zone!r}: expected {ZONE_EXPECTED}")
    return match["region"]


def cloud_of_zone(zone: str) -> str:
    """``gcp`` for zones named ``<region>-<letter>`` (``us-central1-a``), else ``aws``."""
    match = _ZONE.fullmatch(zone)
    return "gcp" if match is not None and match["gcp"] else "aws"
