"""``spotsched evaluate``: policies over seeded windows of a trace."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from solver.evaluation.scenarios import CantBeLateSpec

from streams.cli.app import app
from streams.cli.common import market_ticks
from streams.cli.errors import console, fail
from streams.cli.options import (
    OnDemandPrice,
    PricesFile,
    check_policies,
    non_negative,
    positive_count,
    writes_dir,
    writes_file,
)


@app.command()
def evaluate(
    trace: Annotated[list[Path] | None, typer.Option(
        metavar="<file>", help="Trace file (any supported format); repeat for more. Default: "
        "a synthetic market of 6 zones over 46 days of 195 s ticks.", exists=True,
        dir_okay=False)] = None,
    scenario: Annotated[list[str] | None, typer.Option(
        metavar="<name>", help="Scenario: cant-be-late, fine-tune or scarce; repeatable. "
        "Default: cant-be-late and fine-tune.")] = None,
    policy: Annotated[list[str] | None, typer.Option(
        metavar="<spec>", help="Policy NAME[:key=value,...] to evaluate; repeat for more. "
        "Default: every registered one but the scenario's slow ones (docs/evaluation.md).",
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
        metavar="<hours>", help="cant-be-late: deadline in hours after the window starts; "
        "repeatable (default 52 and 60 with --work-hours).")] = None,
    overhead_hours: Annotated[list[float] | None, typer.Option(
        metavar="<hours>",
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
    """Evaluate policies over seeded windows of a trace.

    Scenarios: Can't Be Late, fine-tuning and scarce capacity (docs/evaluation.md)."""
    from solver.evaluation.evaluate import EvaluationSettings
    from solver.evaluation.resample import resample_availability
    from streams.reports.evaluation import run_evaluation

    ticks, source = market_ticks(trace or [], seed, 6, 46, on_demand_price, prices, 195)
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
    from solver.evaluation.scenarios import CantBeLateSpec

    default = CantBeLateSpec()
    tasks = default.tasks
    if work is not None or deadlines:
        hours = 48.0 if work is None else work
        tasks = tuple((hours, d) for d in (deadlines or (52.0, 60.0)))
    return CantBeLateSpec(tasks=tasks,
                          overheads_hours=tuple(overheads or default.overheads_hours))
