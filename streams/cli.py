"""The ``spotsched`` command line: thin commands that parse, build inputs and call one function."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console

if TYPE_CHECKING:
    from solver.simulator import SimulationResult
    from streams.settings import Settings

from solver.evaluation.scenarios import CantBeLateSpec
from solver.forecast.registry import DEFAULT_AVAILABILITY_MODEL, DEFAULT_PRICE_MODEL
from solver.job import Job
from solver.market import SECONDS_PER_HOUR, MarketData, MarketTicks, build_market_data
from solver.policies import POLICIES, check_spec
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from solver.workload import WorkloadSpec, generate_jobs

app = typer.Typer(
    help="Deadline-aware scheduling of fine-tuning jobs on spot and on-demand instances.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console(width=None if sys.stdout.isatty() else 120)

DEFAULT_POLICIES = ("on-demand", "spot-only", "greedy", "uniform-progress", "prediction-free",
                    "chc", "risk-aware", "policy-selection")


OnDemandPrice = Annotated[list[str] | None, typer.Option(
    "--on-demand-price", metavar="TYPE=USD_PER_HOUR",
    help="On-demand price of an instance type in USD per hour; repeatable. Wins over --prices "
    "and the built-in table.")]
PricesFile = Annotated[Path | None, typer.Option(
    "--prices", exists=True, dir_okay=False,
    help="JSON or CSV table of instance type to on-demand USD per hour (docs/traces.md).")]


def _on_demand_prices(flags: list[str] | None, file: Path | None) -> dict[str, float]:
    """The user's on-demand prices from --prices and --on-demand-price."""
    from streams.traces.price_table import on_demand_overrides

    return on_demand_overrides(flags or (), file)


def _load_traces(traces: list[Path], flags: list[str] | None,
                 file: Path | None) -> list[MarketTicks]:
    """The markets of trace files, priced with --on-demand-price and --prices."""
    from streams.traces import load_traces

    return load_traces(traces, on_demand_prices=_on_demand_prices(flags, file))


def _market_ticks(
    traces: list[Path], seed: int, markets: int, days: float,
    on_demand_price: list[str] | None = None, prices: Path | None = None,
) -> tuple[list[MarketTicks], str]:
    if traces:
        return (_load_traces(traces, on_demand_price, prices),
                ", ".join(p.name for p in traces))
    spec = SyntheticMarketSpec(seed=seed, n_markets=markets, days=days)
    return synthetic_ticks(spec), f"synthetic market (seed {seed})"


def _settings(**overrides: object) -> Settings:
    """Settings from the environment, with the flags that were given on top; a bad one exits
    with a one-line error."""
    from streams.settings import load_settings

    try:
        return load_settings(**overrides)
    except ValueError as exc:
        _fail(exc)


def _fail(error: Exception, code: int = 2) -> NoReturn:
    """Print a one-line error and exit."""
    from rich.markup import escape

    console.print(f"[red]error:[/red] {escape(str(error))}", highlight=False, soft_wrap=True)
    raise typer.Exit(code) from error


def _broker_client(level: str = "WARNING") -> None:
    """Logging of a command that talks to Kafka: to stderr, repeats rate-limited."""
    from streams.runtime import configure_logging

    configure_logging(level)


def _publish_replay(
    broker: str, ticks: list[MarketTicks], jobs: list[Job], speed: float | None,
    job_partitions: int,
) -> None:
    import asyncio

    from rich.progress import Progress

    from streams.kafka.clients import publish_replay
    from streams.kafka.connect import BrokerError
    from streams.replay import trace_events

    _broker_client()
    settings = _settings(bootstrap_servers=broker, job_partitions=job_partitions)
    total = 2 * sum(len(t.times) for t in ticks) + len(jobs)
    try:
        with Progress(console=console, transient=True) as bar:
            task = bar.add_task("publishing", total=total)
            sent = asyncio.run(publish_replay(settings, trace_events(ticks, jobs), speed,
                                              lambda n: bar.advance(task, n)))
    except (ValueError, BrokerError) as exc:
        _fail(exc)
    console.print(f"published {sent} events ({len(jobs)} jobs) to {settings.bootstrap_servers}")


