"""The EC2 connector against a local moto server: launches, tags, reconciliation, refusals,
interruptions, client tokens and error kinds."""

from __future__ import annotations

import functools
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from connectors.aws import (
    TAG_DECISION,
    TAG_JOB,
    TAG_LIFECYCLE,
    TAG_MARKET,
    AwsConnector,
    AwsOptions,
    client_token,
)
from connectors.base import FatalError, PermanentError, TransientError
from streams.contract import AvailabilityTick, ProvisioningDecision
from tests.connectors.helpers import MARKET, OTHER_MARKET, decision

REGIONS = ("us-east-1", "us-west-2")


@functools.cache
def ec2(endpoint: str, region: str = "us-east-1"):
    return boto3.client("ec2", region_name=region, endpoint_url=endpoint)


def instances(endpoint: str, job_id: str | None = None, states=("pending", "running")):
    """Instances of every region (of one job), as (id, market, lifecycle, tags)."""
    filters = [{"Name": "instance-state-name", "Values": list(states)}]
    if job_id is not None:
        filters.append({"Name": f"tag:{TAG_JOB}", "Values": [job_id]})
    found = []
    for region in REGIONS:
        for reservation in ec2(endpoint, region).describe_instances(
                Filters=filters)["Reservations"]:
            for raw in reservation["Instances"]:
                tags = {t["Key"]: t["Value"] for t in raw.get("Tags", [])}
                found.append((raw["InstanceId"], tags.get(TAG_MARKET), tags.get(TAG_LIFECYCLE),
                              tags, raw))
    return found


def counts(endpoint: str, job_id: str) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for _, market, lifecycle, _, _ in instances(endpoint, job_id):
        out[market, lifecycle] = out.get((market, lifecycle), 0) + 1
    return out


@pytest.fixture
def connector(moto_endpoint):
    return AwsConnector(AwsOptions(image_ids={"*": "ami-12345678"}, regions=REGIONS,
                                   endpoint_url=moto_endpoint), clock=lambda: 1.7e9)


async def test_launches_tagged_spot_and_on_demand_in_the_markets_zone(connector, moto_endpoint):
    d = decision("job-1", spot=2, on_demand=1)
    applied = await connector.apply(d)
    assert (applied.launched, applied.terminated, applied.refused) == (3, 0, 0)
    found = instances(moto_endpoint, "job-1")
    assert len(found) == 3
    for _, _, lifecycle, tags, raw in found:
        assert tags == {TAG_JOB: "job-1", TAG_DECISION: d.idempotency_key, TAG_MARKET: MARKET,
                        TAG_LIFECYCLE: lifecycle}
        assert raw["Placement"]["AvailabilityZone"] == "us-east-1a"
        assert raw["InstanceType"] == "p3.2xlarge"
        assert raw["ImageId"] == "ami-12345678"
        wanted = d.spot if lifecycle == "spot" else d.on_demand
        assert raw["ClientToken"] in {client_token(d.idempotency_key, lifecycle, held)
                                      for held in range(wanted)}
        assert (raw.get("InstanceLifecycle") == "spot") == (lifecycle == "spot")
    assert counts(moto_endpoint, "job-1") == {(MARKET, "spot"): 2, (MARKET, "on-demand"): 1}
    again = await connector.apply(d)
    assert (again.launched, again.terminated) == (0, 0)
    await connector.close()


async def test_reconciles_scale_down_moves_across_regions_and_release(connector, moto_endpoint):
    await connector.apply(decision("job-1", epoch=480001, spot=3, on_demand=1))
    await connector.apply(decision("job-2", epoch=480001, on_demand=1))
    first_spot = {i for i, _, lc, _, _ in instances(moto_endpoint, "job-1") if lc == "spot"}
    down = await connector.apply(decision("job-1", epoch=480002, spot=1, on_demand=2))
    assert (down.launched, down.terminated) == (1, 2)
    kept = {i for i, _, lc, _, _ in instances(moto_endpoint, "job-1") if lc == "spot"}
    assert len(kept) == 1 and kept <= first_spot
    moved = await connector.apply(decision("job-1", epoch=480003, market=OTHER_MARKET, spot=2))
    assert (moved.launched, moved.terminated) == (2, 3)
    assert counts(moto_endpoint, "job-1") == {(OTHER_MARKET, "spot"): 2}
    zones = {raw["Placement"]["AvailabilityZone"] for *_, raw in instances(moto_endpoint, "job-1")}
    assert zones == {"us-west-2a"}
    released = await connector.apply(decision("job-1", epoch=480004, release="finished"))
    assert (released.launched, released.terminated) == (0, 2)
    assert counts(moto_endpoint, "job-1") == {}
    assert counts(moto_endpoint, "job-2") == {(MARKET, "on-demand"): 1}


