"""Present an in-process replay: a rich table, a JSON report and a PNG plot."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from matplotlib.ticker import MaxNLocator
from rich.markup import escape
from rich.table import Table

from evaluation.reports.plotting import (
    as_dates,
    bar_panel,
    date_axis,
    legend_outside,
    save_figure,
)
from evaluation.reports.tables import add_key_column, add_number_columns, report_table
from solver.evaluation.compare import PolicySummary
from solver.job import Job
from solver.market import MarketData
from solver.policies.spec import RECOMMENDED
from solver.simulator import SimulationResult
from solver.timefmt import iso_utc
from streams.pipeline.stage import epoch_index

RECOMMENDED_MARK = "*"
RECOMMENDED_NOTE = (f"{RECOMMENDED_MARK} recommended for every kind of job; which policy leads "
                    "on one market and its jobs varies (README, \"Which policy\")")


def summary_table(summaries: Sequence[PolicySummary], title: str) -> Table:
    """Totals per policy, the recommended one marked; migrations and egress (in the cost) once
    a move cost something."""
    moved = any(s.egress_usd for s in summaries)
    marked = any(s.policy == RECOMMENDED for s in summaries)
    table = report_table(title, RECOMMENDED_NOTE if marked else None)
    add_key_column(table, "policy")
    add_number_columns(table, "jobs", "utility", "cost USD", "vs on-demand", "soft miss",
                       "hard miss", "preempt", *(["migrations", "egress USD"] if moved else []))
    for s in summaries:
        ratio = "-" if s.cost_vs_on_demand is None else f"{s.cost_vs_on_demand:.3f}"
        moves = [str(s.migrations), f"{s.egress_usd:,.2f}"] if moved else []
        table.add_row(
            s.policy + (f" {RECOMMENDED_MARK}" if s.policy == RECOMMENDED else ""), str(s.jobs),
            f"{s.total_utility:,.0f}", f"{s.total_cost:,.0f}", ratio,
            str(s.soft_deadline_misses), str(s.hard_deadline_misses), str(s.preemptions),
            *moves,
        )
    return table


def hindsight_notes(summaries: Sequence[PolicySummary]) -> list[str]:
    """A line per hindsight plan: proven optimal, or how much more utility the best plan could
    have (the plan found when a search limit stopped it)."""
    notes = []
    for s in summaries:
        if s.gap_usd is None:
            continue
        if s.gap_usd == 0:
            notes.append(f"{s.policy}: proven optimal")
        elif math.isfinite(s.gap_usd):
            notes.append(f"{s.policy}: the best plan found within its search limit; the optimum's "
                         f"utility is at most {s.gap_usd:,.2f} USD higher")
        else:
            notes.append(f"{s.policy}: the best plan found within its search limit; no bound on "
                         "the optimum's utility was proven")
    return notes


def jobs_table(results: Sequence[SimulationResult]) -> Table:
    """Every job's outcome under every policy, a section per policy: restarts, refusals,
    preemptions, cost, finish time (UTC, to the minute) and which deadline it met (``soft``,
    ``hard`` or ``no``); migrations and egress (in the cost) once a move cost something."""
    moved = any(r.total_egress_usd for r in results)
    table = report_table("jobs per policy (finish in UTC)")
    add_key_column(table, "policy / job")
    add_number_columns(table, "restart", "refused", "preempt", "cost USD")
    add_key_column(table, "finished")
    table.add_column("met")
    add_number_columns(table, *(["migrations", "egress USD"] if moved else []))
    for result in results:
        table.add_row(f"[bold]{escape(result.policy)}[/bold]")
        for k, j in enumerate(result.jobs):
            finished = "-" if j.completion is None else _minute(j.completion)
            met = "soft" if j.soft_deadline_met else "hard" if j.hard_deadline_met else "no"
            moves = [str(j.migrations), f"{j.egress_usd:,.2f}"] if moved else []
            table.add_row(f"  {escape(j.job_id)}", str(j.restarts), str(j.refusals),
                          str(j.preemptions), f"{j.cost:,.2f}", finished, met, *moves,
                          end_section=k == len(result.jobs) - 1)
    return table


def _minute(seconds: float) -> str:
    """A Unix time as ``YYYY-MM-DD HH:MM`` (UTC, rounded to the minute)."""
    return datetime.fromtimestamp(round(seconds / 60) * 60, UTC).strftime("%Y-%m-%d %H:%M")


def write_decisions(path: Path, data: MarketData, results: Sequence[SimulationResult]) -> Path:
    """Every decision as a JSON line: policy, slot start (``time``, ISO-8601 UTC), ``epoch``
    (the slot's epoch index, slots since Unix time 0, as on the wire), job, market and
    instance counts."""
    with path.open("w") as out:
        for result in results:
            for slot, job_id, a in result.decisions:
                start = data.slot_start(slot)
                out.write(json.dumps({
                    "policy": result.policy, "time": iso_utc(start),
                    "epoch": epoch_index(start, data.slot_seconds), "job_id": job_id,
                    "market": data.markets[a.market].key, "spot": a.spot,
                    "on_demand": a.on_demand}) + "\n")
    return path


def write_report(
    directory: Path,
    data: MarketData,
    jobs: Sequence[Job],
    results: Sequence[SimulationResult],
    summaries: Sequence[PolicySummary],
    inputs: Mapping[str, object],
) -> tuple[Path, Path]:
    """Write ``report.json`` (inputs, summaries, per-job results) and ``replay.png``."""
    directory.mkdir(parents=True, exist_ok=True)
    report = {
        "inputs": inputs,
        "markets": [m.key for m in data.markets],
        "slot_seconds": data.slot_seconds,
        "origin": data.origin,
        "n_slots": data.n_slots,
        "jobs": len(jobs),
        "policies": {
            s.policy: {
                "summary": s.as_dict(),
                "jobs": [
                    {
                        "job_id": j.job_id, "cost": j.cost, "utility": j.utility,
                        "completion": j.completion, "soft_deadline_met": j.soft_deadline_met,
                        "hard_deadline_met": j.hard_deadline_met, "preemptions": j.preemptions,
                        "refusals": j.refusals, "restarts": j.restarts,
                        "migrations": j.migrations, "egress_usd": j.egress_usd,
                    }
                    for j in r.jobs
                ],
            }
            for s, r in zip(summaries, results, strict=True)
        },
    }
    json_path = directory / "report.json"
    json_path.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    png_path = directory / "replay.png"
    plot_replay(png_path, data, jobs, results)
    return json_path, png_path


def replay_span(data: MarketData, jobs: Sequence[Job],
                results: Sequence[SimulationResult]) -> tuple[int, int]:
    """The slots ``first .. last - 1`` the jobs live in: from the first release to the last
    hard deadline or finish, within the market data (all of it when there are no jobs)."""
    if not jobs:
        return 0, data.n_slots
    finishes = [j.completion for r in results for j in r.jobs if j.completion is not None]
    start = min(j.release for j in jobs)
    end = max([j.hard_deadline for j in jobs] + finishes)
    first = min(max(data.slot_of(start), 0), data.n_slots - 1)
    last = max(min(math.ceil((end - data.origin) / data.slot_seconds), data.n_slots),
               first + 1)
    return first, last


def plot_replay(path: Path, data: MarketData, jobs: Sequence[Job],
                results: Sequence[SimulationResult]) -> None:
    """Over the jobs' span, on a date axis: spot prices against on-demand, availability as a
    heat strip per market, each job's release and deadlines, each policy's spot and on-demand
    instances, and each policy's bill."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    first, last = replay_span(data, jobs, results)
    edges = as_dates([data.slot_start(t) for t in range(first, last + 1)])
    heights = [2.4, 0.8 + 0.35 * len(data.markets), 0.8 + 0.16 * min(len(jobs), 30),
               *([1.6] * len(results)), 0.8 + 0.35 * len(results)]
    fig, axes = plt.subplots(len(heights), 1, figsize=(12, sum(heights) + 1.0),
                             gridspec_kw={"height_ratios": heights})
    price_ax, avail_ax, jobs_ax, *policy_axes, cost_ax = axes
    for ax in (avail_ax, jobs_ax, *policy_axes):
        ax.sharex(price_ax)
    window = slice(first, last)
    _plot_prices(price_ax, data, edges, window)
    _plot_availability(fig, avail_ax, data, edges, window)
    _plot_jobs(jobs_ax, jobs)
    for ax, result in zip(policy_axes, results, strict=True):
        _plot_instances(ax, result, edges, window)
    bar_panel(cost_ax, [r.policy for r in results], [r.total_cost for r in results],
              "cost per policy, USD", "tab:red")
    price_ax.set_xlim(edges[0], edges[-1])
    timed = [price_ax, avail_ax, jobs_ax, *policy_axes]
    for ax in timed:
        date_axis(ax)
        if ax is not timed[-1]:
            ax.set_xlabel("")
    fig.suptitle(f"replay of {len(jobs)} jobs, {len(data.markets)} markets, slots of "
                 f"{data.slot_seconds:g} s")
    save_figure(plt, fig, path, top=1.0 - 0.4 / fig.get_figheight())


def market_label(market) -> str:
    """A market's name on a chart: zone and instance type."""
    return f"{market.zone} {market.instance_type}"


def _plot_prices(ax, data: MarketData, edges: np.ndarray, window: slice) -> None:
    for i, market in enumerate(data.markets):
        ax.stairs(data.price[i, window], edges, baseline=None, label=market_label(market),
                  linewidth=1.2)
    for price in sorted(set(data.on_demand_prices.tolist())):
        ax.axhline(price, color="k", linestyle="--", linewidth=1,
                   label=f"on-demand {price:.2f} USD/h")
    ax.set_ylabel("spot price\nUSD per instance-hour")
    ax.set_ylim(0, None)
    legend_outside(ax)


def _plot_availability(fig, ax, data: MarketData, edges: np.ndarray, window: slice) -> None:
    rows = np.arange(len(data.markets) + 1) - 0.5
    mesh = ax.pcolormesh(edges, rows, data.availability[:, window], cmap="viridis",
                         vmin=0, shading="flat")
    ax.set_yticks(range(len(data.markets)), [market_label(m) for m in data.markets],
                  fontsize="small")
    ax.invert_yaxis()
    ax.set_title("spot instances available per market", fontsize="medium", loc="left")
    bar = fig.colorbar(mesh, cax=ax.inset_axes((1.01, 0.0, 0.015, 1.0)))
    bar.ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    bar.set_label("instances", fontsize="small")


def _plot_jobs(ax, jobs: Sequence[Job]) -> None:
    jobs = sorted(jobs, key=lambda j: (j.release, j.hard_deadline))
    rows = range(len(jobs))
    releases = as_dates([j.release for j in jobs])
    soft = as_dates([j.soft_deadline for j in jobs])
    hard = as_dates([j.hard_deadline for j in jobs])
    ax.hlines(rows, releases, soft, color="tab:blue", linewidth=3, label="release to soft")
    ax.hlines(rows, soft, hard, color="tab:orange", linewidth=3, label="soft to hard")
    ax.plot(hard, rows, "|", color="tab:red", markersize=10, markeredgewidth=2,
            label="hard deadline")
    ax.set_yticks(list(rows) if len(jobs) <= 30 else [],
                  [j.id for j in jobs] if len(jobs) <= 30 else [], fontsize="x-small")
    ax.set_ylim(len(jobs) - 0.5, -0.5)
    ax.set_title("jobs: release, soft and hard deadline", fontsize="medium", loc="left")
    legend_outside(ax)


def _plot_instances(ax, result: SimulationResult, edges: np.ndarray, window: slice) -> None:
    spot = result.spot_used.sum(axis=0)[window]
    on_demand = result.on_demand_used.sum(axis=0)[window]
    ax.stairs(spot, edges, fill=True, alpha=0.7, label="spot", color="tab:blue")
    ax.stairs(spot + on_demand, edges, baseline=spot, fill=True, alpha=0.7,
              label="on-demand", color="tab:orange")
    ax.yaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
    ax.set_ylim(0, max(1, int((spot + on_demand).max(initial=0))) + 0.5)
    ax.set_ylabel("instances")
    ax.set_title(f"{result.policy}: {result.total_cost:,.2f} USD", fontsize="medium", loc="left")
    legend_outside(ax)