@app.command()
def replay(
    trace: Annotated[list[Path] | None, typer.Option(
        help="Trace file (any supported format); repeat for more. Default: synthetic market.",
        exists=True, dir_okay=False)] = None,
    jobs: Annotated[Path | None, typer.Option(
        help="Workload file (JSON or CSV of jobs) instead of generated jobs.",
        exists=True, dir_okay=False)] = None,
    n_jobs: Annotated[int, typer.Option(min=0, help="Jobs to generate.")] = 20,
    policy: Annotated[list[str] | None, typer.Option(
        help=f"Policy NAME[:key=value,...] to run; repeat for more. Names: "
        f"{', '.join(POLICIES)}. Default: {', '.join(DEFAULT_POLICIES)}.")] = None,
    seed: Annotated[int, typer.Option(help="Seed for the synthetic market and workload.")] = 0,
    slot_seconds: Annotated[float, typer.Option(min=1, help="Slot length Δ in seconds.")] = 3600,
    markets: Annotated[int, typer.Option(min=1, max=8, help="Synthetic markets.")] = 4,
    days: Annotated[float, typer.Option(min=1, help="Synthetic market length in days.")] = 14,
    report: Annotated[Path | None, typer.Option(
        help="Directory for report.json and replay.png.", file_okay=False)] = None,
    decisions: Annotated[Path | None, typer.Option(
        help="Write every decision as JSON lines (epoch, job, market, spot, on-demand).",
        dir_okay=False)] = None,
    job_partitions: Annotated[int, typer.Option(
        min=1, help="Scheduler partitions: jobs split as Kafka does, each planned alone.")] = 1,
    broker: Annotated[str | None, typer.Option(
        help="Publish the replay to Kafka at host:port instead of simulating in-process.")] = None,
    speed: Annotated[float | None, typer.Option(
        min=0.001,
        help="With --broker: event-time seconds per second (default: flat out).")] = None,
    on_demand_price: OnDemandPrice = None,
    prices: PricesFile = None,
) -> None:
    """Replay a market and a workload: in-process through the simulator (no broker needed), or
    into Kafka with --broker for the workers to schedule."""
    from rich.progress import Progress

    from solver.evaluation.compare import compare_policies
    from streams.kafka.partitions import partition_for
    from streams.reports.replay import summary_table, write_report

    trace = trace or []
    policy = policy or list(DEFAULT_POLICIES)
    try:
        for spec in policy:
            check_spec(spec)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--policy") from exc
    try:
        ticks, source = _market_ticks(trace, seed, markets, days, on_demand_price, prices)
        data = build_market_data(ticks, slot_seconds)
        if jobs is not None:
            from streams.traces.jobs_file import load_jobs

            workload = load_jobs(jobs)
        else:
            workload = generate_jobs(data, n_jobs, WorkloadSpec(seed=seed))
    except ValueError as exc:
        _fail(exc)
    if broker is not None:
        _publish_replay(broker, ticks, workload, speed, job_partitions)
        return
    try:
        with Progress(console=console, transient=True) as bar:
            groups = len({partition_for(j.id, job_partitions) for j in workload}) or 1
            task = bar.add_task("replaying", total=data.n_slots * len(policy) * groups)
            results, summaries = compare_policies(
                data, workload, policy, progress=lambda n: bar.advance(task, n),
                partition_of=lambda job_id: partition_for(job_id, job_partitions))
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    if decisions is not None:
        _write_decisions(decisions, data, results)
    title = (f"{len(workload)} jobs on {source}: {len(data.markets)} markets × "
             f"{data.n_slots} slots of {data.slot_seconds:g} s")
    console.print(summary_table(summaries, title))
    if report is not None:
        inputs = {"traces": [str(p) for p in trace], "jobs": str(jobs) if jobs else None,
                  "n_jobs": len(workload), "policies": list(policy), "seed": seed,
                  "slot_seconds": slot_seconds}
        json_path, png_path = write_report(report, data, workload, results, summaries, inputs)
        console.print(f"wrote {json_path} and {png_path}")


