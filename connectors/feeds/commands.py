"""``spotsched feed``: live market feeds onto Kafka."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from connectors.feeds.base import PriceSource
    from connectors.feeds.runner import FeedOptions
    from solver.market import Market
    from streams.settings import Settings

from streams.cli.common import broker_logging, command_settings, on_demand_prices
from streams.cli.errors import ExitCode, fail
from streams.cli.options import (
    DEFAULT_LOG_LEVEL,
    Broker,
    Ec2Endpoint,
    LogLevel,
    MarketPartitions,
    MarketsFile,
    MetricsHost,
    MetricsPort,
    OnDemandPrice,
    PricesFile,
    SlotSecondsSetting,
)

feed = typer.Typer(help="Publish a cloud's live spot prices as market ticks.",
                   no_args_is_help=True, rich_markup_mode=None)


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
    markets_file: MarketsFile = None,
    zone: Annotated[list[str] | None, typer.Option(
        metavar="<zone>", help="Availability zone to feed instead of the catalogue's; "
        "repeatable, with --instance-type.")] = None,
    instance_type: Annotated[list[str] | None, typer.Option(
        metavar="<type>", help="Instance type to feed in every --zone; repeatable.")] = None,
    region: Annotated[list[str] | None, typer.Option(
        metavar="<region>", help="Feed only the markets of this region; repeatable.")] = None,
    bootstrap_servers: Broker = None,
    endpoint_url: Ec2Endpoint = None,
    product: Annotated[str, typer.Option(help="Spot price product description.")] = "Linux/UNIX",
    since: Annotated[str | None, typer.Option(
        metavar="<time>", help="Where a market without feed ticks on the topic starts "
        "(ISO-8601, down to a slot boundary). Default: the current slot.")] = None,
    until: Annotated[str | None, typer.Option(
        metavar="<time>",
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
    log_level: LogLevel = DEFAULT_LOG_LEVEL,
    crash_after_ticks: Annotated[int, typer.Option(hidden=True)] = 0,
) -> None:
    """Publish EC2 spot prices as market ticks.

    The prices of the catalogue's aws markets, with heartbeats and slot-boundary availability;
    resumes from the topic after a restart."""
    from connectors.feeds.aws import AwsSpotPriceSource
    from connectors.feeds.catalogue import feed_markets
    from connectors.feeds.planner import FeedGrid
    from connectors.feeds.retry import RetryPolicy
    from connectors.feeds.runner import FeedOptions

    settings = command_settings(bootstrap_servers=bootstrap_servers, markets_file=markets_file,
                         slot_seconds=slot_seconds, market_partitions=market_partitions,
                         metrics_port=metrics_port, metrics_host=metrics_host)
    try:
        catalogue = settings.catalogue() if settings.markets_file is not None else None
        chosen = feed_markets("aws", catalogue, zone or (), instance_type or (), region or (),
                              on_demand_prices(on_demand_price, prices))
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

    from aiokafka.errors import KafkaError

    from connectors.feeds.base import FeedError
    from connectors.feeds.runner import FeedRunner
    from streams.kafka.topics import ensure_topics
    from streams.metrics_registry import service_registry
    from streams.runtime import run_until_stopped, serve_metrics

    broker_logging(log_level)
    try:
        registry = service_registry("feed")
        runner = FeedRunner(settings, markets, source, options, registry)
        asyncio.run(ensure_topics(settings, [settings.topics.market_ticks]))
        serve_metrics(settings, registry)
    except (ValueError, OSError, KafkaError) as exc:
        fail(exc)
    try:
        run_until_stopped(runner.run)
    except (FeedError, KafkaError, OSError) as exc:
        fail(exc, ExitCode.REJECTED)
