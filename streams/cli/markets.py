"""``spotsched markets``: the market catalogue of traces."""

from __future__ import annotations

import typer

from streams.cli.app import app
from streams.cli.common import load_trace_files
from streams.cli.errors import fail
from streams.cli.options import OnDemandPrice, PricesFile, Traces


@app.command()
def markets(
    trace: Traces,
    on_demand_price: OnDemandPrice = None,
    prices: PricesFile = None,
) -> None:
    """Print the market catalogue {market key: on-demand USD/h} of traces, for --markets."""
    from streams.settings import write_catalogue

    try:
        catalogue = [t.market for t in load_trace_files(trace, on_demand_price, prices)]
    except ValueError as exc:
        fail(exc)
    typer.echo(write_catalogue(catalogue), nl=False)