def _write_decisions(path: Path, data: MarketData, results: list[SimulationResult]) -> None:
    import json

    from streams.pipeline import epoch_index

    with path.open("w") as out:
        for result in results:
            for slot, job_id, a in result.decisions:
                out.write(json.dumps({
                    "policy": result.policy, "epoch": epoch_index(data.slot_start(slot),
                                                                 data.slot_seconds),
                    "job_id": job_id, "market": data.markets[a.market].key,
                    "spot": a.spot, "on_demand": a.on_demand}) + "\n")


@app.command()
def schema(
    out: Annotated[Path, typer.Option(help="Directory for the JSON Schema files.",
                                      file_okay=False)] = Path("schemas"),
) -> None:
    """Write the JSON Schemas of every event on the wire."""
    from streams.contract.schema import write_schemas

    for path in write_schemas(out):
        console.print(str(path))


@app.command("forecast-report")
def forecast_report(
    trace: Annotated[list[Path], typer.Option(
        help="Trace file; repeat for more.", exists=True, dir_okay=False)],
    slot_seconds: Annotated[float, typer.Option(min=1, help="Slot length Δ in seconds.")] = 3600,
    horizon: Annotated[list[int] | None, typer.Option(
        help="Horizon in slots to report; repeat for more. Default: 1, 6, 12, 24.")] = None,
    price_model: Annotated[str, typer.Option(
        help="Price forecaster.")] = DEFAULT_PRICE_MODEL,
    availability_model: Annotated[str, typer.Option(
        help="Availability forecaster.")] = DEFAULT_AVAILABILITY_MODEL,
    json_file: Annotated[Path | None, typer.Option("--json", help="Write the JSON report.",
                                                   dir_okay=False)] = None,
    plots: Annotated[Path | None, typer.Option(help="Directory for the plots.",
                                               file_okay=False)] = None,
    on_demand_price: OnDemandPrice = None,
    prices: PricesFile = None,
) -> None:
    """Forecast accuracy of the price and availability models against baselines, per market
    and horizon, by progressive validation over the traces."""
    from solver.forecast import DEFAULT_HORIZONS
    from streams.reports.forecast import run_forecast_report

    try:
        data = build_market_data(_load_traces(trace, on_demand_price, prices), slot_seconds)
        run_forecast_report(data, horizon or DEFAULT_HORIZONS, json_file, plots, True,
                            price_model=price_model, availability_model=availability_model,
                            console=console)
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc


Broker = Annotated[str | None, typer.Option(
    "--bootstrap-servers", help="Kafka host:port[,host:port] (env SPOTSCHED_BOOTSTRAP_SERVERS).")]
MetricsPort = Annotated[int | None, typer.Option(
    help="Port of Prometheus /metrics; 0 = off (env SPOTSCHED_METRICS_PORT).")]
MetricsHost = Annotated[str | None, typer.Option(
    help="Address /metrics binds to (env SPOTSCHED_METRICS_HOST; default 127.0.0.1, "
    "0.0.0.0 for every interface).")]


@app.command()
def markets(
    trace: Annotated[list[Path], typer.Option(
        help="Trace file; repeat for more.", exists=True, dir_okay=False)],
    on_demand_price: OnDemandPrice = None,
    prices: PricesFile = None,
) -> None:
    """Print the market catalogue {market key: on-demand USD/h} of traces, for --markets."""
    from streams.settings import write_catalogue

    try:
        catalogue = [t.market for t in _load_traces(trace, on_demand_price, prices)]
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    typer.echo(write_catalogue(catalogue), nl=False)


