"""``spotsched connector log|sim|aws``: a connector on the provisioning decisions, each
command with its connector's options."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from connectors.limits import DEFAULT_MAX_INSTANCES, DEFAULT_MAX_INSTANCES_PER_JOB
from streams.cli.common import broker_logging, command_settings, load_trace_files, run_on_broker
from streams.cli.errors import fail
from streams.cli.options import (
    DEFAULT_LOG_LEVEL,
    Broker,
    Ec2Endpoint,
    LogLevel,
    MetricsHost,
    MetricsPort,
    OnDemandPrice,
    PricesFile,
    Seed,
    SlotSecondsSetting,
    SyntheticDays,
    SyntheticMarkets,
    TracesOrSynthetic,
    writes_dir,
)

connector = typer.Typer(
    help="Connectors: act on the decisions until SIGINT or SIGTERM.", no_args_is_help=True,
    rich_markup_mode=None)

DataDir = Annotated[Path | None, writes_dir("Directory of the connector's durable records.")]
Group = Annotated[str | None, typer.Option(
    help="Consumer group (default: APP_ID-connector-NAME).")]
Reset = Annotated[bool, typer.Option(
    "--reset", help="Start over: put the group back at the first decision and remove the "
    "connector's records in --data-dir, so every decision is applied again. Refused while the "
    "group runs.")]
KillAfterApply = Annotated[int, typer.Option(hidden=True)]
AllowedInstanceTypes = Annotated[list[str] | None, typer.Option(
    "--allowed-instance-types", metavar="<type>", help="An instance type it may run; "
    "repeatable. Default: sim, any; aws, the types of the catalogue in "
    "SPOTSCHED_MARKETS_FILE.")]
MaxInstancesPerJob = Annotated[int, typer.Option(
    min=1, help="Most instances one decision may ask for; beyond, the decision is refused "
    "(dead-lettered).")]
MaxInstances = Annotated[int, typer.Option(
    min=1, help="Most instances the jobs' latest decisions may ask for together; beyond, the "
    "decision is refused.")]


@dataclass(frozen=True)
class Common:
    """The options every connector takes."""

    bootstrap_servers: str | None
    data_dir: Path | None
    group: str | None
    metrics_port: int | None
    metrics_host: str | None
    log_level: str
    reset: bool
    kill_after_apply: int
    slot_seconds: float | None = None


@connector.command("log")
def log_connector(
    bootstrap_servers: Broker = None,
    data_dir: DataDir = None,
    group: Group = None,
    metrics_port: MetricsPort = None,
    metrics_host: MetricsHost = None,
    json_lines: Annotated[bool, typer.Option(
        "--json", help="One JSON event per line.")] = False,
    log_level: LogLevel = DEFAULT_LOG_LEVEL,
    reset: Reset = False,
    kill_after_apply: KillAfterApply = 0,
) -> None:
    """Print one line (or JSON) per decision applied."""
    _run("log", Common(bootstrap_servers, data_dir, group, metrics_port, metrics_host,
                       log_level, reset, kill_after_apply), lambda: {"log_json": json_lines})


@connector.command("sim")
def sim_connector(
    bootstrap_servers: Broker = None,
    data_dir: DataDir = None,
    group: Group = None,
    metrics_port: MetricsPort = None,
    metrics_host: MetricsHost = None,
    trace: TracesOrSynthetic = None,
    seed: Seed = 0,
    synthetic_markets: SyntheticMarkets = 4,
    days: SyntheticDays = 14,
    slot_seconds: SlotSecondsSetting = None,
    availability_reports: Annotated[bool, typer.Option(
        "--availability-reports", help="Also report lost spot as availability ticks (off: the "
        "market ticks already carry the trace's availability).")] = False,
    allowed_instance_types: AllowedInstanceTypes = None,
    max_instances_per_job: MaxInstancesPerJob = DEFAULT_MAX_INSTANCES_PER_JOB,
    max_instances: MaxInstances = DEFAULT_MAX_INSTANCES,
    on_demand_price: OnDemandPrice = None,
    prices: PricesFile = None,
    log_level: LogLevel = DEFAULT_LOG_LEVEL,
    reset: Reset = False,
    kill_after_apply: KillAfterApply = 0,
) -> None:
    """A simulated cloud on the replay's market.

    It stops, committing nothing, at a decision outside its market: give it the trace the
    replay used (--trace)."""
    from solver.synthetic import SyntheticMarketSpec

    _run("sim", Common(bootstrap_servers, data_dir, group, metrics_port, metrics_host,
                       log_level, reset, kill_after_apply, slot_seconds), lambda: {
        "sim_ticks": tuple(load_trace_files(trace, on_demand_price, prices)) if trace else (),
        "sim_market": SyntheticMarketSpec(seed=seed, n_markets=synthetic_markets, days=days),
        "sim_availability_reports": availability_reports,
        "allowed_instance_types": tuple(allowed_instance_types or ()),
        "max_instances_per_job": max_instances_per_job, "max_instances": max_instances})


@connector.command("aws")
def aws_connector(
    bootstrap_servers: Broker = None,
    data_dir: DataDir = None,
    group: Group = None,
    metrics_port: MetricsPort = None,
    metrics_host: MetricsHost = None,
    image_id: Annotated[list[str] | None, typer.Option(
        metavar="<ami>", help="AMI for every region, or REGION=AMI; repeatable.")] = None,
    launch_template: Annotated[str | None, typer.Option(
        help="Launch template name, present in each region.")] = None,
    region: Annotated[list[str] | None, typer.Option(
        metavar="<region>", help="Region to reconcile; repeatable. Default: the AWS regions "
        "of the catalogue in SPOTSCHED_MARKETS_FILE.")] = None,
    endpoint_url: Ec2Endpoint = None,
    spot_max_price: Annotated[float | None, typer.Option(
        help="Highest spot price in USD/h (default: the on-demand price).")] = None,
    allowed_instance_types: AllowedInstanceTypes = None,
    max_instances_per_job: MaxInstancesPerJob = DEFAULT_MAX_INSTANCES_PER_JOB,
    max_instances: MaxInstances = DEFAULT_MAX_INSTANCES,
    log_level: LogLevel = DEFAULT_LOG_LEVEL,
    reset: Reset = False,
    kill_after_apply: KillAfterApply = 0,
) -> None:
    """EC2 instances through boto3, tagged with each job's id."""
    from connectors.worker import parse_image_ids

    _run("aws", Common(bootstrap_servers, data_dir, group, metrics_port, metrics_host,
                       log_level, reset, kill_after_apply), lambda: {
        "aws_image_ids": parse_image_ids(image_id or []),
        "aws_launch_template": launch_template, "aws_regions": tuple(region or ()),
        "aws_endpoint_url": endpoint_url, "aws_spot_max_price": spot_max_price,
        "allowed_instance_types": tuple(allowed_instance_types or ()),
        "max_instances_per_job": max_instances_per_job, "max_instances": max_instances})


def _run(name: str, common: Common, options_of: Callable[[], dict[str, Any]]) -> None:
    """Run connector ``name`` with its own options (``options_of()``; a ValueError there is a
    one-line error), after a reset when asked."""
    import logging

    from connectors.base import FatalError
    from connectors.reset import reset_connector
    from connectors.worker import ConnectorWorker, WorkerOptions
    from streams.kafka.connect import BrokerError
    from streams.metrics_registry import service_registry

    broker_logging(common.log_level)
    logging.getLogger("aiokafka").setLevel(max(logging.WARNING, logging.root.level))
    settings = command_settings(bootstrap_servers=common.bootstrap_servers,
                                data_dir=common.data_dir, metrics_port=common.metrics_port,
                                metrics_host=common.metrics_host,
                                slot_seconds=common.slot_seconds)
    try:
        options = WorkerOptions(name=name, group=common.group,
                                kill_after_apply=common.kill_after_apply, **options_of())
    except ValueError as exc:
        fail(exc)
    if common.reset:  # before the worker opens the records it removes
        run_on_broker(reset_connector(settings, options))
    try:
        ConnectorWorker(settings, options, service_registry("connector")).run()
    except (ValueError, OSError, BrokerError, FatalError) as exc:
        fail(exc)
