"""One connector as a worker process: built from options, its account checked, /metrics
served, stopped by SIGINT or SIGTERM after the decision in hand."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from prometheus_client import CollectorRegistry

from connectors.base import Connector
from connectors.job_events import JobEventsReader
from connectors.limits import (
    DEFAULT_MAX_INSTANCES,
    DEFAULT_MAX_INSTANCES_PER_JOB,
    DecisionLimits,
    Limited,
)
from connectors.log import LogConnector
from connectors.metrics import ConnectorMetrics, RefusalMetrics
from connectors.runtime import ConnectorRuntime, CrashHook, RuntimeOptions
from connectors.sim import SimConnector, market_cloud, synthetic_cloud
from connectors.store import AppliedKeys, Journal
from solver.market import MarketTicks
from solver.synthetic import SyntheticMarketSpec
from streams.runtime import run_until_stopped, serve_metrics
from streams.settings import Settings

log = logging.getLogger(__name__)

CONNECTORS = ("log", "sim", "aws")


@dataclass(frozen=True)
class WorkerOptions:
    """The connector to run and its options (each prefixed by the connector it belongs to).

    ``kill_after_apply`` is a test hook: the process kills itself (SIGKILL) right after
    applying its N-th decision, before recording or committing it; 0 turns it off.
    """

    name: str
    group: str | None = None
    log_json: bool = False
    sim_ticks: tuple[MarketTicks, ...] = ()
    """The simulated cloud's markets (e.g. loaded from traces); none: ``sim_market``."""
    sim_market: SyntheticMarketSpec = field(default_factory=SyntheticMarketSpec)
    sim_availability_reports: bool = False
    aws_image_ids: Mapping[str, str] = field(default_factory=dict)
    aws_launch_template: str | None = None
    aws_regions: tuple[str, ...] = ()
    aws_endpoint_url: str | None = None
    aws_spot_max_price: float | None = None
    allowed_instance_types: tuple[str, ...] = ()
    """Instance types the sim and aws connectors may run; none: aws takes its catalogue's."""
    max_instances_per_job: int = DEFAULT_MAX_INSTANCES_PER_JOB
    max_instances: int = DEFAULT_MAX_INSTANCES
    kill_after_apply: int = 0

    def __post_init__(self) -> None:
        if self.name not in CONNECTORS:
            raise ValueError(f"connector={self.name!r}: expected one of {', '.join(CONNECTORS)}")

    def group_id(self, settings: Settings) -> str:
        return self.group or f"{settings.app_id}-connector-{self.name}"


@runtime_checkable
class AccountChecked(Protocol):
    """A connector that can tell before the first decision that none would get through."""

    def check_account(self) -> None:
        """Raise a :class:`~connectors.base.FatalError` if no decision can be applied."""
        ...


def build_connector(settings: Settings, options: WorkerOptions,
                    journal: Journal | None = None) -> Connector:
    """The named connector; its durable files go to the settings' data directory (the sim's
    ``journal`` there unless given)."""
    if options.name == "log":
        return LogConnector(sys.stdout, options.log_json)
    if options.name == "sim":
        reports = options.sim_availability_reports
        cloud = (market_cloud(options.sim_ticks, settings.slot_seconds, reports)
                 if options.sim_ticks
                 else synthetic_cloud(options.sim_market, settings.slot_seconds, reports))
        return SimConnector(cloud, JobEventsReader(settings),
                            journal or Journal(state_file(settings, options, "journal")))
    from connectors.aws import AwsConnector, AwsOptions

    regions = aws_regions(settings, options)
    log.info("aws connector: regions %s, endpoint %s", ", ".join(regions) or "(per decision)",
             options.aws_endpoint_url or "(default)")
    return AwsConnector(AwsOptions(
        image_ids=options.aws_image_ids, launch_template=options.aws_launch_template,
        regions=regions, endpoint_url=options.aws_endpoint_url,
        spot_max_price=options.aws_spot_max_price))


def aws_regions(settings: Settings, options: WorkerOptions) -> tuple[str, ...]:
    """The regions the aws connector serves: its ``--region`` options, else the AWS regions of
    the catalogue in the settings' markets file (none: neither is given)."""
    if options.aws_regions or settings.markets_file is None:
        return options.aws_regions
    return tuple(sorted({m.region for m in settings.catalogue() if m.cloud == "aws"}))