@app.command()
def worker(
    bootstrap_servers: Broker = None,
    markets: Annotated[Path | None, typer.Option(
        help="Market catalogue JSON (env SPOTSCHED_MARKETS_FILE).", exists=True,
        dir_okay=False)] = None,
    policy: Annotated[str | None, typer.Option(help="Scheduling policy.")] = None,
    slot_seconds: Annotated[float | None, typer.Option(help="Slot length Δ in seconds.")] = None,
    job_partitions: Annotated[int | None, typer.Option(help="Partitions of job events.")] = None,
    market_partitions: Annotated[int | None, typer.Option(
        help="Partitions of market ticks.")] = None,
    app_id: Annotated[str | None, typer.Option(help="Consumer group / app id.")] = None,
    data_dir: Annotated[Path | None, typer.Option(help="Local state directory.")] = None,
    metrics_port: MetricsPort = None,
    metrics_host: MetricsHost = None,
    log_level: Annotated[str, typer.Option(help="Log level.")] = "WARNING",
) -> None:
    """Run a scheduler worker (Faust) until SIGINT/SIGTERM; start more to scale out."""
    import asyncio

    from prometheus_client import CollectorRegistry

    from streams.kafka.connect import BrokerError
    from streams.kafka.topics import ensure_topics
    from streams.runners.kafka import RateLimitedWorker, create_app
    from streams.runtime import serve_metrics

    settings = _settings(
        bootstrap_servers=bootstrap_servers, markets_file=markets, policy=policy,
        slot_seconds=slot_seconds, job_partitions=job_partitions,
        market_partitions=market_partitions, app_id=app_id, data_dir=data_dir,
        metrics_port=metrics_port, metrics_host=metrics_host)
    _broker_client(log_level)
    try:
        asyncio.run(ensure_topics(settings))
        registry = CollectorRegistry()
        faust_app = create_app(settings, registry)
        serve_metrics(settings, registry)
    except (ValueError, OSError, BrokerError) as exc:
        _fail(exc)
    RateLimitedWorker(faust_app, loglevel=log_level, quiet=True).execute_from_commandline()


@app.command()
def submit(
    jobs: Annotated[Path, typer.Argument(help="JSON or CSV file of jobs.", exists=True,
                                         dir_okay=False)],
    bootstrap_servers: Broker = None,
) -> None:
    """Validate jobs against the event contract and publish their submissions."""
    import asyncio
    import time

    from streams.kafka.clients import publish_job_events
    from streams.kafka.connect import BrokerError
    from streams.replay import submission
    from streams.traces.jobs_file import load_jobs

    settings = _settings(bootstrap_servers=bootstrap_servers)
    _broker_client()
    try:
        now = time.time()
        events = [submission(job, min(now, job.release)) for job in load_jobs(jobs)]
        count = asyncio.run(publish_job_events(settings, events))
    except (ValueError, BrokerError) as exc:
        _fail(exc)
    console.print(f"published {count} job submissions")


@app.command()
def cancel(
    job_id: Annotated[str, typer.Argument(help="Job to cancel.")],
    reason: Annotated[str | None, typer.Option(help="Why.")] = None,
    bootstrap_servers: Broker = None,
) -> None:
    """Publish a job cancellation."""
    import asyncio
    import time

    from pydantic import ValidationError

    from streams.contract import JobCancelled, describe_validation_error
    from streams.kafka.clients import publish_job_events
    from streams.kafka.connect import BrokerError

    settings = _settings(bootstrap_servers=bootstrap_servers)
    _broker_client()
    try:
        event = JobCancelled(event_time=time.time(), job_id=job_id, reason=reason)
    except ValidationError as exc:
        _fail(ValueError(describe_validation_error(exc)))
    try:
        asyncio.run(publish_job_events(settings, [event]))
    except (ValueError, BrokerError) as exc:
        _fail(exc)
    console.print(f"cancelled {job_id}")


