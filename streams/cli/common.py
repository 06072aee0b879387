"""What several commands share: their default policies, the market they run on, the settings
they read and how they log."""

from __future__ import annotations

import os
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

if TYPE_CHECKING:
    from solver.market import MarketTicks
    from streams.settings import Settings

from solver.policies.registry import POLICY_NAMES
from streams.cli.errors import fail
from streams.cli.options import check_policies

T = TypeVar("T")

ONE_SHOT_BROKER_SECONDS = 6.0
"""How long a one-shot command (submit, jobs, status...) waits for a broker that does not
answer, unless SPOTSCHED_BROKER_TIMEOUT_SECONDS says otherwise."""
START_A_BROKER = ("start one with `spotsched dev kafka` (a development broker on "
                  "127.0.0.1:9092), or name yours with --bootstrap-servers")

DEFAULT_POLICIES = ("on-demand", "spot-only", "greedy", "uniform-progress", "prediction-free",
                    "chc", "risk-aware", "policy-selection")


def counted(n: int, noun: str) -> str:
    """``1 job``, ``2 jobs``: a count and its noun, plural unless one."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def on_demand_prices(flags: list[str] | None, file: Path | None) -> dict[str, float]:
    """The user's on-demand prices from --prices and --on-demand-price."""
    from solver.traces.price_table import on_demand_overrides

    return on_demand_overrides(flags or (), file)


def load_trace_files(traces: list[Path], flags: list[str] | None,
                     file: Path | None) -> list[MarketTicks]:
    """The markets of trace files, priced with --on-demand-price and --prices."""
    from solver.traces import load_traces

    return load_traces(traces, on_demand_prices=on_demand_prices(flags, file))


def market_ticks(
    traces: list[Path], seed: int, markets: int, days: float,
    on_demand_price: list[str] | None = None, prices: Path | None = None,
    tick_seconds: float = 300.0,
) -> tuple[list[MarketTicks], str]:
    """The ticks of the trace files, or of the synthetic market, and a name for them; a bad
    one exits with a one-line error."""
    from solver.synthetic import SyntheticMarketSpec, synthetic_ticks

    try:
        if traces:
            return (load_trace_files(traces, on_demand_price, prices),
                    ", ".join(p.name for p in traces))
        spec = SyntheticMarketSpec(seed=seed, n_markets=markets, days=days,
                                   tick_seconds=tick_seconds)
    except ValueError as exc:
        fail(exc)
    return synthetic_ticks(spec), f"synthetic market (seed {seed})"


def command_settings(**overrides: object) -> Settings:
    """Settings from the environment, with the flags that were given on top; a bad one exits
    with a one-line error."""
    from streams.settings import load_settings

    try:
        return load_settings(**overrides)
    except ValueError as exc:
        fail(exc)


def one_shot_settings(follow: bool = False, **overrides: object) -> Settings:
    """:func:`command_settings` of a command that answers and exits: it gives up on a broker
    after :data:`ONE_SHOT_BROKER_SECONDS`; one that ``follow``s waits out outages as workers
    do."""
    from streams.settings import env_name

    if not follow and env_name("broker_timeout_seconds") not in os.environ:
        overrides.setdefault("broker_timeout_seconds", ONE_SHOT_BROKER_SECONDS)
    return command_settings(**overrides)


def run_on_broker(work: Coroutine[Any, Any, T]) -> T:
    """Run a command's work on the broker; a bad value or a broker problem exits with one line,
    a broker that does not answer with how to start one."""
    import asyncio

    from streams.kafka.connect import BrokerError, BrokerUnreachable

    try:
        return asyncio.run(work)
    except BrokerUnreachable as exc:
        fail(BrokerUnreachable(f"{exc}; {START_A_BROKER}"))
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except (ValueError, BrokerError) as exc:
        fail(exc)


def broker_logging(level: str = "WARNING") -> None:
    """Logging of a command that talks to Kafka: to stderr, repeats rate-limited."""
    from streams.runtime import configure_logging

    configure_logging(level)


Policies = Annotated[list[str] | None, typer.Option(
    "--policy", metavar="<spec>", callback=check_policies,
    help=f"Policy NAME[:key=value,...] to run; repeat for more. Names: {', '.join(POLICY_NAMES)}. "
    f"Default: {', '.join(DEFAULT_POLICIES)}.")]