def decision_limits(settings: Settings, options: WorkerOptions) -> DecisionLimits | None:
    """What the connector may be asked to do (``None``: anything, for the log connector,
    which acts on nothing). The sim checks its markets itself, stopping at one it does not
    simulate; aws serves its regions and the instance types allowed, by default those of
    its catalogue, and only the catalogue's markets when it has one."""
    if options.name == "log":
        return None
    markets = regions = None
    types = frozenset(options.allowed_instance_types) or None
    if options.name == "aws":
        catalogue = ([m for m in settings.catalogue() if m.cloud == "aws"]
                     if settings.markets_file is not None else None)
        regions = frozenset(aws_regions(settings, options))
        if catalogue is not None:
            markets = frozenset(m.key for m in catalogue)
            types = types or frozenset(m.instance_type for m in catalogue)
        if not regions or not types:
            raise ValueError("aws: expected the regions and instance types it may launch in: "
                             "--region and --allowed-instance-types, or a catalogue "
                             "(SPOTSCHED_MARKETS_FILE) to take them from")
    return DecisionLimits(markets=markets, regions=regions, instance_types=types,
                          max_instances_per_job=options.max_instances_per_job,
                          max_instances=options.max_instances)


class ConnectorWorker:
    """A connector, its record of applied decisions and its metrics, ready to run.

    Building it checks the options (``ValueError``) and opens the data directory
    (``OSError``); :meth:`run` then checks the account (``FatalError``) and serves until
    SIGINT or SIGTERM.
    """

    def __init__(self, settings: Settings, options: WorkerOptions,
                 registry: CollectorRegistry | None = None) -> None:
        self.settings = settings
        self.options = options
        self.registry = registry or CollectorRegistry()
        self.journal = (Journal(state_file(settings, options, "journal"))
                        if options.name == "sim" else None)
        self.connector = build_connector(settings, options, self.journal)
        self.limits = decision_limits(settings, options)
        self.applied_keys = AppliedKeys(state_file(settings, options, "applied"))

    async def serve(self, stop: asyncio.Event) -> None:
        """Run on the decisions topic until ``stop`` is set; then close everything."""
        options = self.options
        runtime_options = RuntimeOptions(
            group_id=options.group_id(self.settings),
            crash_hook=_kill_after(options.kill_after_apply) if options.kill_after_apply
            else None,
        )
        connector = self.connector
        if self.limits is not None:
            connector = Limited(connector, self.limits,
                                RefusalMetrics(self.registry, options.name))
        runtime = ConnectorRuntime(connector, self.settings, runtime_options,
                                   self.applied_keys, ConnectorMetrics(self.registry, options.name),
                                   records=[self.journal] if self.journal is not None else [])
        try:
            if isinstance(self.connector, AccountChecked):
                await asyncio.to_thread(self.connector.check_account)
            await runtime.run(stop)
        finally:
            await self.connector.close()
            self.applied_keys.close()

    def run(self) -> None:
        """Serve until SIGINT or SIGTERM, with /metrics on the settings' host and port unless
        the port is 0."""
        serve_metrics(self.settings, self.registry)
        run_until_stopped(self.serve)
        log.info("connector %s stopped", self.options.name)


STATE_KINDS = ("applied", "journal")
"""The durable records a connector keeps in the data directory (the journal: sim only)."""


def state_file(settings: Settings, options: WorkerOptions, kind: str) -> Path:
    """The file of a connector's durable record ``kind`` (one of :data:`STATE_KINDS`)."""
    group = re.sub(r"[^A-Za-z0-9._-]+", "_", options.group_id(settings))
    return settings.data_dir / f"{group}.{kind}.sqlite3"


def _kill_after(applies: int) -> CrashHook:
    seen = 0

    def hook(step: str, _decision: object) -> None:
        nonlocal seen
        if step == "applied":
            seen += 1
            if seen == applies:
                os.kill(os.getpid(), signal.SIGKILL)

    return hook


def parse_image_ids(values: list[str]) -> dict[str, str]:
    """``["ami-1", "us-west-2=ami-2"]`` as ``{"*": "ami-1", "us-west-2": "ami-2"}``."""
    images: dict[str, str] = {}
    for value in values:
        region, _, ami = value.rpartition("=")
        if not ami or (region == "" and "=" in value):
            raise ValueError(f"image id {value!r}: expected AMI or REGION=AMI")
        images[region or "*"] = ami
    return images