class Refusing:
    """An EC2 client that answers spot launches with an error code and passes the rest on."""

    def __init__(self, client: Any, code: str, lifecycles: tuple[str, ...] = ("spot",)) -> None:
        self.client = client
        self.code = code
        self.lifecycles = lifecycles

    def run_instances(self, **params: Any) -> Any:
        spot = "InstanceMarketOptions" in params
        if ("spot" if spot else "on-demand") in self.lifecycles:
            raise ClientError({"Error": {"Code": self.code, "Message": "no luck"}},
                              "RunInstances")
        return self.client.run_instances(**params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


def refusing(endpoint: str, code: str, lifecycles=("spot",)) -> AwsConnector:
    return AwsConnector(AwsOptions(image_ids={"*": "ami-12345678"}, endpoint_url=endpoint),
                        client_for=lambda region: Refusing(ec2(endpoint, region), code,
                                                           lifecycles),
                        clock=lambda: 1.7e9)


@pytest.mark.parametrize("code", ["InsufficientInstanceCapacity", "SpotMaxPriceTooLow"])
async def test_refused_spot_is_reported_as_an_availability_tick(moto_endpoint, code):
    applied = await refusing(moto_endpoint, code).apply(decision("job-1", spot=2, on_demand=1))
    assert (applied.launched, applied.refused) == (1, 2)
    assert applied.details == (f"spot refused in {MARKET}: {code}",)
    (tick,) = applied.events
    assert isinstance(tick, AvailabilityTick)
    assert (tick.market, tick.available, tick.reason, tick.event_time.timestamp()) == (
        MARKET, 0, "refused", 1.7e9)


@pytest.mark.parametrize(("code", "lifecycles", "kind", "message"), [
    ("InsufficientInstanceCapacity", ("on-demand",), TransientError,
     "EC2 RunInstances failed with InsufficientInstanceCapacity: no luck"),
    ("RequestLimitExceeded", ("spot", "on-demand"), TransientError, "RequestLimitExceeded"),
    ("IdempotentParameterMismatch", ("on-demand",), TransientError, "IdempotentParameter"),
    ("InvalidAMIID.NotFound", ("on-demand",), PermanentError, "InvalidAMIID.NotFound"),
])
async def test_ec2_errors_are_sorted_into_transient_and_permanent(
        moto_endpoint, code, lifecycles, kind, message):
    with pytest.raises(kind, match=message):
        await refusing(moto_endpoint, code, lifecycles).apply(decision("job-1", on_demand=1))


async def test_credential_errors_stop_the_worker_instead_of_dead_lettering(moto_endpoint):
    with pytest.raises(FatalError, match="AuthFailure"):
        await refusing(moto_endpoint, "AuthFailure", ("on-demand",)).apply(
            decision("job-1", on_demand=1))


async def test_markets_of_other_clouds_are_permanent_errors(connector):
    with pytest.raises(PermanentError, match=r"expected an 'aws/\.\.\.' market"):
        await connector.apply(decision(market="gcp/us-central1/us-central1-a/a2-highgpu-1g",
                                       on_demand=1))


async def test_a_spot_interruption_is_reported_once_and_the_instance_replaced(
        connector, moto_endpoint):
    from moto.backends import get_backend
    from moto.ec2.models.instances import StateReason

    await connector.apply(decision("job-1", epoch=480001, spot=2))
    lost = next(i for i, *_ in instances(moto_endpoint, "job-1"))
    backend = get_backend("ec2")["123456789012"]["us-east-1"]
    backend.get_instance(lost).terminate()
    backend.get_instance(lost).state_reason = StateReason(
        "Server.SpotInstanceTermination: Spot instance termination",
        "Server.SpotInstanceTermination")
    applied = await connector.apply(decision("job-1", epoch=480002, spot=2))
    assert (applied.launched, applied.preempted) == (1, 1)
    assert applied.events == (AvailabilityTick(event_time=1.7e9, market=MARKET, available=1,
                                               reason="preempted"),)
    assert counts(moto_endpoint, "job-1") == {(MARKET, "spot"): 2}
    again = await connector.apply(decision("job-1", epoch=480003, spot=2))
    assert (again.launched, again.preempted, again.events) == (0, 0, ())


class TokenHonouring:
    """EC2 as the real one behaves for client tokens, and with a describe that lags one call
    behind a launch (eventual consistency)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.launches: dict[str, Any] = {}
        self.hidden: set[str] = set()

    def run_instances(self, **params: Any) -> Any:
        token = params["ClientToken"]
        if token not in self.launches:
            self.launches[token] = self.client.run_instances(**params)
            self.hidden |= {i["InstanceId"] for i in self.launches[token]["Instances"]}
        return self.launches[token]

    def get_paginator(self, name: str) -> Any:
        hidden, self.hidden = self.hidden, set()
        pages = list(self.client.get_paginator(name).paginate(
            Filters=[{"Name": f"tag:{TAG_JOB}", "Values": ["job-1"]}]))
        for page in pages:
            for reservation in page["Reservations"]:
                reservation["Instances"] = [i for i in reservation["Instances"]
                                            if i["InstanceId"] not in hidden]

        class Paginator:
            def paginate(self, **_: Any) -> list[Any]:
                return pages

        return Paginator()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


async def test_the_client_token_stops_a_repeated_launch_that_describe_cannot_see_yet(
        moto_endpoint):
    fake = TokenHonouring(ec2(moto_endpoint))
    connector = AwsConnector(AwsOptions(image_ids={"*": "ami-12345678"}),
                             client_for=lambda region: fake)
    d = decision("job-1", spot=1, on_demand=2)
    await connector.apply(d)
    fake.hidden = {i for i, *_ in instances(moto_endpoint, "job-1")}  # as if just launched
    again = await connector.apply(d)
    assert again.launched == 3  # EC2 answered with the first launch's instances
    assert counts(moto_endpoint, "job-1") == {(MARKET, "spot"): 1, (MARKET, "on-demand"): 2}


def test_options_need_an_image_or_a_launch_template():
    with pytest.raises(ValueError, match="expected an AMI"):
        AwsOptions()
    assert AwsOptions(image_ids={"*": "ami-1", "us-west-2": "ami-2"}).image_for("us-west-2") \
        == "ami-2"
    assert AwsOptions(launch_template="gpu").image_for("eu-west-1") is None


def forged(job_id: str, **counts: int) -> ProvisioningDecision:
    """A decision for ``job_id`` made past the contract, which refuses such an id."""
    d = decision("job-x", **counts)
    return d.model_copy(update={"job_id": job_id, "key": job_id,
                                "idempotency_key": f"{job_id}:{d.epoch}:{d.revision}"})


async def others_running(connector: AwsConnector, moto_endpoint: str) -> set[str]:
    """Five jobs of ordinary ids with an instance each, in both regions; their instance ids."""
    for k, market in enumerate((MARKET, OTHER_MARKET, MARKET, OTHER_MARKET, MARKET)):
        await connector.apply(decision(f"job-{k}", market=market, on_demand=1))
    return {i for i, *_ in instances(moto_endpoint)}


@pytest.mark.parametrize("job_id", ["*", "?", "\\", "job-*", "job-?"])
async def test_a_wildcard_job_id_touches_no_other_jobs_instances(connector, moto_endpoint,
                                                                  job_id):
    others = await others_running(connector, moto_endpoint)
    run = await connector.apply(forged(job_id, on_demand=1))
    assert (run.launched, run.terminated) == (1, 0)
    assert others < {i for i, *_ in instances(moto_endpoint)}
    release = await connector.apply(forged(job_id))
    if "\\" not in job_id:  # moto reads an escaped backslash as two, EC2 as one
        assert release.terminated == 1
    assert others <= {i for i, *_ in instances(moto_endpoint)}


class FilterRecording:
    """EC2 that records describe's filters and, like a filter read as a wildcard would,
    answers every instance of the region."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.filters: list[Any] = []

    def get_paginator(self, name: str) -> Any:
        client, filters = self.client, self.filters

        class Paginator:
            def paginate(self, **params: Any) -> Any:
                filters.append(params["Filters"])
                return client.get_paginator(name).paginate()

        return Paginator()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


async def test_describe_escapes_wildcards_and_keeps_only_the_jobs_own_instances(
        connector, moto_endpoint):
    others = await others_running(connector, moto_endpoint)
    fake = FilterRecording(ec2(moto_endpoint))
    wide = AwsConnector(AwsOptions(image_ids={"*": "ami-12345678"}),
                        client_for=lambda region: fake)
    applied = await wide.apply(forged("a*b?c\\d"))
    assert applied.terminated == 0
    assert {i for i, *_ in instances(moto_endpoint)} == others
    assert fake.filters == [[{"Name": f"tag:{TAG_JOB}", "Values": ["a\\*b\\?c\\\\d"]}]]
