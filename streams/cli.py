"""The ``spotsched`` command line: thin commands that parse, build inputs and call one function."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from solver.market import MarketData, build_market_data
from solver.policies import POLICIES
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from solver.workload import WorkloadSpec, generate_jobs

app = typer.Typer(
    help="Deadline-aware scheduling of fine-tuning jobs on spot and on-demand instances.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console(width=None if sys.stdout.isatty() else 120)

DEFAULT_POLICIES = ("on-demand", "spot-only", "greedy", "uniform-progress")


def _market_data(
    traces: list[Path], slot_seconds: float, seed: int, markets: int, days: float
) -> tuple[MarketData, str]:
    if traces:
        from streams.traces import load_traces

        ticks = load_traces(traces)
        return build_market_data(ticks, slot_seconds), ", ".join(p.name for p in traces)
    spec = SyntheticMarketSpec(seed=seed, n_markets=markets, days=days)
    return build_market_data(synthetic_ticks(spec), slot_seconds), f"synthetic market (seed {seed})"


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
        help=f"Policy to run; repeat for more. One of: {', '.join(POLICIES)}. "
        f"Default: {', '.join(DEFAULT_POLICIES)}.")] = None,
    seed: Annotated[int, typer.Option(help="Seed for the synthetic market and workload.")] = 0,
    slot_seconds: Annotated[float, typer.Option(min=1, help="Slot length Δ in seconds.")] = 3600,
    markets: Annotated[int, typer.Option(min=1, max=8, help="Synthetic markets.")] = 4,
    days: Annotated[float, typer.Option(min=1, help="Synthetic market length in days.")] = 14,
    report: Annotated[Path | None, typer.Option(
        help="Directory for report.json and replay.png.", file_okay=False)] = None,
) -> None:
    """Replay a market and a workload through the simulator in-process, no broker needed."""
    from rich.progress import Progress

    from solver.compare import compare_policies
    from streams.replay_report import summary_table, write_report

    trace = trace or []
    policy = policy or list(DEFAULT_POLICIES)
    unknown = [p for p in policy if p not in POLICIES]
    if unknown:
        raise typer.BadParameter(
            f"{unknown}: expected policies among {', '.join(POLICIES)}", param_hint="--policy")
    try:
        data, source = _market_data(trace, slot_seconds, seed, markets, days)
        if jobs is not None:
            from streams.traces.jobs_file import load_jobs

            workload = load_jobs(jobs)
        else:
            workload = generate_jobs(data, n_jobs, WorkloadSpec(seed=seed))
        with Progress(console=console, transient=True) as bar:
            task = bar.add_task("replaying", total=data.n_slots * len(policy))
            results, summaries = compare_policies(
                data, workload, policy, progress=lambda n: bar.advance(task, n))
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    title = (f"{len(workload)} jobs on {source}: {len(data.markets)} markets × "
             f"{data.n_slots} slots of {data.slot_seconds:g} s")
    console.print(summary_table(summaries, title))
    if report is not None:
        inputs = {"traces": [str(p) for p in trace], "jobs": str(jobs) if jobs else None,
                  "n_jobs": len(workload), "policies": list(policy), "seed": seed,
                  "slot_seconds": slot_seconds}
        json_path, png_path = write_report(report, data, workload, results, summaries, inputs)
        console.print(f"wrote {json_path} and {png_path}")


@app.command()
def schema(
    out: Annotated[Path, typer.Option(help="Directory for the JSON Schema files.",
                                      file_okay=False)] = Path("schemas"),
) -> None:
    """Write the JSON Schemas of every event on the wire."""
    from streams.schema import write_schemas

    for path in write_schemas(out):
        console.print(str(path))


def main() -> None:
    app()
