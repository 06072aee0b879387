"""``spotsched markets``: the market catalogue of traces, or of the synthetic market."""

from __future__ import annotations

import typer

from streams.cli.app import app
from streams.cli.common import market_ticks
from streams.cli.options import (
    OnDemandPrice,
    PricesFile,
    Seed,
    SyntheticDays,
    SyntheticMarkets,
    TracesOrSynthetic,
)


@app.command()
def markets(
    trace: TracesOrSynthetic = None,
    seed: Seed = 0,
    synthetic_markets: SyntheticMarkets = 4,
    days: SyntheticDays = 14,
    on_demand_price: OnDemandPrice = None,
    prices: PricesFile = None,
) -> None:
    """Print a market catalogue, for --markets-file.

    The catalogue is {market key: on-demand USD/h} of the traces, or of the synthetic market
    the other commands replay by default."""
    from streams.settings import write_catalogue

    ticks, _ = market_ticks(trace or [], seed, synthetic_markets, days, on_demand_price, prices)
    typer.echo(write_catalogue([t.market for t in ticks]), nl=False)