@app.command()
def decisions(
    bootstrap_servers: Broker = None,
    json_lines: Annotated[bool, typer.Option("--json", help="One JSON event per line.")] = False,
    follow: Annotated[bool, typer.Option(help="Keep waiting for new decisions.")] = False,
    group: Annotated[str | None, typer.Option(
        help="Consumer group: resume where it left off.")] = None,
) -> None:
    """Tail provisioning decisions as a table or JSON lines."""
    import asyncio

    from rich.table import Table

    from streams.contract import dump_event
    from streams.kafka.clients import read_decisions
    from streams.kafka.connect import BrokerError

    settings = _settings(bootstrap_servers=bootstrap_servers)
    _broker_client()

    async def tail() -> None:
        table = Table("epoch", "slot start", "job", "market", "spot", "on-demand", "USD",
                      "slack h", "policy", "reason")
        async for d in read_decisions(settings, group, idle_timeout=None if follow else 3.0):
            if json_lines:
                typer.echo(dump_event(d).decode())
            elif follow:
                console.print(f"{d.epoch} {d.slot_start:%Y-%m-%d %H:%M} {d.job_id} {d.market} "
                              f"spot={d.spot} on-demand={d.on_demand} "
                              f"${d.expected_cost_usd:.2f} {d.reason}")
            else:
                table.add_row(str(d.epoch), f"{d.slot_start:%Y-%m-%d %H:%M}", d.job_id,
                              d.market, str(d.spot), str(d.on_demand),
                              f"{d.expected_cost_usd:.2f}",
                              f"{d.slack_seconds / SECONDS_PER_HOUR:.1f}",
                              d.policy, d.reason)
        if not json_lines and not follow:
            console.print(table)

    try:
        asyncio.run(tail())
    except (ValueError, BrokerError) as exc:
        _fail(exc)


@app.command()
def connector(
    name: Annotated[str, typer.Argument(help="Connector to run: log, sim or aws.")],
    bootstrap_servers: Broker = None,
    data_dir: Annotated[Path | None, typer.Option(
        help="Directory of the connector's durable records.")] = None,
    group: Annotated[str | None, typer.Option(
        help="Consumer group (default: APP_ID-connector-NAME).")] = None,
    metrics_port: MetricsPort = None,
    metrics_host: MetricsHost = None,
    json_lines: Annotated[bool, typer.Option(
        "--json", help="log: one JSON event per line.")] = False,
    trace: Annotated[list[Path] | None, typer.Option(
        help="sim: trace file; repeat for more. Default: the synthetic market.",
        exists=True, dir_okay=False)] = None,
    seed: Annotated[int, typer.Option(help="sim: seed of the synthetic market.")] = 0,
    markets: Annotated[int, typer.Option(min=1, max=8, help="sim: synthetic markets.")] = 4,
    days: Annotated[float, typer.Option(min=1, help="sim: synthetic market days.")] = 14,
    slot_seconds: Annotated[float | None, typer.Option(
        help="sim: slot length Δ in seconds.")] = None,
    availability_reports: Annotated[bool, typer.Option(
        help="sim: also report lost spot as availability ticks (off: the market ticks "
        "already carry the trace's availability).")] = False,
    image_id: Annotated[list[str] | None, typer.Option(
        help="aws: AMI for every region, or REGION=AMI; repeatable.")] = None,
    launch_template: Annotated[str | None, typer.Option(
        help="aws: launch template name, present in each region.")] = None,
    region: Annotated[list[str] | None, typer.Option(
        help="aws: region to reconcile; repeatable. Default: the AWS regions of the "
        "catalogue in SPOTSCHED_MARKETS_FILE.")] = None,
    endpoint_url: Annotated[str | None, typer.Option(
        help="aws: EC2 endpoint, e.g. a local moto server.")] = None,
    spot_max_price: Annotated[float | None, typer.Option(
        help="aws: highest spot price in USD/h (default: the on-demand price).")] = None,
    on_demand_price: OnDemandPrice = None,
    prices: PricesFile = None,
    log_level: Annotated[str, typer.Option(help="Log level.")] = "INFO",
    kill_after_apply: Annotated[int, typer.Option(hidden=True)] = 0,
) -> None:
    """Run a connector on the provisioning decisions until SIGINT/SIGTERM."""
    import logging

    from connectors.worker import ConnectorWorker, WorkerOptions, parse_image_ids
    from streams.kafka.connect import BrokerError

    _broker_client(log_level)
    logging.getLogger("aiokafka").setLevel(max(logging.WARNING, logging.root.level))
    settings = _settings(bootstrap_servers=bootstrap_servers, data_dir=data_dir,
                         metrics_port=metrics_port, metrics_host=metrics_host,
                         slot_seconds=slot_seconds)
    try:
        options = WorkerOptions(
            name=name, group=group, log_json=json_lines,
            sim_ticks=tuple(_load_traces(trace, on_demand_price, prices)) if trace else (),
            sim_market=SyntheticMarketSpec(seed=seed, n_markets=markets, days=days),
            sim_availability_reports=availability_reports,
            aws_image_ids=parse_image_ids(image_id or []), aws_launch_template=launch_template,
            aws_regions=tuple(region or ()), aws_endpoint_url=endpoint_url,
            aws_spot_max_price=spot_max_price, kill_after_apply=kill_after_apply)
        worker = ConnectorWorker(settings, options)
        worker.run()
    except (ValueError, OSError, BrokerError) as exc:
        _fail(exc)


