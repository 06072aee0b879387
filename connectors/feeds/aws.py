"""EC2 spot prices through boto3's ``DescribeSpotPriceHistory``.

One paginated call per region and window asks for the catalogue's instance types and zones
(``ProductDescriptions`` = the product, ``Linux/UNIX`` by default); records of other markets or
products are dropped. AWS reports price changes only, newest first, and includes the change in
force at the window's start. botocore's own retries are off: the feed runner retries, so that
every attempt is counted and logged. Credentials come from the standard AWS chain and are never
logged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from connectors.aws import CREDENTIAL_ERRORS, FATAL_ERRORS, NETWORK_ERRORS, TRANSIENT_ERRORS
from connectors.feeds.base import PermanentFeedError, PriceChange, TransientFeedError
from solver.market import Market
from streams.contract import utc

PRODUCT = "Linux/UNIX"
PAGE_SIZE = 1000
_CLIENT_CONFIG = Config(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=10,
                        read_timeout=30)


class AwsSpotPriceSource:
    """Spot price history of AWS markets, by region."""

    name = "aws"

    def __init__(self, endpoint_url: str | None = None, product: str = PRODUCT) -> None:
        self.endpoint_url = endpoint_url
        self.product = product
        self._session = boto3.session.Session()
        self._clients: dict[str, Any] = {}

    def _client(self, region: str) -> Any:
        if region not in self._clients:
            self._clients[region] = self._session.client(
                "ec2", region_name=region, endpoint_url=self.endpoint_url, config=_CLIENT_CONFIG)
        return self._clients[region]

    def changes(self, markets: Sequence[Market], start: float,
                end: float) -> dict[str, list[PriceChange]]:
        by_region: dict[str, list[Market]] = {}
        for market in markets:
            by_region.setdefault(market.region, []).append(market)
        out: dict[str, list[PriceChange]] = {}
        for region, regional in sorted(by_region.items()):
            keys = {(m.zone, m.instance_type): m.key for m in regional}
            for record in self._records(region, regional, start, end):
                key = keys.get((record["AvailabilityZone"], record["InstanceType"]))
                if key is not None and record.get("ProductDescription") == self.product:
                    out.setdefault(key, []).append(PriceChange(
                        record["Timestamp"].timestamp(), float(record["SpotPrice"])))
        return {key: sorted(set(changes)) for key, changes in out.items()}

    def _records(self, region: str, markets: Sequence[Market], start: float,
                 end: float) -> list[dict[str, Any]]:
        paginator = self._client(region).get_paginator("describe_spot_price_history")
        request = {
            "StartTime": utc(start), "EndTime": utc(end),
            "InstanceTypes": sorted({m.instance_type for m in markets}),
            "ProductDescriptions": [self.product],
            "Filters": [{"Name": "availability-zone",
                         "Values": sorted({m.zone for m in markets})}],
            "PaginationConfig": {"PageSize": PAGE_SIZE},
        }
        try:
            return [record for page in paginator.paginate(**request)
                    for record in page.get("SpotPriceHistory", [])]
        except (ClientError, BotoCoreError) as exc:
            raise _classified(exc, region, self.endpoint_url) from exc

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()


def _classified(exc: Exception, region: str,
                endpoint_url: str | None) -> TransientFeedError | PermanentFeedError:
    """The runner's view of a failed call, as one line without secrets."""
    where = f"EC2 DescribeSpotPriceHistory in {region}"
    if isinstance(exc, CREDENTIAL_ERRORS):
        return PermanentFeedError(
            f"{where}: no usable AWS credentials ({exc}); expected AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or an instance role")
    if isinstance(exc, NETWORK_ERRORS):
        endpoint = endpoint_url or f"the {region} endpoint"
        return TransientFeedError(f"{where}: cannot reach {endpoint} ({type(exc).__name__})")
    if not isinstance(exc, ClientError):
        return TransientFeedError(f"{where}: {exc}")
    error = exc.response.get("Error", {})
    code, message = str(error.get("Code", "")), " ".join(str(error.get("Message", "")).split())
    if code in FATAL_ERRORS:
        return TransientFeedError(f"{where}: credentials rejected ({code}: {message})")
    if code in TRANSIENT_ERRORS:
        return TransientFeedError(f"{where}: {code}: {message}")
    return PermanentFeedError(f"{where}: {code}: {message}")
