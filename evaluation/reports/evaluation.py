"""Present an evaluation: a rich table per scenario case, a JSON summary and PNG plots."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.ticker import MaxNLocator
from rich.console import Console
from rich.table import Table

from evaluation.cache import CellKeys, markets_digest
from evaluation.reports.plotting import bar_panel, save_figure
from evaluation.reports.shapes import shapes_tables
from evaluation.reports.tables import add_number_columns, keyed_table, report_table
from evaluation.runner import Execution, play_plan
from solver.evaluation.cells import EvaluationPlan, ForecastValues
from solver.evaluation.evaluate import (
    DEFAULT_SETTINGS,
    CaseResult,
    EvaluationSettings,
    SensitivityPoint,
    check_policies,
    regret_bound,
)
from solver.evaluation.scenarios import CantBeLateSpec, Case, MultiRegionSpec, build_cases
from solver.evaluation.shapes import DEFAULT_SHAPES, ShapesSpec
from solver.market import MarketTicks
from solver.policies import PolicySpec

DEFAULT_TASKS = CantBeLateSpec()
DEFAULT_MULTI_REGION = MultiRegionSpec()
IN_PROCESS = Execution()
"""Every cell in this process, no cache."""

KIND_LABELS = {"oracle": "perfect", "point": "learned point", "distribution": "learned dist."}


def run_evaluation(
    ticks: Sequence[MarketTicks],
    source: str,
    scenarios: Sequence[str],
    policies: Sequence[str | PolicySpec] | None,
    windows: int,
    seed: int,
    console: Console,
    plots: Path | None = None,
    json_path: Path | None = None,
    settings: EvaluationSettings = DEFAULT_SETTINGS,
    cant_be_late: CantBeLateSpec = DEFAULT_TASKS,
    forecast_values: bool = False,
    multi_region: MultiRegionSpec = DEFAULT_MULTI_REGION,
    execution: Execution = IN_PROCESS,
    progress: Console | None = None,
    shapes: ShapesSpec = DEFAULT_SHAPES,
) -> list[CaseResult]:
    """Evaluate every case of ``scenarios`` on ``ticks``, print the tables and write the
    requested files; the CHC sensitivity study runs (on ``fine-tune``) when plots are asked,
    the value-of-forecasts study when ``forecast_values``. The cells are played as
    ``execution`` says, with progress on ``progress`` (default ``console``); ``shapes``
    sets up that scenario, whose shapes are summed up in two tables rather than one each."""
    specs = check_policies(policies) if policies is not None else None
    cases = build_cases(ticks, scenarios, windows, seed, cant_be_late, multi_region, shapes)
    study = next((k for k, c in enumerate(cases) if c.scenario == "fine-tune"), None)
    plan = EvaluationPlan(tuple(cases), specs, seed, settings, forecast_values,
                          study if plots is not None else None)
    keys = CellKeys(plan, markets_digest(ticks), repr((windows, seed, cant_be_late,
                                                         multi_region, shapes)))
    evaluation = play_plan(plan, execution, keys, progress or console)
    for k, (case, result) in enumerate(zip(cases, evaluation.cases, strict=True)):
        if case.scenario != "shapes":
            console.print(case_table(result, _title(case, source)))
        if evaluation.forecast_values:
            console.print(forecast_table(evaluation.forecast_values[k], case.name))
    shaped = [k for k, c in enumerate(cases) if c.scenario == "shapes"]
    if shaped:
        for table in shapes_tables([cases[k] for k in shaped],
                                   [evaluation.cases[k] for k in shaped],
                                   f"shapes, {shapes.windows} windows of the {shapes.seeds} "
                                   "seeds"):
            console.print(table)
    if evaluation.sensitivity:
        console.print(sensitivity_table(evaluation.sensitivity))
    if json_path is not None:
        write_json(json_path, evaluation.cases, evaluation.forecast_values)
        console.print(f"wrote {json_path}")
    if plots is not None:
        for path in write_plots(plots, evaluation.cases, evaluation.sensitivity,
                                evaluation.forecast_values):
            console.print(f"wrote {path}")
    return list(evaluation.cases)


def _title(case: Case, source: str) -> str:
    return f"{case.name}: {case.n_jobs} jobs in {len(case.episodes)} windows of {source}"


def case_table(result: CaseResult, title: str) -> Table:
    """Mean cost (and its ratio to the optimum's), utility, restarts and deadline misses per
    policy; under it, how many jobs the optimum planned without proof, and policy selection's
    members and regret."""
    captions = [c for c in (_optimum_caption(result), _selection_caption(result)) if c]
    columns, rows = case_rows(case_entry(result))
    return keyed_table(title, columns, rows, "\n".join(captions) or None)


def case_rows(entry: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The columns and the rows, one per policy, of a case's table, from its summary entry
    (:func:`case_entry`, as written in the JSON); migrations and egress only where a policy
    paid for a move."""
    policies: Mapping[str, Mapping[str, Any]] = entry["policies"]
    optimum = policies.get("optimum")
    moved = any(s["mean_egress_usd"] for s in policies.values())
    columns = ["policy", "runs", "mean cost USD", "vs optimum", "mean utility", "restarts",
               "hard miss", "soft miss"] + (["migrations", "egress USD"] if moved else [])
    rows = []
    for name, s in policies.items():
        ratio = f"{s['mean_cost_usd'] / optimum['mean_cost_usd']:.3f}" if optimum and \
            optimum["mean_cost_usd"] > 0 else "—"
        moves = [f"{s['mean_migrations']:.1f}", f"{s['mean_egress_usd']:,.2f}"] if moved \
            else []
        rows.append([name, str(s["runs"]), f"{s['mean_cost_usd']:,.2f}", ratio,
                     f"{round(s['mean_utility'], 2) + 0.0:,.2f}", f"{s['mean_restarts']:.1f}",
                     str(s["hard_deadline_misses"]), str(s["soft_deadline_misses"]), *moves])
    return columns, rows


def _optimum_caption(result: CaseResult) -> str | None:
    optimum = result.policies.get("optimum")
    if optimum is None or not result.unproven_optimum:
        return None
    return (f"optimum: {result.unproven_optimum} of {optimum.runs} jobs planned by a search a "
            "solver limit stopped; the true optimum's utility may be higher")


def _selection_caption(result: CaseResult) -> str | None:
    if result.regret is None or not result.regret.rounds:
        return None
    rounds = result.regret.rounds
    marks = sorted({max(1, rounds * k // 4) for k in (1, 2, 4)})
    best = int(np.argmin(result.member_costs))
    members = ", ".join(f"{m} {c:,.2f}" for m, c in zip(result.pool, result.member_costs,
                                                         strict=True))
    return (f"{result.selection} members' mean cost USD (shadows): {members}; best "
            f"{result.pool[best]}. Regret after " + ", ".join(
                f"{t}: {result.regret.regret[t - 1]:.2f}" for t in marks) + " rounds"
            f" (Hedge bound at {rounds}: {regret_bound(rounds, len(result.pool)):.2f})")


def forecast_table(values: ForecastValues, case: str) -> Table:
    """Mean cost (and hard misses) of each planner on each forecast kind."""
    columns, rows = forecast_rows(forecast_entry(values))
    return keyed_table(f"{case}: value of forecasts (mean cost USD, hard misses)", columns, rows)


def forecast_rows(values: Mapping[str, Mapping[str, Mapping[str, Any]]],
                  ) -> tuple[list[str], list[list[str]]]:
    """The columns and rows of the value-of-forecasts table from a case's
    ``value_of_forecasts`` entry (as written in the JSON): each planner's mean cost USD and
    hard misses on each forecast kind."""
    columns = ["planner", *KIND_LABELS.values()]
    rows = [[planner, *(f"{by_kind[k]['mean_cost_usd']:,.2f} "
                        f"({by_kind[k]['hard_deadline_misses']})" for k in KIND_LABELS)]
            for planner, by_kind in values.items()]
    return columns, rows


def sensitivity_table(points: Sequence[SensitivityPoint]) -> Table:
    """Mean utility per policy at each forecast error level."""
    names = list(points[0].mean_utility)
    table = report_table("fine-tune: CHC with noisy forecasts (mean utility)")
    add_number_columns(table, "forecast error", *names, "fallback share")
    for p in points:
        table.add_row(f"{p.error:g}", *(f"{p.mean_utility[n]:,.2f}" for n in names),
                      f"{p.fallback_share:.0%}")
    return table


def case_entry(result: CaseResult, values: ForecastValues | None = None) -> dict[str, Any]:
    """A case's summary: ``{"name": ..., "policies": {policy: stats}, ...}``."""
    entry: dict[str, Any] = {
        "name": result.name, "policies": {p: s.as_dict() for p, s in result.policies.items()}}
    if "optimum" in result.policies:
        entry["optimum_unproven_jobs"] = result.unproven_optimum
    if result.pool:
        entry["selection"] = result.selection
        entry["selection_members"] = {
            m: {"mean_cost_usd": c, "hard_deadline_misses": n}
            for m, c, n in zip(result.pool, result.member_costs, result.member_misses,
                               strict=True)}
    if values is not None:
        entry["value_of_forecasts"] = forecast_entry(values)
    return entry


def forecast_entry(values: ForecastValues) -> dict[str, dict[str, dict[str, float | int]]]:
    """A case's value-of-forecasts study as written in the JSON."""
    return {planner: {kind: s.as_dict() for kind, s in by_kind.items()}
            for planner, by_kind in values.items()}


def summary(results: Sequence[CaseResult],
            values: Sequence[ForecastValues] = ()) -> dict[str, object]:
    """``{"scenarios": [case_entry, ...]}``."""
    return {"scenarios": [case_entry(r, values[k] if values else None)
                          for k, r in enumerate(results)]}


def write_json(path: Path, results: Sequence[CaseResult],
               values: Sequence[ForecastValues] = ()) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary(results, values), indent=2) + "\n")


def write_plots(
    directory: Path, results: Sequence[CaseResult], points: Sequence[SensitivityPoint],
    values: Sequence[ForecastValues] = (),
) -> list[Path]:
    """``utility_cost.png`` always; ``value_of_forecasts.png``, ``sensitivity.png`` and
    ``regret.png`` when there is something to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    written = [directory / "utility_cost.png"]
    fig, axes = plt.subplots(len(results), 2, figsize=(13, 0.45 * sum(
        len(r.policies) + 2 for r in results) + 1.0), squeeze=False)
    for (utility_ax, cost_ax), r in zip(axes, results, strict=True):
        names = list(r.policies)
        bar_panel(utility_ax, names, [r.policies[n].mean_utility for n in names],
                  f"{r.name}: mean utility per job", "tab:green")
        bar_panel(cost_ax, names, [r.policies[n].mean_cost_usd for n in names],
                  f"{r.name}: mean cost per job, USD", "tab:red")
    save_figure(plt, fig, written[0])
    if values:
        written.append(_plot_forecast_values(plt, directory, results, values))
    if points:
        written.append(_plot_sensitivity(plt, directory, points))
    traced = [r for r in results if r.regret is not None and r.regret.rounds]
    if traced:
        written.append(_plot_regret(plt, directory, traced))
    return written


def _plot_forecast_values(plt, directory: Path, results: Sequence[CaseResult],
                          values: Sequence[ForecastValues]) -> Path:
    path = directory / "value_of_forecasts.png"
    fig, axes = plt.subplots(1, len(values), figsize=(4.2 * len(values), 3.8), squeeze=False)
    for ax, r, by_planner in zip(axes[0], results, values, strict=True):
        optimum = r.policies.get("optimum")
        kinds = list(KIND_LABELS)
        width = 0.8 / len(by_planner)
        for i, (planner, by_kind) in enumerate(by_planner.items()):
            costs = [by_kind[k].mean_cost_usd for k in kinds]
            x = np.arange(len(kinds)) + (i - (len(by_planner) - 1) / 2) * width
            bars = ax.bar(x, costs, width, label=planner)
            ax.bar_label(bars, fmt="%.1f", fontsize="x-small")
        if optimum is not None:
            ax.axhline(optimum.mean_cost_usd, color="k", linestyle="--", linewidth=1,
                       label=f"optimum {optimum.mean_cost_usd:.1f}")
        ax.set_xticks(np.arange(len(kinds)), [KIND_LABELS[k] for k in kinds])
        ax.set_ylabel("mean cost per job, USD")
        ax.set_title(r.name, fontsize="medium")
        low = min(s.mean_cost_usd for b in by_planner.values() for s in b.values())
        ax.set_ylim(0.85 * min(low, optimum.mean_cost_usd if optimum else low), None)
        ax.legend(fontsize="x-small")
    fig.suptitle("value of forecasts: the same planners on perfect, learned point and learned "
                 "distribution forecasts")
    return save_figure(plt, fig, path)


def _plot_sensitivity(plt, directory: Path, points: Sequence[SensitivityPoint]) -> Path:
    path = directory / "sensitivity.png"
    fig, ax = plt.subplots(figsize=(7, 4.5))
    errors = [p.error for p in points]
    for name in points[0].mean_utility:
        label = name + (" (with fallback)" if name == "policy-selection" else "")
        ax.plot(errors, [p.mean_utility[name] for p in points], marker="o", label=label)
    ax.set_xlabel("forecast error level (log-price s.d.; availability flips at half)")
    ax.set_ylabel("mean utility per job, USD")
    ax.set_title("fine-tune: CHC sensitivity to forecast error")
    ax.legend()
    return save_figure(plt, fig, path)


def _plot_regret(plt, directory: Path, traced: Sequence[CaseResult]) -> Path:
    path = directory / "regret.png"
    fig, ax = plt.subplots(figsize=(7, 4.5))
    curves = [(r.name, r.regret.regret) for r in traced if r.regret is not None]
    longest = max(len(c) for _, c in curves)
    for name, curve in curves:
        ax.plot(np.arange(1, len(curve) + 1), curve, label=name)
    k = max(len(r.pool) for r in traced)
    t = np.arange(1, longest + 1)
    ax.plot(t, [regret_bound(int(n), k) for n in t], "k--",
            label=f"Hedge bound √(2T ln K) + √(ln K / 8), K = {k}")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("rounds (jobs settled)")
    ax.set_ylabel("regret (loss units)")
    ax.set_title("policy-selection regret against the best fixed member")
    ax.legend(fontsize="small")
    return save_figure(plt, fig, path)
