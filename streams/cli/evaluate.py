"""``spotsched evaluate``: policies over seeded windows of a trace."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from solver.evaluation.scenarios import CantBeLateSpec, MultiRegionSpec

from streams.cli.app import app
from streams.cli.common import market_ticks
from streams.cli.errors import console, fail, writing
from streams.cli.options import (
    MigrationTableFile,
    OnDemandPrice,
    PricesFile,
    at_least,
    available_cores,
    check_policies,
    non_negative,
    one_of,
    positive_count,
    unwritable,
    writes_dir,
    writes_file,
)


def _scenarios() -> tuple[str, ...]:
    from solver.evaluation.scenarios import SCENARIOS

    return SCENARIOS


def _seed_splits() -> tuple[str, ...]:
    from solver.evaluation.shapes import SEED_SPLITS

    return SEED_SPLITS


def _shape_workloads() -> tuple[str, ...]:
    from solver.evaluation.shapes import WORKLOADS

    return WORKLOADS


def _forecast_kinds() -> tuple[str, ...]:
    from solver.policies.forecast_sources import FORECAST_KINDS

    return FORECAST_KINDS


def _executors() -> tuple[str, ...]:
    from evaluation.runner import EXECUTORS

    return EXECUTORS


@app.command()
def evaluate(
    trace: Annotated[list[Path] | None, typer.Option(
        metavar="<file>", help="Trace file (any supported format); repeat for more. Default: "
        "a synthetic market of 6 zones over 46 days of 195 s ticks.", exists=True,
        dir_okay=False)] = None,
    scenario: Annotated[list[str] | None, typer.Option(
        metavar="<name>", help="Scenario: cant-be-late, multi-region, fine-tune, scarce or "
        "shapes (synthetic markets of calibrated shapes; no trace read); repeatable. Default: "
        "cant-be-late and fine-tune.", callback=one_of(_scenarios))] = None,
    policy: Annotated[list[str] | None, typer.Option(
        metavar="<spec>", help="Policy NAME[:key=value,...] to evaluate; repeat for more. "
        "Default: every registered one but the scenario's slow ones (docs/evaluation.md).",
        callback=check_policies)] = None,
    windows: Annotated[int | None, typer.Option(
        help="Seeded windows per scenario. Default: 30; shapes: 3 per shape.",
        callback=positive_count)] = None,
    seeds: Annotated[str, typer.Option(
        metavar="<half>", help="shapes: the half of the market seeds to play: tune (to choose "
        "parameters on) or held-out (to report on).",
        callback=one_of(_seed_splits))] = "held-out",
    workload: Annotated[list[str] | None, typer.Option(
        metavar="<kind>", help="shapes: a kind of workload to play, one, fixed or elastic; "
        "repeatable. Default: all three.", callback=one_of(_shape_workloads))] = None,
    zone_count: Annotated[list[int] | None, typer.Option(
        metavar="<count>", help="shapes: a zone count to play, 1 to 30; repeatable. Default: "
        "3, 6, 13 and 30.")] = None,
    seed: Annotated[int, typer.Option(
        help="Seed of the windows, workloads and learners.", callback=non_negative)] = 0,
    forecast: Annotated[str, typer.Option(
        help="What planners plan on unless their spec says: distribution (the learned "
        "distributions), point (the learned forecasts read as certain) or oracle (the "
        "realised market).", callback=one_of(_forecast_kinds))] = "distribution",
    work_hours: Annotated[float | None, typer.Option(
        help="cant-be-late: hours of work of each job (with --deadline-hours; default: the "
        "48 h/52 h, 48 h/60 h and 12 h/16 h tasks); multi-region: default the deadline / "
        "1.5.")] = None,
    deadline_hours: Annotated[list[float] | None, typer.Option(
        metavar="<hours>", help="cant-be-late: deadline in hours after the window starts; "
        "repeatable (default 52 and 60 with --work-hours); multi-region: one (default 1,106 "
        "ticks of 195 s, 59.91 h).")] = None,
    overhead_hours: Annotated[list[float] | None, typer.Option(
        metavar="<hours>", help="cant-be-late: restart overhead in hours; repeatable. Default: "
        "0.02 and 0.2; multi-region: one (default 0.2).")] = None,
    checkpoint_gb: Annotated[list[float] | None, typer.Option(
        metavar="<gb>", help="multi-region and shapes: checkpoint size in GB, a case each; "
        "repeatable. Default: 0, 50 and 500; shapes: 0 and 50.",
        callback=at_least(0.0, "a size >= 0 GB"))] = None,
    zone: Annotated[list[str] | None, typer.Option(
        metavar="<zone>", help="multi-region: a zone of the traces the job may use; "
        "repeatable. Default: every market of the traces.")] = None,
    window_index: Annotated[list[int] | None, typer.Option(
        metavar="<index>", help="multi-region: window i of the trace's sequential tiling by "
        "the deadline (it starts at tick i times its length), instead of --windows seeded "
        "ones; repeatable.", callback=non_negative)] = None,
    transfer_time: Annotated[bool, typer.Option(
        "--transfer-time", help="multi-region: moves of the checkpoint also take transfer "
        "time (default: egress only, as SkyNomad's artifact runs by default).")] = False,
    migration_table: MigrationTableFile = None,
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
    workers: Annotated[int, typer.Option(
        help="Worker processes playing the evaluation's cells (1: in this process). Default: "
        "the cores this process may use.", callback=positive_count)] = available_cores(),
    executor: Annotated[str, typer.Option(
        metavar="<kind>", help="Where cells are played: local (--workers processes) or ray (a "
        "Ray cluster; needs the ray extra).", callback=one_of(_executors))] = "local",
    address: Annotated[str | None, typer.Option(
        metavar="<host:port>", help="ray: the cluster's address. Default: a Ray instance of "
        "its own on this machine with --workers CPUs.")] = None,
    cache_dir: Annotated[Path | None, writes_dir(
        "Folder of the played cells kept for later runs. Default: "
        "$XDG_CACHE_HOME/spotsched/evaluate or ~/.cache/spotsched/evaluate.")] = None,
    no_cache: Annotated[bool, typer.Option(
        "--no-cache", help="Play every cell, reading and keeping nothing.")] = False,
) -> None:
    """Evaluate policies over seeded windows of a trace.

    Scenarios: Can't Be Late, SkyNomad's multi-region task, fine-tuning, scarce capacity and
    a suite of synthetic market shapes (docs/evaluation.md). The cells run on every core or
    on a Ray cluster and are kept in a cache."""
    from dataclasses import replace

    from rich.console import Console

    from evaluation.cache import default_cache_dir
    from evaluation.reports.evaluation import run_evaluation
    from evaluation.runner import EXECUTORS, Execution
    from solver.choices import one_of
    from solver.evaluation.evaluate import EvaluationSettings
    from solver.evaluation.resample import resample_availability
    from solver.evaluation.shape_markets import MAX_ZONES
    from solver.evaluation.shapes import DEFAULT_SHAPES
    from solver.policies.forecast_sources import FORECAST_KINDS

    for count in zone_count or ():
        if not 1 <= count <= MAX_ZONES:
            fail(ValueError(f"--zone-count {count}: expected 1 to {MAX_ZONES}"))
    if cache_dir is None and not no_cache:
        cache_dir = default_cache_dir()
        expected = unwritable(cache_dir)
        if expected is not None:
            fail(ValueError(f"--cache-dir {cache_dir}: expected {expected}"))
    try:
        execution = Execution(workers, one_of("executor", executor, EXECUTORS), address,
                              None if no_cache else cache_dir)
    except ValueError as exc:
        fail(exc)

    ticks, source = market_ticks(trace or [], seed, 6, 46, on_demand_price, prices, 195)
    scenarios = scenario or ["cant-be-late", "fine-tune"]
    try:
        if resample is not None:
            ticks = resample_availability(ticks, resample)
            source += f", availability redrawn from its model (seed {resample})"
        settings = EvaluationSettings(forecast=one_of("forecast", forecast, FORECAST_KINDS))
        tasks = _cant_be_late_spec(work_hours, deadline_hours, overhead_hours)
        multi = _multi_region_spec("multi-region" in scenarios, work_hours, deadline_hours,
                                   overhead_hours, checkpoint_gb, zone, window_index,
                                   transfer_time, migration_table)
        shapes = replace(
            DEFAULT_SHAPES, seeds=seeds, windows=windows or DEFAULT_SHAPES.windows,
            workloads=tuple(workload or DEFAULT_SHAPES.workloads),
            zone_counts=tuple(zone_count or DEFAULT_SHAPES.zone_counts),
            checkpoints_gb=tuple(checkpoint_gb or DEFAULT_SHAPES.checkpoints_gb))
        with writing():
            run_evaluation(ticks, source, scenarios, policy, windows or 30, seed, console, plots,
                           json_file, settings, tasks, value_of_forecasts, multi, execution,
                           Console(stderr=True), shapes)
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


def _multi_region_spec(
    asked: bool, work: float | None, deadlines: list[float] | None,
    overheads: list[float] | None, checkpoints: list[float] | None, zones: list[str] | None,
    indices: list[int] | None, transfer_time: bool, table: Path | None,
) -> MultiRegionSpec:
    """The multi-region setup the flags ask for (the defaults where silent)."""
    from dataclasses import replace

    from solver.evaluation.scenarios import MultiRegionSpec
    from solver.traces.migration_table import read_migration_table

    spec = MultiRegionSpec()
    if not asked:
        return spec
    for flag, values in (("--deadline-hours", deadlines), ("--overhead-hours", overheads)):
        if values and len(values) > 1:
            raise ValueError(f"{flag} {values}: expected one value for multi-region")
    return replace(
        spec, work_hours=work,
        deadline_hours=deadlines[0] if deadlines else spec.deadline_hours,
        overhead_hours=overheads[0] if overheads else spec.overhead_hours,
        checkpoints_gb=tuple(checkpoints) if checkpoints else spec.checkpoints_gb,
        zones=tuple(zones) if zones else None, window_indices=tuple(indices or ()),
        transfer_time=transfer_time,
        migration=read_migration_table(table) if table is not None else spec.migration)
