"""Present an in-process replay: a rich table, a JSON report and a PNG plot."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from rich.table import Table

from solver.evaluation.compare import PolicySummary
from solver.job import Job
from solver.market import MarketData
from solver.simulator import SimulationResult
from solver.timefmt import iso_utc
from streams.pipeline import epoch_index


def summary_table(summaries: Sequence[PolicySummary], title: str) -> Table:
    table = Table(title=title)
    for column in ("policy", "jobs", "utility", "cost USD", "vs on-demand",
                   "soft miss", "hard miss", "preempt"):
        table.add_column(column, justify="left" if column == "policy" else "right")
    for s in summaries:
        ratio = "-" if s.cost_vs_on_demand is None else f"{s.cost_vs_on_demand:.3f}"
        table.add_row(
            s.policy, str(s.jobs), f"{s.total_utility:,.0f}", f"{s.total_cost:,.0f}", ratio,
            str(s.soft_deadline_misses), str(s.hard_deadline_misses), str(s.preemptions),
        )
    return table


def jobs_table(results: Sequence[SimulationResult]) -> Table:
    """Every job's outcome under every policy: restarts, refusals, preemptions, cost, finish
    time (UTC) and which deadline it met."""
    table = Table(title="jobs")
    for column in ("job", "policy", "restarts", "refusals", "preemptions", "cost USD",
                   "finished (UTC)", "deadline met"):
        table.add_column(column, justify="right" if column not in ("job", "policy") else "left")
    for result in results:
        for j in result.jobs:
            finished = "-" if j.completion is None else iso_utc(round(j.completion))
            met = "soft" if j.soft_deadline_met else "hard" if j.hard_deadline_met else "no"
            table.add_row(j.job_id, result.policy, str(j.restarts), str(j.refusals),
                          str(j.preemptions), f"{j.cost:,.2f}", finished, met)
    return table


def write_decisions(path: Path, data: MarketData, results: Sequence[SimulationResult]) -> Path:
    """Every decision as a JSON line: policy, slot start (``time``, ISO-8601 UTC), ``epoch``
    (the slot's index since the Unix epoch, as on the wire), job, market and instance counts."""
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
    inputs: dict[str, object],
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
    plot_replay(png_path, data, results)
    return json_path, png_path


def plot_replay(path: Path, data: MarketData, results: Sequence[SimulationResult]) -> None:
    """Prices and availability per market, then each policy's spot and on-demand use."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hours = np.arange(data.n_slots) * data.slot_hours
    fig, axes = plt.subplots(
        2 + len(results), 1, figsize=(12, 3 + 2.2 * (2 + len(results))), sharex=True
    )
    price_ax, avail_ax, *policy_axes = axes
    for i, market in enumerate(data.markets):
        price_ax.step(hours, data.price[i], where="post", label=market.zone, linewidth=1)
        avail_ax.step(hours, data.availability[i], where="post", label=market.zone, linewidth=1)
    price_ax.axhline(float(data.on_demand_prices.min()), color="k", linestyle="--", linewidth=1,
                     label="on-demand")
    price_ax.set_ylabel("spot USD/h")
    price_ax.legend(fontsize="small", ncol=min(6, len(data.markets) + 1), loc="upper right")
    avail_ax.set_ylabel("spot available")
    for ax, result in zip(policy_axes, results, strict=True):
        spot = result.spot_used.sum(axis=0)
        od = result.on_demand_used.sum(axis=0)
        ax.fill_between(hours, 0, spot, step="post", label="spot", alpha=0.7)
        ax.fill_between(hours, spot, spot + od, step="post", label="on-demand", alpha=0.7)
        ax.set_ylabel(f"{result.policy}\ninstances")
        ax.legend(fontsize="small", loc="upper right")
    axes[-1].set_xlabel("hours since start")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
