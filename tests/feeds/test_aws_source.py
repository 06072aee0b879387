"""The AWS price source against a local moto server: what DescribeSpotPriceHistory returns
becomes each market's price changes; throttling, rejected credentials and an unreachable
endpoint are retried a bounded number of times and end in one line."""

from __future__ import annotations

import asyncio
import logging
import socket

import pytest

from connectors.feeds import aws as aws_feed
from connectors.feeds.aws import AwsSpotPriceSource
from connectors.feeds.base import FeedError, PermanentFeedError, PriceChange, TransientFeedError
from connectors.feeds.retry import RateLimitedLog, RetryPolicy, retrying
from solver.market import Market

T0 = 1_736_121_600.0
EAST_A = Market("aws", "us-east-1", "us-east-1a", "p3.2xlarge", 3.06)
EAST_C = Market("aws", "us-east-1", "us-east-1c", "p3.2xlarge", 3.06)
WEST = Market("aws", "us-west-2", "us-west-2a", "p3.8xlarge", 12.24)
FAST = RetryPolicy(attempts=3, backoff_seconds=0.01, max_seconds=0.02)


def fetch(source: AwsSpotPriceSource, policy: RetryPolicy = FAST,
          warnings: RateLimitedLog | None = None) -> dict[str, list[PriceChange]]:
    async def main() -> dict[str, list[PriceChange]]:
        return await retrying(
            lambda: asyncio.to_thread(source.changes, [EAST_A, EAST_C, WEST], T0, T0 + 7200),
            policy, asyncio.Event(), warnings or RateLimitedLog(logging.getLogger("t")),
            "aws spot price history")
    return asyncio.run(main())


def test_changes_of_each_market_with_the_price_in_force_at_the_start(history, moto_endpoint,
                                                                     monkeypatch):
    history.add("us-east-1a", "p3.2xlarge", [(T0 - 9000, 0.9), (T0 - 4000, 0.95),
                                             (T0 + 100, 1.1), (T0 + 5000, 1.2),
                                             (T0 + 9000, 1.3)])
    history.add("us-east-1c", "p3.2xlarge", [(T0 + 300, 0.8)])
    history.add("us-west-2a", "p3.8xlarge", [(T0 - 1, 3.5)])
    history.add("us-east-1a", "p3.8xlarge", [(T0, 9.9)])  # not a catalogue market
    history.add("us-east-1a", "p3.2xlarge", [(T0 + 200, 4.0)], product="Windows")
    monkeypatch.setattr(aws_feed, "PAGE_SIZE", 2)
    source = AwsSpotPriceSource(moto_endpoint)
    changes = fetch(source)
    source.close()
    assert changes == {
        EAST_A.key: [PriceChange(T0 - 4000, 0.95), PriceChange(T0 + 100, 1.1),
                     PriceChange(T0 + 5000, 1.2)],
        EAST_C.key: [PriceChange(T0 + 300, 0.8)],
        WEST.key: [PriceChange(T0 - 1, 3.5)],
    }
    regions = [r["region"] for r in history.requests]
    assert regions.count("us-east-1") >= 2 and "us-west-2" in regions  # pages
    east = next(r for r in history.requests if r["region"] == "us-east-1")
    assert east["types"] == {"p3.2xlarge"} and east["zones"] == {"us-east-1a", "us-east-1c"}


def test_throttling_is_retried_and_its_warnings_do_not_flood(history, moto_endpoint, caplog):
    history.add("us-east-1a", "p3.2xlarge", [(T0, 1.0)])
    history.fail_next("RequestLimitExceeded", "Request limit exceeded.", times=2)
    caplog.set_level(logging.WARNING)
    warnings = RateLimitedLog(logging.getLogger("feed-test"), interval=3600)
    changes = fetch(AwsSpotPriceSource(moto_endpoint), warnings=warnings)
    assert changes[EAST_A.key] == [PriceChange(T0, 1.0)]
    logged = [r.getMessage() for r in caplog.records if r.name == "feed-test"]
    assert len(logged) == 1, logged
    assert "attempt 1 of 3 failed (EC2 DescribeSpotPriceHistory in us-east-1: " \
           "RequestLimitExceeded: Request limit exceeded.); retrying in 0.01 s" in logged[0]


def test_rejected_credentials_give_up_after_the_attempts_in_one_line(history, moto_endpoint):
    history.fail_next("AuthFailure", "AWS was not able to validate the provided access "
                      "credentials", times=5)
    with pytest.raises(FeedError) as caught:
        fetch(AwsSpotPriceSource(moto_endpoint))
    message = str(caught.value)
    assert message.startswith("aws spot price history failed 3 times, giving up; last: EC2 "
                              "DescribeSpotPriceHistory in us-east-1: credentials rejected "
                              "(AuthFailure: AWS was not able to validate")
    assert "\n" not in message and "testing" not in message


def test_an_unreachable_endpoint_gives_up_in_one_line(aws_credentials):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(FeedError) as caught:
        fetch(AwsSpotPriceSource(f"http://127.0.0.1:{port}"))
    assert str(caught.value) == (
        "aws spot price history failed 3 times, giving up; last: EC2 DescribeSpotPriceHistory "
        f"in us-east-1: cannot reach http://127.0.0.1:{port} (EndpointConnectionError)")


def test_an_invalid_request_is_not_retried(history, moto_endpoint):
    history.fail_next("InvalidParameterValue", "Value (p9.huge) for parameter instanceType "
                      "is invalid.")
    with pytest.raises(PermanentFeedError, match="InvalidParameterValue: Value"):
        fetch(AwsSpotPriceSource(moto_endpoint))
    assert history.failures == []


def test_no_credentials_at_all_is_permanent(history, moto_endpoint, monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(PermanentFeedError, match="no usable AWS credentials"):
        AwsSpotPriceSource(moto_endpoint).changes([EAST_A], T0, T0 + 60)


def test_transient_and_permanent_are_feed_errors():
    assert issubclass(TransientFeedError, FeedError) and issubclass(PermanentFeedError,
                                                                    FeedError)
