"""EC2 through boto3: each decision reconciles a job's instances with its desired state.

For a decision the connector describes every instance tagged with exactly the job's id (in the
decision's region and every region it reconciles), keeps the oldest running instances that
match the market and lifecycle asked for, launches what is missing in the market's zone, and
only then terminates the rest: surplus after a scale-down, everything in a market the job has
left, and interrupted spot instances that were stopped rather than terminated.

Launches carry an EC2 ``ClientToken`` derived from the decision's idempotency key and the
lifecycle, so a launch repeated after a crash (or a retried call whose answer was lost) is
answered with the first launch's instances instead of new ones. Together with describing
before launching, a decision never launches twice.

Feedback goes back as availability ticks stamped with the time of the call: ``refused``
when spot capacity was short (``InsufficientInstanceCapacity``, ``SpotMaxPriceTooLow``, or
fewer instances than asked), with ``available`` the spot instances the job holds in the market
afterwards; ``preempted`` for each spot instance found stopped or terminated by a spot
interruption, with ``available`` the job's surviving spot instances there. Credentials come
from the standard AWS chain and are never logged.

Account faults — credentials missing or rejected, an endpoint that cannot be reached, a region
the account has not enabled — are :class:`FatalError`: no decision can get past them, so the
worker stops instead of dead-lettering every decision. :meth:`AwsConnector.check_account`
finds them before the first decision with one ``DescribeRegions`` call per region.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    PartialCredentialsError,
    ReadTimeoutError,
)

from connectors.base import Applied, FatalError, Feedback, PermanentError, TransientError
from streams.contract import AvailabilityTick, ProvisioningDecision, utc

log = logging.getLogger(__name__)

TAG_JOB = "spotsched:job-id"
TAG_DECISION = "spotsched:decision-id"
TAG_MARKET = "spotsched:market"
TAG_LIFECYCLE = "spotsched:lifecycle"
SPOT, ON_DEMAND = "spot", "on-demand"

ACTIVE_STATES = frozenset({"pending", "running"})
HALTED_STATES = frozenset({"stopping", "stopped"})
SPOT_INTERRUPTIONS = frozenset({"Server.SpotInstanceTermination", "Server.SpotInstanceShutdown"})
CAPACITY_ERRORS = frozenset({"InsufficientInstanceCapacity", "SpotMaxPriceTooLow"})
TRANSIENT_ERRORS = frozenset({
    "RequestLimitExceeded", "Throttling", "ThrottlingException", "InternalError",
    "InternalFailure", "ServiceUnavailable", "Unavailable", "IdempotentParameterMismatch",
})
"""Error codes worth retrying. ``IdempotentParameterMismatch`` means a token's first launch
is not visible yet to describe: the retry sees its instances and launches nothing."""
FATAL_ERRORS = frozenset({
    "AuthFailure", "UnauthorizedOperation", "OptInRequired", "Blocked", "SignatureDoesNotMatch",
    "InvalidClientTokenId", "UnrecognizedClientException", "ExpiredToken",
    "ExpiredTokenException",
})
"""Error codes that no decision can get past: they stop the worker."""
CREDENTIAL_ERRORS = (NoCredentialsError, PartialCredentialsError)
"""No usable credentials in the AWS chain: nothing was sent."""
UNREACHABLE_ERRORS = (EndpointConnectionError, ConnectTimeoutError)
"""The endpoint could not be reached (botocore's own retries included)."""
NETWORK_ERRORS = (*UNREACHABLE_ERRORS, ConnectionClosedError, ReadTimeoutError)
CHECK_REGION = "us-east-1"
"""The region whose endpoint :meth:`AwsConnector.check_account` asks when none is set."""
_CLIENT_CONFIG = Config(connect_timeout=3, retries={"mode": "standard", "max_attempts": 3})
"""Three attempts a call (a refused connection fails in about 3 s), then the runtime's view."""


@dataclass(frozen=True, slots=True)
class AwsOptions:
    """What to launch and where to look.

    ``image_ids`` maps a region to its AMI (``"*"`` for every region); a ``launch_template``
    (by name, present in each region) may be given instead or as well. ``regions`` are
    reconciled for every decision besides the decision's own, so that a job moved across
    regions leaves nothing behind. ``spot_max_price`` (USD/h) defaults to the on-demand price.
    """

    image_ids: Mapping[str, str] = field(default_factory=dict)
    launch_template: str | None = None
    regions: tuple[str, ...] = ()
    endpoint_url: str | None = None
    spot_max_price: float | None = None

    def __post_init__(self) -> None:
        if not self.image_ids and self.launch_template is None:
            raise ValueError(
                "image_ids/launch_template: expected an AMI (for every region or per region) "
                "or a launch template name"
            )
        if self.spot_max_price is not None and not self.spot_max_price > 0:
            raise ValueError(f"spot_max_price={self.spot_max_price!r}: expected a positive "
                             "USD per instance-hour")

    def image_for(self, region: str) -> str | None:
        return self.image_ids.get(region, self.image_ids.get("*"))


@dataclass(frozen=True, slots=True)
class _Market:
    key: str
    region: str
    zone: str
    instance_type: str


@dataclass(frozen=True, slots=True)
class _Instance:
    id: str
    region: str
    market: str
    lifecycle: str
    state: str
    launched_at: datetime
    interrupted: bool


class AwsConnector:
    """Reconciles each job's EC2 instances with its latest decision."""

    name = "aws"

    def __init__(
        self,
        options: AwsOptions,
        client_for: Callable[[str], Any] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.options = options
        self._client_for = client_for or self._boto3_client
        self._clock = clock
        self._clients: dict[str, Any] = {}
        self._regions = set(options.regions)
        self._reported: set[str] = set()
        self._session: boto3.session.Session | None = None

    def _boto3_client(self, region: str) -> Any:
        """An EC2 client of this connector's own session: credentials are looked up when it
        starts, not taken from a session another part of the process set up earlier."""
        if self._session is None:
            self._session = boto3.session.Session()
        return self._session.client("ec2", region_name=region,
                                    endpoint_url=self.options.endpoint_url,
                                    config=_CLIENT_CONFIG)

    def _client(self, region: str) -> Any:
        if region not in self._clients:
            self._clients[region] = self._client_for(region)
        return self._clients[region]

    def check_account(self) -> None:
        """A :class:`FatalError` now if the account cannot serve the regions (or, none set,
        cannot be reached at all): no credentials, rejected ones, an endpoint out of reach, a
        region not enabled. Any other failure is left for the decisions to meet."""
        for region in sorted(self._regions) or [CHECK_REGION]:
            try:
                answer = _call("DescribeRegions", partial(
                    self._client(region).describe_regions, RegionNames=[region]))
            except (TransientError, PermanentError) as exc:
                log.warning("checking the account in %s: %s", region, exc)
                continue
            for described in answer.get("Regions", []):
                if described.get("OptInStatus") == "not-opted-in":
                    raise FatalError(f"region {region}: not enabled for this AWS account "
                                     "(OptInStatus not-opted-in); expected a region it uses")

    async def apply(self, decision: ProvisioningDecision) -> Applied:
        return await asyncio.to_thread(self.reconcile, decision)

    async def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()

    def reconcile(self, decision: ProvisioningDecision) -> Applied:
        """Make the job's instances match ``decision`` (blocking)."""
        market = _parse_market(decision.market)
        regions = sorted(self._regions | {market.region})
        instances = [i for region in regions for i in self._describe(region, decision.job_id)]
        active = [i for i in instances if i.state in ACTIVE_STATES]
        interrupted = [i for i in instances if i.interrupted and i.id not in self._reported]
        surplus = [i for i in instances if i.state in HALTED_STATES]
        surplus += [i for i in active if i.market != market.key]
        kept: dict[str, int] = {}
        for lifecycle, want in ((SPOT, decision.spot), (ON_DEMAND, decision.on_demand)):
            mine = sorted((i for i in active
                           if i.market == market.key and i.lifecycle == lifecycle),
                          key=lambda i: (i.launched_at, i.id))
            kept[lifecycle] = min(want, len(mine))
            surplus += mine[want:]
        launched, details = 0, []
        for lifecycle, want in ((ON_DEMAND, decision.on_demand), (SPOT, decision.spot)):
            while kept[lifecycle] < want:
                got, detail = self._launch(decision, market, lifecycle, kept[lifecycle], want)
                launched += got
                kept[lifecycle] += got
                if detail:
                    details.append(detail)
                if got == 0:
                    break
        refused = decision.spot - kept[SPOT]
        terminated = self._terminate(surplus)
        self._regions.add(market.region)
        events = self._observations(decision, interrupted, active, kept[SPOT], refused)
        details += [f"spot instance {i.id} in {i.market} was interrupted" for i in interrupted]
        self._reported.update(i.id for i in interrupted)
        return Applied(launched=launched, terminated=terminated, refused=refused,
                       preempted=len(interrupted), details=tuple(details), events=events)

    def _observations(self, decision: ProvisioningDecision, interrupted: list[_Instance],
                      active: list[_Instance], spot_held: int,
                      refused: int) -> tuple[Feedback, ...]:
        now = utc(self._clock())
        events: list[Feedback] = []
        for market in sorted({i.market for i in interrupted}):
            survivors = sum(1 for i in active if i.market == market and i.lifecycle == SPOT)
            events.append(AvailabilityTick(event_time=now, market=market, available=survivors,
                                           reason="preempted"))
        if refused:
            events.append(AvailabilityTick(event_time=now, market=decision.market,
                                           available=spot_held, reason="refused"))
        return tuple(events)

    def _describe(self, region: str, job_id: str) -> list[_Instance]:
        """The job's instances in ``region``: those tagged with exactly its id (EC2 filters
        match ``*`` and ``?`` as wildcards, so they are escaped, and what comes back is
        checked again)."""
        pages = _call("DescribeInstances", lambda: list(
            self._client(region).get_paginator("describe_instances").paginate(
                Filters=[{"Name": f"tag:{TAG_JOB}", "Values": [filter_value(job_id)]}])))
        return [_instance(region, raw) for page in pages
                for reservation in page.get("Reservations", [])
                for raw in reservation.get("Instances", [])
                if _tags(raw).get(TAG_JOB) == job_id]

    def _launch(self, decision: ProvisioningDecision, market: _Market, lifecycle: str,
                held: int, want: int) -> tuple[int, str | None]:
        """Launch ``want - held`` instances; spot may get fewer (a refusal when none).

        The client token covers the decision, the lifecycle and ``held``, so the same call
        (same token, same parameters) is made again only where it launched nothing new.
        """
        count = want - held
        params: dict[str, Any] = {
            "MinCount": 1 if lifecycle == SPOT else count,
            "MaxCount": count,
            "InstanceType": market.instance_type,
            "Placement": {"AvailabilityZone": market.zone},
            "ClientToken": client_token(decision.idempotency_key, lifecycle, held),
            "TagSpecifications": [{"ResourceType": "instance", "Tags": [
                {"Key": TAG_JOB, "Value": decision.job_id},
                {"Key": TAG_DECISION, "Value": decision.idempotency_key},
                {"Key": TAG_MARKET, "Value": market.key},
                {"Key": TAG_LIFECYCLE, "Value": lifecycle},
            ]}],
        }
        image = self.options.image_for(market.region)
        if image is not None:
            params["ImageId"] = image
        if self.options.launch_template is not None:
            params["LaunchTemplate"] = {"LaunchTemplateName": self.options.launch_template,
                                        "Version": "$Default"}
        if lifecycle == SPOT:
            spot: dict[str, str] = {"SpotInstanceType": "one-time",
                                    "InstanceInterruptionBehavior": "terminate"}
            if self.options.spot_max_price is not None:
                spot["MaxPrice"] = f"{self.options.spot_max_price:.4f}"
            params["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": spot}
        client = self._client(market.region)
        try:
            response = _call("RunInstances", lambda: client.run_instances(**params))
        except TransientError as exc:
            cause = exc.__cause__
            if (lifecycle == SPOT and isinstance(cause, ClientError)
                    and _code(cause) in CAPACITY_ERRORS):
                return 0, f"spot refused in {market.key}: {_code(cause)}"
            raise
        return len(response.get("Instances", [])), None

    def _terminate(self, instances: Iterable[_Instance]) -> int:
        by_region: dict[str, list[str]] = {}
        for instance in instances:
            by_region.setdefault(instance.region, []).append(instance.id)
        for region, ids in sorted(by_region.items()):
            _call("TerminateInstances",
                  partial(self._client(region).terminate_instances, InstanceIds=ids))
        return sum(len(ids) for ids in by_region.values())


def client_token(idempotency_key: str, lifecycle: str, held: int = 0) -> str:
    """The EC2 ``ClientToken`` (64 ASCII at most) of a decision's launch of one lifecycle
    when the job already holds ``held`` such instances in the market."""
    digest = hashlib.sha256(f"{idempotency_key}/{lifecycle}/{held}".encode()).hexdigest()
    return f"spotsched-{digest[:48]}"


def filter_value(value: str) -> str:
    """``value`` as an EC2 filter value that matches it alone: ``\\``, ``*`` and ``?``
    escaped with a backslash."""
    return value.replace("\\", "\\\\").replace("*", "\\*").replace("?", "\\?")


def _tags(raw: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in raw.get("Tags", [])}


def _parse_market(key: str) -> _Market:
    cloud, region, zone, instance_type = key.split("/")
    if cloud != "aws":
        raise PermanentError(f"market={key!r}: expected an 'aws/...' market for the aws "
                             "connector")
    if not zone.startswith(region):
        raise PermanentError(f"market={key!r}: expected zone {zone!r} inside region {region!r}")
    return _Market(key, region, zone, instance_type)


def _instance(region: str, raw: dict[str, Any]) -> _Instance:
    tags = _tags(raw)
    lifecycle = SPOT if raw.get("InstanceLifecycle") == "spot" else ON_DEMAND
    state = raw["State"]["Name"]
    reason = raw.get("StateReason", {}).get("Code", "")
    return _Instance(
        id=raw["InstanceId"],
        region=region,
        market=tags.get(TAG_MARKET, ""),
        lifecycle=lifecycle,
        state=state,
        launched_at=raw["LaunchTime"],
        interrupted=lifecycle == SPOT and state not in ACTIVE_STATES
        and reason in SPOT_INTERRUPTIONS,
    )


def _call(action: str, call: Callable[[], Any]) -> Any:
    try:
        return call()
    except (ClientError, *NETWORK_ERRORS, *CREDENTIAL_ERRORS) as exc:
        classified = _classified(exc, action)
        if classified is None:
            raise
        raise classified from exc


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _classified(exc: Exception, action: str) -> Exception | None:
    """The runtime's view of an EC2 failure: transient, permanent or fatal (an account
    fault; ``None``: not an EC2 failure)."""
    if isinstance(exc, CREDENTIAL_ERRORS):
        return FatalError(f"EC2 {action}: no usable AWS credentials ({exc}); expected "
                          "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or an "
                          "instance role")
    if isinstance(exc, UNREACHABLE_ERRORS):
        return FatalError(f"EC2 {action}: cannot reach the endpoint ({exc})")
    if isinstance(exc, NETWORK_ERRORS):
        return TransientError(f"EC2 {action}: {exc}")
    if not isinstance(exc, ClientError):
        return None
    code = _code(exc)
    message = f"EC2 {action} failed with {code}: {exc.response.get('Error', {}).get('Message')}"
    if code in FATAL_ERRORS:
        return FatalError(message)
    if code in TRANSIENT_ERRORS or code in CAPACITY_ERRORS:
        return TransientError(message)
    return PermanentError(message)