feed = typer.Typer(help="Live market feeds: publish a cloud's spot prices as market ticks.",
                   no_args_is_help=True)
app.add_typer(feed, name="feed")


def _utc_option(value: str | None, flag: str) -> float | None:
    """Unix seconds of an ISO-8601 option value that carries Z or an offset."""
    from datetime import datetime

    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise ValueError(f"{flag} {value!r}: expected an ISO-8601 time with Z or an offset, "
                         "e.g. 2025-01-06T00:00:00Z")
    return moment.timestamp()


@feed.command("aws")
def feed_aws(
    markets: Annotated[Path | None, typer.Option(
        help="Market catalogue JSON whose aws markets to feed (env SPOTSCHED_MARKETS_FILE).",
        exists=True, dir_okay=False)] = None,
    zone: Annotated[list[str] | None, typer.Option(
        help="Availability zone to feed instead of the catalogue's; repeatable, with "
        "--instance-type.")] = None,
    instance_type: Annotated[list[str] | None, typer.Option(
        help="Instance type to feed in every --zone; repeatable.")] = None,
    region: Annotated[list[str] | None, typer.Option(
        help="Feed only the markets of this region; repeatable.")] = None,
    bootstrap_servers: Broker = None,
    endpoint_url: Annotated[str | None, typer.Option(
        help="EC2 endpoint, e.g. a local moto server.")] = None,
    product: Annotated[str, typer.Option(help="Spot price product description.")] = "Linux/UNIX",
    since: Annotated[str | None, typer.Option(
        help="Where a market without feed ticks on the topic starts (ISO-8601, rounded down "
        "to a slot boundary). Default: the current slot.")] = None,
    until: Annotated[str | None, typer.Option(
        help="Stop once ticks up to this time (ISO-8601) are published. Default: never.")] = None,
    poll_seconds: Annotated[float, typer.Option(
        help="Seconds between two requests for new prices.")] = 60.0,
    heartbeat_seconds: Annotated[float, typer.Option(
        help="Republish every market's price at these multiples of event time; must divide "
        "the slot length.")] = 60.0,
    lag_seconds: Annotated[float, typer.Option(
        help="Publish event time up to now minus this, for prices listed late.")] = 30.0,
    available: Annotated[int, typer.Option(
        help="Spot instances a market is assumed to offer at each slot boundary.")] = 8,
    max_attempts: Annotated[int, typer.Option(
        help="Attempts per request before giving up (throttling, network, credentials).")] = 5,
    slot_seconds: Annotated[float | None, typer.Option(
        help="Slot length Δ in seconds (env SPOTSCHED_SLOT_SECONDS).")] = None,
    market_partitions: Annotated[int | None, typer.Option(
        help="Partitions of market ticks (env SPOTSCHED_MARKET_PARTITIONS).")] = None,
    metrics_port: Annotated[int | None, typer.Option(
        help="Port of Prometheus /metrics; 0 = off (env SPOTSCHED_METRICS_PORT).")] = None,
    metrics_host: MetricsHost = None,
    on_demand_price: OnDemandPrice = None,
    prices: PricesFile = None,
    log_level: Annotated[str, typer.Option(help="Log level.")] = "INFO",
    crash_after_ticks: Annotated[int, typer.Option(hidden=True)] = 0,
) -> None:
    """Publish EC2 spot prices (DescribeSpotPriceHistory) of the catalogue's aws markets to the
    market-ticks topic, with heartbeats and slot-boundary availability; resumes from the topic
    after a restart."""
    import asyncio
    import logging

    from aiokafka.errors import KafkaError
    from prometheus_client import CollectorRegistry

    from streams.feeds.aws import AwsSpotPriceSource
    from streams.feeds.base import FeedError
    from streams.feeds.catalogue import feed_markets
    from streams.feeds.planner import FeedGrid
    from streams.feeds.retry import RetryPolicy
    from streams.feeds.runner import FeedOptions, FeedRunner, serve
    from streams.kafka.topics import ensure_topics
    from streams.runtime import serve_metrics

    logging.basicConfig(level=log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = _settings(bootstrap_servers=bootstrap_servers, markets_file=markets,
                             slot_seconds=slot_seconds, market_partitions=market_partitions,
                             metrics_port=metrics_port, metrics_host=metrics_host)
        catalogue = settings.catalogue() if settings.markets_file is not None else None
        chosen = feed_markets("aws", catalogue, zone or (), instance_type or (), region or (),
                              _on_demand_prices(on_demand_price, prices))
        options = FeedOptions(
            grid=FeedGrid(heartbeat_seconds, settings.slot_seconds, available),
            poll_seconds=poll_seconds, lag_seconds=lag_seconds,
            since=_utc_option(since, "--since"), until=_utc_option(until, "--until"),
            retry=RetryPolicy(attempts=max_attempts), crash_after_ticks=crash_after_ticks)
        registry = CollectorRegistry()
        runner = FeedRunner(settings, chosen, AwsSpotPriceSource(endpoint_url, product),
                            options, registry)
        asyncio.run(ensure_topics(settings, [settings.topics.market_ticks]))
        serve_metrics(settings, registry)
    except (ValueError, OSError, KafkaError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    try:
        serve(runner)
    except (FeedError, KafkaError, OSError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc


dev = typer.Typer(help="Development helpers.", no_args_is_help=True)
app.add_typer(dev, name="dev")


@dev.command("kafka")
def dev_kafka(
    port: Annotated[int, typer.Option(help="Client port.")] = 9092,
    data_dir: Annotated[Path | None, typer.Option(
        help="Keep the broker's data here (default: a temporary directory).")] = None,
) -> None:
    """Run a single-node Kafka (KRaft) on 127.0.0.1 until Ctrl-C."""
    from streams.kafka.devkafka import DevKafkaError, serve

    try:
        serve(port, data_dir)
    except DevKafkaError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc


@app.command()
def evaluate(
    trace: Annotated[list[Path] | None, typer.Option(
        help="Trace file (any supported format); repeat for more. Default: a synthetic market "
        "of 6 zones over 46 days of 195 s ticks.", exists=True, dir_okay=False)] = None,
    scenario: Annotated[list[str] | None, typer.Option(
        help="Scenario: cant-be-late, fine-tune or scarce; repeatable. Default: cant-be-late "
        "and fine-tune.")] = None,
    policy: Annotated[list[str] | None, typer.Option(
        help="Policy NAME[:key=value,...] to evaluate; repeat for more. Default: every "
        "registered one but the scenario's slow ones (docs/evaluation.md).")] = None,
    windows: Annotated[int, typer.Option(min=1, help="Seeded windows per scenario.")] = 30,
    seed: Annotated[int, typer.Option(
        min=0, help="Seed of the windows, workloads and learners.")] = 0,
    forecast: Annotated[str, typer.Option(
        help="What planners plan on unless their spec says: distribution (the learned "
        "distributions), point (the learned forecasts read as certain) or oracle (the "
        "realised market).")] = "distribution",
    work_hours: Annotated[float | None, typer.Option(
        help="cant-be-late: hours of work of each job (with --deadline-hours; default: the "
        "48 h/52 h, 48 h/60 h and 12 h/16 h tasks).")] = None,
    deadline_hours: Annotated[list[float] | None, typer.Option(
        help="cant-be-late: deadline in hours after the window starts; repeatable "
        "(default 52 and 60 with --work-hours).")] = None,
    overhead_hours: Annotated[list[float] | None, typer.Option(
        help="cant-be-late: restart overhead in hours; repeatable. Default: 0.02 and 0.2.")
    ] = None,
    value_of_forecasts: Annotated[bool, typer.Option(
        "--value-of-forecasts", help="Also run the planners on perfect, point and distribution "
        "forecasts (a table per case, and a plot with --plots).")] = False,
    plots: Annotated[Path | None, typer.Option(
        help="Directory for PNG plots (adds the CHC sensitivity study on fine-tune).",
        file_okay=False)] = None,
    json_file: Annotated[Path | None, typer.Option(
        "--json", help="File for the JSON summary.", dir_okay=False)] = None,
    on_demand_price: OnDemandPrice = None,
    prices: PricesFile = None,
) -> None:
    """Evaluate policies over seeded windows of a trace (Can't Be Late, fine-tuning, scarce
    capacity)."""
    from solver.evaluation.evaluate import EvaluationSettings
    from streams.reports.evaluation import run_evaluation

    try:
        if trace:
            ticks = _load_traces(trace, on_demand_price, prices)
            source = ", ".join(p.name for p in trace)
        else:
            spec = SyntheticMarketSpec(seed=seed, n_markets=6, days=46, tick_seconds=195)
            ticks, source = synthetic_ticks(spec), f"synthetic market (seed {seed})"
        settings = EvaluationSettings(forecast=forecast)  # type: ignore[arg-type]
        tasks = _cant_be_late_spec(work_hours, deadline_hours, overhead_hours)
        run_evaluation(ticks, source, scenario or ["cant-be-late", "fine-tune"], policy,
                       windows, seed, console, plots, json_file, settings, tasks,
                       value_of_forecasts)
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc


def _cant_be_late_spec(work: float | None, deadlines: list[float] | None,
                       overheads: list[float] | None) -> CantBeLateSpec:
    """The Can't Be Late tasks and overheads the flags ask for (the defaults where silent)."""
    default = CantBeLateSpec()
    tasks = default.tasks
    if work is not None or deadlines:
        hours = 48.0 if work is None else work
        tasks = tuple((hours, d) for d in (deadlines or (52.0, 60.0)))
    return CantBeLateSpec(tasks=tasks,
                          overheads_hours=tuple(overheads or default.overheads_hours))


def main() -> None:
    app()
