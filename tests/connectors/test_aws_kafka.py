"""The EC2 connector behind the runtime, on a real broker and a local moto EC2: a replayed
workload's decisions end in exactly the instances they ask for, a second delivery launches
nothing, and a worker killed between applying and committing launches nothing twice."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import boto3
import pytest
from prometheus_client import CollectorRegistry

from connectors.aws import (
    TAG_DECISION,
    TAG_JOB,
    TAG_LIFECYCLE,
    TAG_MARKET,
    AwsConnector,
    AwsOptions,
)
from connectors.holding import Holding
from connectors.limits import DecisionLimits, Limited
from connectors.metrics import RefusalMetrics
from streams.contract import ProvisioningDecision
from tests.connectors.helpers import (
    committed,
    decision,
    final_holdings,
    publish,
    read_all,
    replay,
)
from tests.connectors.memory_connector import MemoryConnector
from tests.connectors.runtime_harness import outcome_count, run_until_handled

pytestmark = pytest.mark.kafka

REPO = Path(__file__).resolve().parents[2]
REGIONS = ("us-east-1", "us-west-2")
AMI = "ami-12345678"


def busiest_prefix(decisions: list[ProvisioningDecision]) -> list[ProvisioningDecision]:
    """The decisions up to the moment the most jobs hold instances (the replay ends with
    every job released, which would leave nothing to check)."""
    best, most = 0, -1
    for n in range(1, len(decisions) + 1):
        if len(final_holdings(decisions[:n])) >= most:
            best, most = n, len(final_holdings(decisions[:n]))
    return decisions[:best]


@pytest.fixture(scope="module")
def decisions() -> list[ProvisioningDecision]:
    run = replay(seed=2, n_markets=3, days=3, n_jobs=6)
    prefix = busiest_prefix(run.decisions)
    assert len(final_holdings(prefix)) >= 2
    assert {d.market.split("/")[1] for d in prefix} == set(REGIONS)
    return prefix


def every_instance(endpoint: str) -> list[dict]:
    """All instances in every region, whatever their state."""
    found = []
    for region in REGIONS:
        client = boto3.client("ec2", region_name=region, endpoint_url=endpoint)
        for reservation in client.describe_instances()["Reservations"]:
            for raw in reservation["Instances"]:
                found.append({**{t["Key"]: t["Value"] for t in raw.get("Tags", [])},
                              "id": raw["InstanceId"], "state": raw["State"]["Name"],
                              "zone": raw["Placement"]["AvailabilityZone"]})
    return found


def holdings(endpoint: str) -> dict[str, Holding]:
    running = [i for i in every_instance(endpoint) if i["state"] in ("pending", "running")]
    count = Counter((i[TAG_JOB], i[TAG_MARKET], i[TAG_LIFECYCLE]) for i in running)
    out: dict[str, Holding] = {}
    for (job, market, lifecycle), n in count.items():
        held = out.get(job, Holding(market, 0, 0))
        assert held.market == market, f"job {job} holds instances in two markets"
        out[job] = Holding(market, held.spot + n * (lifecycle == "spot"),
                           held.on_demand + n * (lifecycle == "on-demand"))
    return out


def assert_launched_once(endpoint: str, decisions: list[ProvisioningDecision]) -> None:
    """Every instance was launched by one of the decisions, and no decision launched more
    than it asked for."""
    asked = {d.idempotency_key: d for d in decisions}
    per_decision = Counter((i[TAG_DECISION], i[TAG_LIFECYCLE]) for i in every_instance(endpoint))
    for (key, lifecycle), n in per_decision.items():
        d = asked[key]
        assert n <= (d.spot if lifecycle == "spot" else d.on_demand), (key, lifecycle, n)
    for i in every_instance(endpoint):
        d = asked[i[TAG_DECISION]]
        assert (i[TAG_JOB], i[TAG_MARKET], i["zone"]) == (d.job_id, d.market,
                                                           d.market.split("/")[2])


async def launches_in_order(decisions: list[ProvisioningDecision]) -> list[int]:
    memory = MemoryConnector()
    return [(await memory.apply(d)).launched for d in decisions]


async def test_replayed_decisions_end_in_exactly_the_instances_they_ask_for_once(
        kafka_settings, moto_endpoint, decisions, tmp_path):
    await publish(kafka_settings, kafka_settings.topics.decisions, decisions)
    connector = AwsConnector(AwsOptions(image_ids={"*": AMI}, regions=REGIONS,
                                        endpoint_url=moto_endpoint))
    registry = await run_until_handled(kafka_settings, connector, len(decisions), tmp_path)
    assert outcome_count(registry, "aws", "applied") == len(decisions)
    assert holdings(moto_endpoint) == final_holdings(decisions)
    assert_launched_once(moto_endpoint, decisions)
    launched = {i["id"] for i in every_instance(moto_endpoint)}
    assert len(launched) == sum(await launches_in_order(decisions))
    await publish(kafka_settings, kafka_settings.topics.decisions, decisions)
    again = await run_until_handled(kafka_settings, connector, len(decisions), tmp_path)
    assert outcome_count(again, "aws", "skipped") == len(decisions)
    assert {i["id"] for i in every_instance(moto_endpoint)} == launched
    await connector.close()


async def test_decisions_outside_the_limits_are_dead_lettered_without_a_launch(
        kafka_settings, moto_endpoint, tmp_path):
    forged = [decision("job-1", market="aws/eu-north-1/eu-north-1a/p5.48xlarge",
                       spot=10_000, on_demand=10_000),
              decision("job-2", spot=10_000, on_demand=10_000)]
    await publish(kafka_settings, kafka_settings.topics.decisions, forged)
    refusals = CollectorRegistry()
    connector = Limited(
        AwsConnector(AwsOptions(image_ids={"*": AMI}, regions=REGIONS,
                                endpoint_url=moto_endpoint)),
        DecisionLimits(regions=frozenset(REGIONS), instance_types=frozenset({"p3.2xlarge"})),
        RefusalMetrics(refusals, "aws"))
    registry = await run_until_handled(kafka_settings, connector, len(forged), tmp_path)
    assert outcome_count(registry, "aws", "dead_lettered") == 2
    letters = await read_all(kafka_settings, kafka_settings.topics.dead_letters)
    assert [(letter.error_type, letter.reason) for letter in letters] == [
        ("RefusedDecision", "market 'aws/eu-north-1/eu-north-1a/p5.48xlarge': region "
         "'eu-north-1' is not one the connector serves; expected one of us-east-1, us-west-2 "
         "(--region)"),
        ("RefusedDecision", "spot=10000 on_demand=10000: 20,000 instances for one job; "
         "expected at most 64 (--max-instances-per-job)")]
    assert [refusals.get_sample_value("spotsched_connector_decisions_refused_total",
                                      {"connector": "aws", "limit": limit})
            for limit in ("region", "instances_per_job")] == [1, 1]
    assert every_instance(moto_endpoint) == []
    await connector.close()


@pytest.mark.slow  # a connector process, killed and started again
def test_a_worker_killed_between_applying_and_committing_launches_nothing_twice(
        kafka_settings, moto_endpoint, decisions, tmp_path):
    asyncio.run(publish(kafka_settings, kafka_settings.topics.decisions, decisions))
    launches = asyncio.run(launches_in_order(decisions))
    victim = [n for n, launched in enumerate(launches) if launched][2]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOTSCHED_")}
    env.update({"PYTHONPATH": str(REPO),
                "SPOTSCHED_BOOTSTRAP_SERVERS": kafka_settings.bootstrap_servers,
                "SPOTSCHED_TOPICS__DECISIONS": kafka_settings.topics.decisions,
                "SPOTSCHED_TOPICS__DEAD_LETTERS": kafka_settings.topics.dead_letters,
                "SPOTSCHED_TOPICS__MARKET_TICKS": kafka_settings.topics.market_ticks})
    command = [sys.executable, "-m", "streams", "connector", "aws", "--image-id", AMI,
               "--endpoint-url", moto_endpoint, "--group", "aws-test", "--data-dir",
               str(tmp_path / "aws"), *[a for r in REGIONS for a in ("--region", r)],
               "--allowed-instance-types", "p3.2xlarge"]
    log = tmp_path / "aws.log"
    with log.open("w") as out:
        killed = subprocess.run([*command, "--kill-after-apply", str(victim + 1)], env=env,
                                stdout=out, stderr=subprocess.STDOUT, timeout=120, check=False)
    assert killed.returncode == -signal.SIGKILL, log.read_text()[-3000:]
    victim_key = decisions[victim].idempotency_key
    assert {i[TAG_DECISION] for i in every_instance(moto_endpoint)} >= {victim_key}
    with log.open("a") as out:
        restarted = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 90
            while asyncio.run(committed(kafka_settings, "aws-test")) != len(decisions):
                assert restarted.poll() is None and time.monotonic() < deadline, \
                    log.read_text()[-3000:]
                time.sleep(0.5)
        finally:
            restarted.send_signal(signal.SIGTERM)
            restarted.wait(timeout=30)
    assert restarted.returncode == 0
    reapplied = re.findall(rf"applied {re.escape(victim_key)} \(.*\): launched (\d+),",
                           log.read_text())
    assert reapplied == ["0"]
    assert holdings(moto_endpoint) == final_holdings(decisions)
    assert_launched_once(moto_endpoint, decisions)
    assert len(every_instance(moto_endpoint)) == sum(launches)
