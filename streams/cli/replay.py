"""``spotsched replay``: a market and a workload through the simulator, or into Kafka."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from solver.evaluation.compare import PolicySummary
    from solver.job import Job
    from solver.market import MarketData, MarketTicks
    from solver.simulator import SimulationResult
    from streams.settings import Settings

from streams.cli.app import app
from streams.cli.common import (
    DEFAULT_POLICIES,
    Policies,
    broker_logging,
    command_settings,
    market_ticks,
    one_shot_settings,
    run_on_broker,
)
from streams.cli.errors import console, fail, writing, wrote
from streams.cli.options import (
    MigrationTableFile,
    OnDemandPrice,
    PricesFile,
    Seed,
    SlotSeconds,
    SyntheticDays,
    SyntheticMarkets,
    TracesOrSynthetic,
    at_least,
    positive_count,
    writes_dir,
    writes_file,
)


def _publish_replay(
    bootstrap_servers: str, ticks: list[MarketTicks], jobs: list[Job], speed: float | None,
    job_partitions: int,
) -> None:
    import asyncio

    from streams.cli.progress import Steps
    from streams.kafka.clients import publish_replay
    from streams.kafka.connect import BrokerError
    from streams.pipeline.trace_events import trace_events

    broker_logging()
    settings = command_settings(bootstrap_servers=bootstrap_servers,
                                job_partitions=job_partitions)
    _refuse_late_ticks(ticks, one_shot_settings(bootstrap_servers=bootstrap_servers,
                                                job_partitions=job_partitions))
    total = 2 * sum(len(t.times) for t in ticks) + len(jobs)
    try:
        with Steps("publishing", total, "events") as steps:
            sent = asyncio.run(publish_replay(settings, trace_events(ticks, jobs), speed,
                                              steps.advance))
    except (ValueError, BrokerError) as exc:
        fail(exc)
    console.print(f"published {sent} events ({len(jobs)} jobs) to {settings.bootstrap_servers}")


def _refuse_late_ticks(ticks: list[MarketTicks], settings: Settings) -> None:
    """Exit with one line when the market-ticks topic already holds ticks at or after the
    replay's first: the workers would set the replay's ticks aside as late."""
    from streams.contract import utc
    from streams.kafka.topic_reader import newest_time

    topic = settings.topics.market_ticks
    newest = run_on_broker(newest_time(settings, topic))
    starts = [float(t.times[0]) for t in ticks if len(t.times)]
    if newest is None or not starts or newest < utc(min(starts)):
        return
    fail(ValueError(
        f"{topic} at {settings.bootstrap_servers} already holds ticks up to "
        f"{newest:%Y-%m-%d %H:%M} UTC and this replay starts at {utc(min(starts)):%Y-%m-%d %H:%M}"
        " UTC: the workers would set its ticks aside as late (dead letters). Replay into a fresh "
        "broker (`spotsched dev kafka`), or under new topic names and app id "
        "(SPOTSCHED_TOPICS__<NAME>, SPOTSCHED_APP_ID) with workers of their own"))


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
    synthetic_markets: SyntheticMarkets = 4,
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
    bootstrap_servers: Annotated[str | None, typer.Option(
        metavar="<host:port>", help="Publish the replay to Kafka at host:port[,host:port] "
        "instead of simulating in-process.")] = None,
    speed: Annotated[float | None, typer.Option(
        help="With --bootstrap-servers: event-time seconds per second (default: flat out).",
        callback=at_least(0.001, "at least 0.001 event-time seconds per second"))] = None,
    on_demand_price: OnDemandPrice = None,
    prices: PricesFile = None,
    migration_table: MigrationTableFile = None,
) -> None:
    """Replay a market and a workload, in-process or into Kafka.

    In-process through the simulator (no broker needed), or into Kafka with
    --bootstrap-servers for the workers to schedule."""
    from streams.cli.reports.replay_summary import (
        hindsight_notes,
        jobs_table,
        summary_table,
        write_decisions,
        write_report,
    )

    policy = policy or list(DEFAULT_POLICIES)
    ticks, source = market_ticks(trace or [], seed, synthetic_markets, days, on_demand_price,
                                 prices)
    data, workload = _replay_inputs(ticks, slot_seconds, jobs, n_jobs, seed, fixed_count,
                                    "--trace" if trace else f"--days {days:g}")
    if bootstrap_servers is not None:
        _publish_replay(bootstrap_servers, ticks, workload, speed, job_partitions)
        return
    results, summaries = _simulate(data, workload, policy, job_partitions, migration_table)
    console.print(summary_table(summaries, f"{len(workload)} jobs on {source}: "
                                f"{len(data.markets)} markets × {data.n_slots} slots of "
                                f"{data.slot_seconds:g} s"))
    for note in hindsight_notes(summaries):
        console.print(note, highlight=False)
    if per_job:
        console.print(jobs_table(results))
    with writing():
        if decisions is not None:
            wrote(write_decisions(decisions, data, results))
        if report is not None:
            inputs = {"traces": [str(p) for p in trace or []],
                      "jobs": str(jobs) if jobs else None, "n_jobs": len(workload),
                      "fixed_count": fixed_count, "policies": list(policy), "seed": seed,
                      "slot_seconds": slot_seconds}
            wrote(*write_report(report, data, workload, results, summaries, inputs))


def _replay_inputs(ticks: list[MarketTicks], slot_seconds: float, jobs: Path | None,
                   n_jobs: int, seed: int, fixed_count: bool, span_flag: str = "--trace",
                   ) -> tuple[MarketData, list[Job]]:
    """The market data and the workload of a replay: the --jobs file or generated jobs; market
    data too short for them is blamed on ``span_flag``, the flag that sets its length."""
    from solver.market import build_market_data
    from solver.traces.jobs_file import load_jobs
    from solver.workload import SpanTooShort, WorkloadSpec, generate_jobs

    try:
        data = build_market_data(ticks, slot_seconds)
        if jobs is not None:
            return data, load_jobs(jobs)
        shape = WorkloadSpec(seed=seed, n_min_share=1.0) if fixed_count else WorkloadSpec(seed=seed)
        return data, generate_jobs(data, n_jobs, shape)
    except SpanTooShort as exc:
        fail(ValueError(f"{span_flag}: the market spans {exc.span_hours:.1f} h, too short for "
                        f"a generated job of {exc.job_hours:.1f} h; expected a longer market "
                        "or a workload file (--jobs)"))
    except ValueError as exc:
        fail(exc)


def _simulate(data: MarketData, workload: list[Job], policies: list[str],
              job_partitions: int, migration_table: Path | None = None,
              ) -> tuple[list[SimulationResult], list[PolicySummary]]:
    """Every policy over the workload in-process, with a progress bar; moves of checkpoints
    priced by the built-in migration table, or ``migration_table`` laid over it."""
    from solver.evaluation.compare import compare_policies
    from solver.migration import DEFAULT_MIGRATION
    from solver.traces.migration_table import read_migration_table
    from streams.cli.progress import Steps
    from streams.kafka.partitions import partition_for

    try:
        migration = DEFAULT_MIGRATION if migration_table is None \
            else read_migration_table(migration_table)
        groups = len({partition_for(j.id, job_partitions) for j in workload}) or 1
        with Steps("replaying", data.n_slots * len(policies) * groups, "slots") as steps:
            return compare_policies(
                data, workload, policies, progress=steps.advance,
                partition_of=lambda job_id: partition_for(job_id, job_partitions),
                migration=migration)
    except ValueError as exc:
        fail(exc)
