"""``spotsched connector``: a connector on the provisioning decisions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from connectors.limits import DEFAULT_MAX_INSTANCES, DEFAULT_MAX_INSTANCES_PER_JOB
from streams.cli.app import app
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


@app.command()
def connector(
    name: Annotated[str, typer.Argument(help="Connector to run: log, sim or aws.")],
    bootstrap_servers: Broker = None,
    data_dir: Annotated[Path | None, writes_dir(
        "Directory of the connector's durable records.")] = None,
    group: Annotated[str | None, typer.Option(
        help="Consumer group (default: APP_ID-connector-NAME).")] = None,
    metrics_port: MetricsPort = None,
    metrics_host: MetricsHost = None,
    json_lines: Annotated[bool, typer.Option(
        "--json", help="log: one JSON event per line.")] = False,
    trace: TracesOrSynthetic = None,
    seed: Seed = 0,
    synthetic_markets: SyntheticMarkets = 4,
    days: SyntheticDays = 14,
    slot_seconds: SlotSecondsSetting = None,
    availability_reports: Annotated[bool, typer.Option(
        "--availability-reports", help="sim: also report lost spot as availability ticks "
        "(off: the market ticks already carry the trace's availability).")] = False,
    image_id: Annotated[list[str] | None, typer.Option(
        metavar="<ami>", help="aws: AMI for every region, or REGION=AMI; repeatable.")] = None,
    launch_template: Annotated[str | None, typer.Option(
        help="aws: launch template name, present in each region.")] = None,
    region: Annotated[list[str] | None, typer.Option(
        metavar="<region>", help="aws: region to reconcile; repeatable. Default: the AWS "
        "regions of the catalogue in SPOTSCHED_MARKETS_FILE.")] = None,
    endpoint_url: Ec2Endpoint = None,
    spot_max_price: Annotated[float | None, typer.Option(
        help="aws: highest spot price in USD/h (default: the on-demand price).")] = None,
    allowed_instance_types: Annotated[list[str] | None, typer.Option(
        "--allowed-instance-types", metavar="<type>", help="sim, aws: an instance type it may "
        "run; repeatable. Default: aws, the types of the catalogue in SPOTSCHED_MARKETS_FILE; "
        "sim, any.")] = None,
    max_instances_per_job: Annotated[int, typer.Option(
        min=1, help="sim, aws: most instances one decision may ask for; beyond, the decision "
        "is refused (dead-lettered).")] = DEFAULT_MAX_INSTANCES_PER_JOB,
    max_instances: Annotated[int, typer.Option(
        min=1, help="sim, aws: most instances the jobs' latest decisions may ask for "
        "together; beyond, the decision is refused.")] = DEFAULT_MAX_INSTANCES,
    on_demand_price: OnDemandPrice = None,
    prices: PricesFile = None,
    log_level: LogLevel = DEFAULT_LOG_LEVEL,
    reset: Annotated[bool, typer.Option(
        "--reset", help="Start over: put the group back at the first decision and remove "
        "the connector's records in --data-dir, so every decision is applied again. Refused "
        "while the group runs.")] = False,
    kill_after_apply: Annotated[int, typer.Option(hidden=True)] = 0,
) -> None:
    """Act on the decisions until SIGINT or SIGTERM.

    Runs a connector (log, sim or aws) on the provisioning decisions. The sim connector
    stops, committing nothing, at a decision outside its market: give it the trace the
    replay used (--trace)."""
    import logging

    from connectors.base import FatalError
    from connectors.reset import reset_connector
    from connectors.worker import ConnectorWorker, WorkerOptions, parse_image_ids
    from solver.synthetic import SyntheticMarketSpec
    from streams.kafka.connect import BrokerError

    broker_logging(log_level)
    logging.getLogger("aiokafka").setLevel(max(logging.WARNING, logging.root.level))
    settings = command_settings(bootstrap_servers=bootstrap_servers, data_dir=data_dir,
                         metrics_port=metrics_port, metrics_host=metrics_host,
                         slot_seconds=slot_seconds)
    try:
        options = WorkerOptions(
            name=name, group=group, log_json=json_lines,
            sim_ticks=tuple(load_trace_files(trace, on_demand_price, prices)) if trace else (),
            sim_market=SyntheticMarketSpec(seed=seed, n_markets=synthetic_markets, days=days),
            sim_availability_reports=availability_reports,
            aws_image_ids=parse_image_ids(image_id or []), aws_launch_template=launch_template,
            aws_regions=tuple(region or ()), aws_endpoint_url=endpoint_url,
            aws_spot_max_price=spot_max_price,
            allowed_instance_types=tuple(allowed_instance_types or ()),
            max_instances_per_job=max_instances_per_job, max_instances=max_instances,
            kill_after_apply=kill_after_apply)
    except ValueError as exc:
        fail(exc)
    if reset:  # before the worker opens the records it removes
        run_on_broker(reset_connector(settings, options))
    try:
        ConnectorWorker(settings, options).run()
    except (ValueError, OSError, BrokerError, FatalError) as exc:
        fail(exc)
