"""Spot price history served by a moto server on loopback.

moto's ``DescribeSpotPriceHistory`` (moto 5.2) answers every request with one generated record
per zone offering the type in its offering data (none for p3 types): price 0.00001 at
2006-01-02T15:04:05Z, ProductDescription "Linux/UNIX (Amazon VPC)" whatever product was asked
for, ignoring the time window and pagination. The moto server runs in
the test process, so :class:`SeededHistory` replaces that handler with one that answers from
seeded records the way EC2 documents it: only the requested instance types, products and
zones of the request's region; the changes within ``[StartTime, EndTime]`` plus, per market,
the last change before ``StartTime`` (the price in force then); newest first; ``MaxResults``
per page with a ``NextToken``. Requests still travel through boto3, HTTP and moto's request
parsing and response serialisation; ``fail_next`` makes the next calls answer with an EC2
error code instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest
from moto.core.responses import ActionResult
from moto.ec2.exceptions import EC2ClientError
from moto.ec2.responses.spot_instances import SpotInstances

PRODUCT = "Linux/UNIX"


@dataclass(frozen=True)
class Record:
    zone: str
    instance_type: str
    time: float
    price: float
    product: str = PRODUCT


@dataclass
class SeededHistory:
    records: list[Record] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)
    requests: list[dict] = field(default_factory=list)

    def add(self, zone: str, instance_type: str, changes: Iterable[tuple[float, float]],
            product: str = PRODUCT) -> None:
        self.records += [Record(zone, instance_type, t, p, product) for t, p in changes]

    def fail_next(self, code: str, message: str, times: int = 1) -> None:
        self.failures += [(code, message)] * times

    def answer(self, request: SpotInstances) -> ActionResult:
        if self.failures:
            raise EC2ClientError(*self.failures.pop(0))
        start, end = request._get_param("StartTime"), request._get_param("EndTime")
        types = set(request._get_param("InstanceTypes") or [])
        products = set(request._get_param("ProductDescriptions") or [])
        zones = set(request._filters_from_querystring().get("availability-zone", []))
        self.requests.append({"region": request.region, "start": start, "end": end,
                              "types": types, "zones": zones})
        low = _seconds(start) if start else float("-inf")
        high = _seconds(end) if end else float("inf")
        chosen = [r for r in self.records
                  if r.zone.startswith(request.region) and (not types or r.instance_type in types)
                  and (not products or r.product in products) and (not zones or r.zone in zones)]
        window = [r for r in chosen if low <= r.time <= high]
        for market in {(r.zone, r.instance_type, r.product) for r in chosen}:
            before = [r for r in chosen if (r.zone, r.instance_type, r.product) == market
                      and r.time < low]
            if before:
                window.append(max(before, key=lambda r: r.time))
        window.sort(key=lambda r: (-r.time, r.zone, r.instance_type))
        size = int(request._get_param("MaxResults") or 1000)
        offset = int(request._get_param("NextToken") or 0)
        page = window[offset:offset + size]
        result: dict = {"SpotPriceHistory": [
            {"AvailabilityZone": r.zone, "InstanceType": r.instance_type,
             "ProductDescription": r.product, "SpotPrice": f"{r.price:.6f}",
             "Timestamp": datetime.fromtimestamp(r.time, UTC)} for r in page]}
        if offset + size < len(window):
            result["NextToken"] = str(offset + size)
        return ActionResult(result)


def _seconds(value: datetime) -> float:
    """moto parses request times as naive UTC datetimes."""
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


@contextmanager
def seeded(monkeypatch: pytest.MonkeyPatch) -> Iterator[SeededHistory]:
    history = SeededHistory()
    monkeypatch.setattr(SpotInstances, "describe_spot_price_history",
                        lambda self: history.answer(self))
    yield history
