"""``spotsched forecast-report``: how well the forecasters predict a trace."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from solver.market import MarketData

from streams.cli.app import app
from streams.cli.common import load_trace_files
from streams.cli.errors import console, fail, writing
from streams.cli.options import (
    OnDemandPrice,
    PricesFile,
    SlotSeconds,
    Traces,
    positive_count,
    writes_dir,
    writes_file,
)


@app.command("forecast-report")
def forecast_report(
    trace: Traces,
    slot_seconds: SlotSeconds = 3600,
    horizon: Annotated[list[int] | None, typer.Option(
        metavar="<slots>",
        help="Horizon in slots to report; repeat for more. Default: 1, 6, 12, 24.",
        callback=positive_count)] = None,
    price_model: Annotated[str | None, typer.Option(
        help="Price forecaster. Default: the one the workers plan on.")] = None,
    availability_model: Annotated[str | None, typer.Option(
        help="Availability forecaster. Default: the one the workers plan on.")] = None,
    json_file: Annotated[Path | None, writes_file("Write the JSON report.", "--json")] = None,
    plots: Annotated[Path | None, writes_dir("Folder for the plots.")] = None,
    on_demand_price: OnDemandPrice = None,
    prices: PricesFile = None,
) -> None:
    """Score the forecasters on traces, against baselines.

    The accuracy of the price and availability models per market and horizon, by progressive
    validation over the traces."""
    from evaluation.reports.forecast import forecast_steps, run_forecast_report
    from solver.forecast import DEFAULT_AVAILABILITY_MODEL, DEFAULT_HORIZONS, DEFAULT_PRICE_MODEL
    from solver.market import build_market_data
    from streams.cli.progress import Steps

    try:
        data = build_market_data(load_trace_files(trace, on_demand_price, prices), slot_seconds)
        horizons = _check_horizons(data, horizon or DEFAULT_HORIZONS)
        with writing(), Steps("forecasting", forecast_steps(data), "forecasters × markets"
                                 ) as steps:
            run_forecast_report(
                data, horizons, json_file, plots, steps.advance,
                price_model=price_model or DEFAULT_PRICE_MODEL,
                availability_model=availability_model or DEFAULT_AVAILABILITY_MODEL,
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
