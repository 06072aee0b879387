"""A connector refuses what it was not asked to do: markets outside its catalogue or regions,
instance types not allowed, more instances than its caps; the connector never sees them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from connectors.aws import AwsConnector, AwsOptions
from connectors.limits import DecisionLimits, Limited, RefusedDecision
from connectors.metrics import RefusalMetrics
from connectors.worker import WorkerOptions, decision_limits
from streams.settings import Settings
from tests.connectors.helpers import MARKET, OTHER_MARKET, decision
from tests.connectors.memory_connector import MemoryConnector

FORGED_MARKET = "aws/eu-north-1/eu-north-1a/p5.48xlarge"
LIMITS = DecisionLimits(markets=frozenset({MARKET, OTHER_MARKET}),
                        regions=frozenset({"us-east-1", "us-west-2"}),
                        instance_types=frozenset({"p3.2xlarge"}),
                        max_instances_per_job=8, max_instances=12)


def limited(inner: Any, limits: DecisionLimits = LIMITS) -> tuple[Limited, CollectorRegistry]:
    registry = CollectorRegistry()
    return Limited(inner, limits, RefusalMetrics(registry, inner.name)), registry


def refused(registry: CollectorRegistry, limit: str, connector: str = "memory") -> float:
    return registry.get_sample_value("spotsched_connector_decisions_refused_total",
                                     {"connector": connector, "limit": limit}) or 0.0


@pytest.mark.parametrize(("market", "spot", "on_demand", "limit", "reason"), [
    (FORGED_MARKET, 10_000, 10_000, "region",
     "market 'aws/eu-north-1/eu-north-1a/p5.48xlarge': region 'eu-north-1' is not one the "
     "connector serves; expected one of us-east-1, us-west-2 (--region)"),
    ("aws/us-east-1/us-east-1b/p3.2xlarge", 0, 1, "market",
     "market 'aws/us-east-1/us-east-1b/p3.2xlarge': not in the connector's catalogue; "
     "expected one of its 2 markets"),
    (MARKET, 10_000, 10_000, "instances_per_job",
     "spot=10000 on_demand=10000: 20,000 instances for one job; expected at most 8 "
     "(--max-instances-per-job)"),
])
async def test_a_decision_outside_the_limits_is_refused_before_the_connector_sees_it(
        market, spot, on_demand, limit, reason):
    inner = MemoryConnector()
    connector, registry = limited(inner)
    with pytest.raises(RefusedDecision) as caught:
        await connector.apply(decision(market=market, spot=spot, on_demand=on_demand))
    assert (caught.value.limit, str(caught.value)) == (limit, reason)
    assert inner.decisions == []
    assert refused(registry, limit) == 1


async def test_an_instance_type_not_allowed_is_refused_even_in_the_catalogue():
    other_type = "aws/us-east-1/us-east-1a/p5.48xlarge"
    connector, registry = limited(MemoryConnector(), DecisionLimits(
        markets=frozenset({MARKET, other_type}), instance_types=frozenset({"p3.2xlarge"})))
    with pytest.raises(RefusedDecision, match=r"instance type 'p5\.48xlarge': expected one of "
                       r"p3\.2xlarge \(--allowed-instance-types\)"):
        await connector.apply(decision(market=other_type, on_demand=1))
    assert refused(registry, "instance_type") == 1


async def test_the_total_counts_each_jobs_latest_decision_and_a_release_frees_its_share():
    inner = MemoryConnector()
    connector, registry = limited(inner)
    await connector.apply(decision("job-1", spot=4, on_demand=4))
    await connector.apply(decision("job-2", on_demand=4))
    with pytest.raises(RefusedDecision, match="with the 12 instances of the other jobs, 13 in "
                       r"all; expected at most 12 \(--max-instances\)"):
        await connector.apply(decision("job-3", spot=1))
    await connector.apply(decision("job-1", epoch=480001, spot=8))  # its own share replaced
    await connector.apply(decision("job-1", epoch=480002, release="finished"))
    await connector.apply(decision("job-3", epoch=480002, spot=8))
    assert refused(registry, "instances") == 1
    assert set(inner.holdings) == {"job-2", "job-3"}


async def test_a_decision_that_holds_nothing_is_checked_for_its_region_alone():
    connector, registry = limited(MemoryConnector())
    dropped = "aws/us-east-1/us-east-1f/p2.xlarge"  # a market since dropped from the limits
    await connector.apply(decision(market=dropped, release="cancelled"))
    with pytest.raises(RefusedDecision, match="region 'eu-north-1'"):
        await connector.apply(decision(market=FORGED_MARKET, release="cancelled"))
    assert refused(registry, "region") == 1


class RecordingEc2:
    """EC2 that records the calls made to it and answers none."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        raise AssertionError(f"EC2 {name} called")


async def test_the_aws_connector_makes_no_ec2_call_for_a_refused_decision():
    ec2 = RecordingEc2()
    aws = AwsConnector(AwsOptions(image_ids={"*": "ami-1"}), client_for=lambda region: ec2)
    connector, registry = limited(aws)
    for market in (FORGED_MARKET, MARKET):
        with pytest.raises(RefusedDecision):
            await connector.apply(decision(market=market, spot=10_000, on_demand=10_000))
    assert ec2.calls == []
    assert refused(registry, "region", "aws") == refused(registry, "instances_per_job",
                                                         "aws") == 1


def catalogue(tmp_path: Path) -> Path:
    path = tmp_path / "markets.json"
    path.write_text(json.dumps({MARKET: 3.06, "aws/us-west-2/us-west-2a/g5.xlarge": 1.0,
                                "gcp/us-central1/us-central1-a/a2-highgpu-1g": 3.67}))
    return path


def test_the_aws_connector_takes_its_limits_from_its_catalogue(tmp_path):
    limits = decision_limits(Settings(markets_file=catalogue(tmp_path)),
                             WorkerOptions("aws", aws_image_ids={"*": "ami-1"}))
    assert limits == DecisionLimits(
        markets=frozenset({MARKET, "aws/us-west-2/us-west-2a/g5.xlarge"}),
        regions=frozenset({"us-east-1", "us-west-2"}),
        instance_types=frozenset({"p3.2xlarge", "g5.xlarge"}),
        max_instances_per_job=64, max_instances=256)


def test_the_aws_connector_needs_regions_and_instance_types_to_start():
    with pytest.raises(ValueError, match="--region and --allowed-instance-types, or a "
                       "catalogue"):
        decision_limits(Settings(), WorkerOptions("aws", aws_image_ids={"*": "ami-1"},
                                                  aws_regions=("us-east-1",)))
    limits = decision_limits(Settings(), WorkerOptions(
        "aws", aws_image_ids={"*": "ami-1"}, aws_regions=("us-east-1",),
        allowed_instance_types=("p3.2xlarge",), max_instances=10))
    assert limits == DecisionLimits(regions=frozenset({"us-east-1"}),
                                    instance_types=frozenset({"p3.2xlarge"}), max_instances=10)


def test_the_sim_is_capped_and_the_log_connector_is_not():
    assert decision_limits(Settings(), WorkerOptions("sim")) == DecisionLimits()
    assert decision_limits(Settings(), WorkerOptions("log")) is None
