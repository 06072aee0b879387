"""The ``spotsched`` command line: thin commands that parse, build inputs and call one function."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from solver.evaluation.compare import PolicySummary
    from solver.simulator import SimulationResult
    from streams.feeds.base import PriceSource
    from streams.feeds.runner import FeedOptions
    from streams.settings import Settings

from solver.evaluation.scenarios import CantBeLateSpec
from solver.forecast.registry import DEFAULT_AVAILABILITY_MODEL, DEFAULT_PRICE_MODEL
from solver.job import Job
from solver.market import (
    SECONDS_PER_HOUR,
    Market,
    MarketData,
    MarketTicks,
    build_market_data,
)
from solver.policies import POLICIES
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from solver.workload import WorkloadSpec, generate_jobs
from streams.cli_errors import OneLineErrors, console, fail, wrote
from streams.cli_options import (
    Broker,
    Ec2Endpoint,
    LogLevel,
    MarketPartitions,
    MarketsFile,
    MetricsHost,
    MetricsPort,
    OnDemandPrice,
    PricesFile,
    Seed,
    SlotSeconds,
    SlotSecondsSetting,
    SyntheticDays,
    SyntheticMarkets,
    Traces,
    TracesOrSynthetic,
    at_least,
    check_policies,
    non_negative,
    positive_count,
    writes_dir,
    writes_file,
)

app = typer.Typer(
    cls=OneLineErrors,
    help="Deadline-aware scheduling of fine-tuning jobs on spot and on-demand instances.",
    no_args_is_help=True,
    add_completion=False,
)

DEFAULT_POLICIES = ("on-demand", "spot-only", "greedy", "uniform-progress", "prediction-free",
                    "chc", "risk-aware", "policy-selection")


def _print_version(value: bool) -> None:
    from importlib.metadata import version

    if value:
        console.print(f"spotsched {version('spotsched')}", highlight=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version,
        help="Print the installed version and exit.")] = False,
) -> None:
    """Deadline-aware scheduling of fine-tuning jobs on spot and on-demand instances."""


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
    tick_seconds: float = 300.0,
) -> tuple[list[MarketTicks], str]:
    """The ticks of the trace files, or of the synthetic market, and a name for them; a bad
    one exits with a one-line error."""
    try:
        if traces:
            return (_load_traces(traces, on_demand_price, prices),
                    ", ".join(p.name for p in traces))
        spec = SyntheticMarketSpec(seed=seed, n_markets=markets, days=days,
                                   tick_seconds=tick_seconds)
    except ValueError as exc:
        fail(exc)
    return synthetic_ticks(spec), f"synthetic market (seed {seed})"


def _settings(**overrides: object) -> Settings:
    """Settings from the environment, with the flags that were given on top; a bad one exits
    with a one-line error."""
    from streams.settings import load_settings

    try:
        return load_settings(**overrides)
    except ValueError as exc:
        fail(exc)


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
        fail(exc)
    console.print(f"published {sent} events ({len(jobs)} jobs) to {settings.bootstrap_servers}")


Policies = Annotated[list[str] | None, typer.Option(
    "--policy", callback=check_policies,
    help=f"Policy NAME[:key=value,...] to run; repeat for more. Names: {', '.join(POLICIES)}. "
    f"Default: {', '.join(DEFAULT_POLICIES)}.")]


@app.command()
def replay(
    trace: TracesOrSynthetic = None,
    jobs: Annotated[Path | None, typer.Option(
        help="Workload file (JSON or CSV of jobs, e.g. examples/jobs.json) instead of "
        "generated jobs.", exists=True, dir_okay=False)] = None,
    n_jobs: Annotated[int, typer.Option(help="Jobs to generate.", callback=positive_count)] = 20,
    fixed_count: Annotated[bool, typer.Option(
        "--fixed-count", help="Generated jobs run at a fixed instance count (N_min = N_max) "
        "instead of N_min = N_max / 2.")] = False,
    policy: Policies = None,
    seed: Seed = 0,
    slot_seconds: SlotSeconds = 3600,
    markets: SyntheticMarkets = 4,
    days: SyntheticDays = 14,
    report: Annotated[Path | None, writes_dir("Folder for report.json and replay.png.")] = None,
    decisions: Annotated[Path | None, writes_file(
        "Write every decision as JSON lines (policy, time, epoch, job, market, spot, "
        "on-demand).")] = None,
    per_job: Annotated[bool, typer.Option(
        "--per-job", help="Also print every job's outcome under every policy.")] = False,
    job_partitions: Annotated[int, typer.Option(
        help="Scheduler partitions: jobs split as Kafka does, each planned alone.",
        callback=positive_count)] = 1,
    broker: Annotated[str | None, typer.Option(
        help="Publish the replay to Kafka at host:port instead of simulating in-process.")] = None,
    speed: Annotated[float | None, typer.Option(
        help="With --broker: event-time seconds per second (default: flat out).",
        callback=at_least(0.001, "at least 0.001 event-time seconds per second"))] = None,
    on_demand_price: OnDemandPrice = None,
    prices: PricesFile = None,
) -> None:
    """Replay a market and a workload: in-process through the simulator (no broker needed), or
    into Kafka with --broker for the workers to schedule."""
    from streams.reports.replay import jobs_table, summary_table, write_decisions, write_report

    policy = policy or list(DEFAULT_POLICIES)
    ticks, source = _market_ticks(trace or [], seed, markets, days, on_demand_price, prices)
    data, workload = _replay_inputs(ticks, slot_seconds, jobs, n_jobs, seed, fixed_count)
    if broker is not None:
        _publish_replay(broker, ticks, workload, speed, job_partitions)
        return
    results, summaries = _simulate(data, workload, policy, job_partitions)
    console.print(summary_table(summaries, f"{len(workload)} jobs on {source}: "
                                f"{len(data.markets)} markets × {data.n_slots} slots of "
                                f"{data.slot_seconds:g} s"))
    if per_job:
        console.print(jobs_table(results))
    if decisions is not None:
        wrote(write_decisions(decisions, data, results))
    if report is not None:
        inputs = {"traces": [str(p) for p in trace or []], "jobs": str(jobs) if jobs else None,
                  "n_jobs": len(workload), "fixed_count": fixed_count,
                  "policies": list(policy), "seed": seed,
                  "slot_seconds": slot_seconds}
        wrote(*write_report(report, data, workload, results, summaries, inputs))


def _replay_inputs(ticks: list[MarketTicks], slot_seconds: float, jobs: Path | None,
                   n_jobs: int, seed: int, fixed_count: bool) -> tuple[MarketData, list[Job]]:
    """The market data and the workload of a replay: the --jobs file or generated jobs."""
    from streams.traces.jobs_file import load_jobs

    try:
        data = build_market_data(ticks, slot_seconds)
        if jobs is not None:
            return data, load_jobs(jobs)
        shape = WorkloadSpec(seed=seed, n_min_share=1.0) if fixed_count else WorkloadSpec(seed=seed)
        return data, generate_jobs(data, n_jobs, shape)
    except ValueError as exc:
        fail(exc)


def _simulate(data: MarketData, workload: list[Job], policies: list[str],
              job_partitions: int) -> tuple[list[SimulationResult], list[PolicySummary]]:
    """Every policy over the workload in-process, with a progress bar."""
    from rich.progress import Progress

    from solver.evaluation.compare import compare_policies
    from streams.kafka.partitions import partition_for

    try:
        with Progress(console=console, transient=True) as bar:
            groups = len({partition_for(j.id, job_partitions) for j in workload}) or 1
            task = bar.add_task("replaying", total=data.n_slots * len(policies) * groups)
            return compare_policies(
                data, workload, policies, progress=lambda n: bar.advance(task, n),
                partition_of=lambda job_id: partition_for(job_id, job_partitions))
    except ValueError as exc:
        fail(exc)


@app.command()
def schema(
    out: Annotated[Path, writes_dir("Folder for the JSON Schema files.")] = Path("schemas"),
) -> None:
    """Write the JSON Schemas of every event on the wire."""
    from streams.contract.schema import write_schemas

    wrote(*write_schemas(out))


@app.command("forecast-report")
def forecast_report(
    trace: Traces,
    slot_seconds: SlotSeconds = 3600,
    horizon: Annotated[list[int] | None, typer.Option(
        help="Horizon in slots to report; repeat for more. Default: 1, 6, 12, 24.",
        callback=positive_count)] = None,
    price_model: Annotated[str, typer.Option(
        help="Price forecaster.")] = DEFAULT_PRICE_MODEL,
    availability_model: Annotated[str, typer.Option(
        help="Availability forecaster.")] = DEFAULT_AVAILABILITY_MODEL,
    json_file: Annotated[Path | None, writes_file("Write the JSON report.", "--json")] = None,
    plots: Annotated[Path | None, writes_dir("Folder for the plots.")] = None,
    on_demand_price: OnDemandPrice = None,
    prices: PricesFile = None,
) -> None:
    """Forecast accuracy of the price and availability models against baselines, per market
    and horizon, by progressive validation over the traces."""
    from solver.forecast import DEFAULT_HORIZONS
    from streams.reports.forecast import run_forecast_report

    try:
        data = build_market_data(_load_traces(trace, on_demand_price, prices), slot_seconds)
        horizons = _check_horizons(data, horizon or DEFAULT_HORIZONS)
        run_forecast_report(data, horizons, json_file, plots, True,
                            price_model=price_model, availability_model=availability_model,
                            console=console)
    except ValueError as exc:
        fail(exc)


def _check_horizons(data: MarketData, horizons: list[int] | tuple[int, ...]) -> list[int]:
    """The horizons, each of which the market data can score: a forecast ``h`` slots ahead is
    scored against a slot that comes ``h`` after the first."""
    longest = data.n_slots - 1
    for h in horizons:
        if not 1 <= h <= longest:
            raise ValueError(f"--horizon {h}: expected between 1 and {longest} slots (the market "
                             f"data has {data.n_slots} slots of {data.slot_seconds:g} s)")
    return list(horizons)


@app.command()
def markets(
    trace: Traces,
    on_demand_price: OnDemandPrice = None,
    prices: PricesFile = None,
) -> None:
    """Print the market catalogue {market key: on-demand USD/h} of traces, for --markets."""
    from streams.settings import write_catalogue

    try:
        catalogue = [t.market for t in _load_traces(trace, on_demand_price, prices)]
    except ValueError as exc:
        fail(exc)
    typer.echo(write_catalogue(catalogue), nl=False)


@app.command()
def worker(
    bootstrap_servers: Broker = None,
    markets: MarketsFile = None,
    policy: Annotated[str | None, typer.Option(help="Scheduling policy.")] = None,
    slot_seconds: SlotSecondsSetting = None,
    job_partitions: Annotated[int | None, typer.Option(
        help="Partitions of job events (env SPOTSCHED_JOB_PARTITIONS).",
        callback=positive_count)] = None,
    market_partitions: MarketPartitions = None,
    app_id: Annotated[str | None, typer.Option(help="Consumer group / app id.")] = None,
    data_dir: Annotated[Path | None, typer.Option(help="Local state directory.")] = None,
    metrics_port: MetricsPort = None,
    metrics_host: MetricsHost = None,
    log_level: LogLevel = "WARNING",
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
        fail(exc)
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
        fail(exc)
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
        fail(ValueError(describe_validation_error(exc)))
    try:
        asyncio.run(publish_job_events(settings, [event]))
    except (ValueError, BrokerError) as exc:
        fail(exc)
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
        fail(exc)


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
    trace: TracesOrSynthetic = None,
    seed: Seed = 0,
    markets: SyntheticMarkets = 4,
    days: SyntheticDays = 14,
    slot_seconds: SlotSecondsSetting = None,
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
    endpoint_url: Ec2Endpoint = None,
    spot_max_price: Annotated[float | None, typer.Option(
        help="aws: highest spot price in USD/h (default: the on-demand price).")] = None,
    on_demand_price: OnDemandPrice = None,
    prices: PricesFile = None,
    log_level: LogLevel = "INFO",
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
        fail(exc)


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
    markets: MarketsFile = None,
    zone: Annotated[list[str] | None, typer.Option(
        help="Availability zone to feed instead of the catalogue's; repeatable, with "
        "--instance-type.")] = None,
    instance_type: Annotated[list[str] | None, typer.Option(
        help="Instance type to feed in every --zone; repeatable.")] = None,
    region: Annotated[list[str] | None, typer.Option(
        help="Feed only the markets of this region; repeatable.")] = None,
    bootstrap_servers: Broker = None,
    endpoint_url: Ec2Endpoint = None,
    product: Annotated[str, typer.Option(help="Spot price product description.")] = "Linux/UNIX",
    since: Annotated[str | None, typer.Option(help="Where a market without feed ticks on the "
        "topic starts (ISO-8601, down to a slot boundary). Default: the current slot.")] = None,
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
    slot_seconds: SlotSecondsSetting = None,
    market_partitions: MarketPartitions = None,
    metrics_port: MetricsPort = None,
    metrics_host: MetricsHost = None,
    on_demand_price: OnDemandPrice = None,
    prices: PricesFile = None,
    log_level: LogLevel = "INFO",
    crash_after_ticks: Annotated[int, typer.Option(hidden=True)] = 0,
) -> None:
    """Publish EC2 spot prices of the catalogue's aws markets as market ticks, with heartbeats
    and slot-boundary availability; resumes from the topic after a restart."""
    from streams.feeds.aws import AwsSpotPriceSource
    from streams.feeds.catalogue import feed_markets
    from streams.feeds.planner import FeedGrid
    from streams.feeds.retry import RetryPolicy
    from streams.feeds.runner import FeedOptions

    settings = _settings(bootstrap_servers=bootstrap_servers, markets_file=markets,
                         slot_seconds=slot_seconds, market_partitions=market_partitions,
                         metrics_port=metrics_port, metrics_host=metrics_host)
    try:
        catalogue = settings.catalogue() if settings.markets_file is not None else None
        chosen = feed_markets("aws", catalogue, zone or (), instance_type or (), region or (),
                              _on_demand_prices(on_demand_price, prices))
        options = FeedOptions(
            grid=FeedGrid(heartbeat_seconds, settings.slot_seconds, available),
            poll_seconds=poll_seconds, lag_seconds=lag_seconds,
            since=_utc_option(since, "--since"), until=_utc_option(until, "--until"),
            retry=RetryPolicy(attempts=max_attempts), crash_after_ticks=crash_after_ticks)
    except ValueError as exc:
        fail(exc)
    _serve_feed(settings, chosen, AwsSpotPriceSource(endpoint_url, product), options, log_level)


def _serve_feed(settings: Settings, markets: list[Market], source: PriceSource,
                options: FeedOptions, log_level: str) -> None:
    """Create the market-ticks topic, serve /metrics, then publish the feed until it is
    stopped or reaches --until."""
    import asyncio
    import logging

    from aiokafka.errors import KafkaError
    from prometheus_client import CollectorRegistry

    from streams.feeds.base import FeedError
    from streams.feeds.runner import FeedRunner, serve
    from streams.kafka.topics import ensure_topics
    from streams.runtime import serve_metrics

    logging.basicConfig(level=log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        registry = CollectorRegistry()
        runner = FeedRunner(settings, markets, source, options, registry)
        asyncio.run(ensure_topics(settings, [settings.topics.market_ticks]))
        serve_metrics(settings, registry)
    except (ValueError, OSError, KafkaError) as exc:
        fail(exc)
    try:
        serve(runner)
    except (FeedError, KafkaError, OSError) as exc:
        fail(exc, 1)


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
        fail(exc, 1)


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
        "registered one but the scenario's slow ones (docs/evaluation.md).",
        callback=check_policies)] = None,
    windows: Annotated[int, typer.Option(
        help="Seeded windows per scenario.", callback=positive_count)] = 30,
    seed: Annotated[int, typer.Option(
        help="Seed of the windows, workloads and learners.", callback=non_negative)] = 0,
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
    plots: Annotated[Path | None, writes_dir(
        "Folder for PNG plots (adds the CHC sensitivity study on fine-tune).")] = None,
    json_file: Annotated[Path | None, writes_file("File for the JSON summary.", "--json")] = None,
    resample: Annotated[int | None, typer.Option(
        help="Redraw each market's availability from the capacity model fitted to its whole "
        "trace, with this seed (prices kept): a market as predictable as the model assumes "
        "(docs/evaluation.md).", callback=non_negative)] = None,
    on_demand_price: OnDemandPrice = None,
    prices: PricesFile = None,
) -> None:
    """Evaluate policies over seeded windows of a trace (Can't Be Late, fine-tuning, scarce
    capacity)."""
    from solver.evaluation.evaluate import EvaluationSettings
    from solver.evaluation.resample import resample_availability
    from streams.reports.evaluation import run_evaluation

    ticks, source = _market_ticks(trace or [], seed, 6, 46, on_demand_price, prices, 195)
    try:
        if resample is not None:
            ticks = resample_availability(ticks, resample)
            source += f", availability redrawn from its model (seed {resample})"
        settings = EvaluationSettings(forecast=forecast)  # type: ignore[arg-type]
        tasks = _cant_be_late_spec(work_hours, deadline_hours, overhead_hours)
        run_evaluation(ticks, source, scenario or ["cant-be-late", "fine-tune"], policy,
                       windows, seed, console, plots, json_file, settings, tasks,
                       value_of_forecasts)
    except ValueError as exc:
        fail(exc)


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
