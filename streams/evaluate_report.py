"""Present an evaluation: a rich table per scenario case, a JSON summary and PNG plots."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from solver.evaluate import (
    DEFAULT_SETTINGS,
    CaseResult,
    EvaluationSettings,
    SensitivityPoint,
    check_policies,
    default_policies,
    evaluate_case,
    sensitivity,
)
from solver.market import MarketTicks
from solver.policies import POLICIES
from solver.scenarios import Case, build_cases


def run_evaluation(
    ticks: Sequence[MarketTicks],
    source: str,
    scenarios: Sequence[str],
    policies: Sequence[str] | None,
    windows: int,
    seed: int,
    console: Console,
    plots: Path | None = None,
    json_path: Path | None = None,
    settings: EvaluationSettings = DEFAULT_SETTINGS,
) -> list[CaseResult]:
    """Evaluate every case of ``scenarios`` on ``ticks``, print the tables and write the
    requested files; the CHC sensitivity study runs (on ``fine-tune``) when plots are asked."""
    if policies is not None:
        check_policies(policies)
    cases = build_cases(ticks, scenarios, windows, seed)
    study = next((c for c in cases if c.scenario == "fine-tune"), None)
    if plots is None or "chc" not in POLICIES:
        study = None
    total = sum(len(c.episodes) * len(policies or default_policies(c.scenario)) for c in cases)
    if study is not None:
        total += len(study.episodes) * (2 * len(settings.sensitivity_errors))
    results: list[CaseResult] = []
    points: list[SensitivityPoint] = []
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("evaluating", total=total)
        for case in cases:
            bar.update(task, description=case.name)
            results.append(evaluate_case(case, policies, seed, settings,
                                         lambda n: bar.advance(task, n)))
        if study is not None:
            bar.update(task, description="chc sensitivity")
            points = sensitivity(study, seed, settings, lambda n: bar.advance(task, n))
    for case, result in zip(cases, results, strict=True):
        console.print(case_table(result, _title(case, source)))
    if points:
        console.print(sensitivity_table(points))
    if json_path is not None:
        write_json(json_path, results)
        console.print(f"wrote {json_path}")
    if plots is not None:
        for path in write_plots(plots, results, points):
            console.print(f"wrote {path}")
    return results


def _title(case: Case, source: str) -> str:
    return (f"{case.name}: {case.n_jobs} jobs in {len(case.episodes)} windows of "
            f"{source}")


def case_table(result: CaseResult, title: str) -> Table:
    """Mean cost and utility and deadline misses per policy; the regret line under it."""
    caption = None
    if result.regret is not None and result.regret.rounds:
        rounds = result.regret.rounds
        marks = sorted({max(1, rounds * k // 4) for k in (1, 2, 4)})
        bound = math.sqrt(rounds * math.log(len(result.pool)) / 2)
        caption = ("policy-selection regret after " + ", ".join(
            f"{t}: {result.regret.regret[t - 1]:.2f}" for t in marks) + " rounds"
            f" (Hedge bound at {rounds}: {bound:.2f})")
    table = Table(title=title, caption=caption)
    for column in ("policy", "runs", "mean cost USD", "mean utility", "hard miss", "soft miss"):
        table.add_column(column, justify="left" if column == "policy" else "right")
    for name, s in result.policies.items():
        table.add_row(name, str(s.runs), f"{s.mean_cost_usd:,.2f}", f"{s.mean_utility:,.2f}",
                      str(s.hard_deadline_misses), str(s.soft_deadline_misses))
    return table


def sensitivity_table(points: Sequence[SensitivityPoint]) -> Table:
    """Mean utility per policy at each forecast error level."""
    names = list(points[0].mean_utility)
    table = Table(title="fine-tune: CHC with noisy forecasts (mean utility)")
    for column in ("forecast error", *names, "fallback share"):
        table.add_column(column, justify="right")
    for p in points:
        table.add_row(f"{p.error:g}", *(f"{p.mean_utility[n]:,.2f}" for n in names),
                      f"{p.fallback_share:.0%}")
    return table


def summary(results: Sequence[CaseResult]) -> dict[str, object]:
    """``{"scenarios": [{"name": ..., "policies": {policy: stats}}]}``."""
    return {"scenarios": [
        {"name": r.name, "policies": {p: s.as_dict() for p, s in r.policies.items()}}
        for r in results
    ]}


def write_json(path: Path, results: Sequence[CaseResult]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary(results), indent=2) + "\n")


def write_plots(
    directory: Path, results: Sequence[CaseResult], points: Sequence[SensitivityPoint]
) -> list[Path]:
    """``utility_cost.png`` always; ``sensitivity.png`` and ``regret.png`` when there is
    something to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    written = [directory / "utility_cost.png"]
    fig, axes = plt.subplots(len(results), 2, figsize=(12, 2.8 * len(results)), squeeze=False)
    for (utility_ax, cost_ax), r in zip(axes, results, strict=True):
        names = list(r.policies)
        utility_ax.barh(names, [r.policies[n].mean_utility for n in names], color="tab:green")
        cost_ax.barh(names, [r.policies[n].mean_cost_usd for n in names], color="tab:red")
        utility_ax.set_title(f"{r.name}: mean utility", fontsize="medium")
        cost_ax.set_title(f"{r.name}: mean cost USD", fontsize="medium")
        for ax in (utility_ax, cost_ax):
            ax.invert_yaxis()
            ax.tick_params(labelsize="small")
    fig.tight_layout()
    fig.savefig(written[0], dpi=110)
    plt.close(fig)

    if points:
        path = directory / "sensitivity.png"
        fig, ax = plt.subplots(figsize=(7, 4.5))
        errors = [p.error for p in points]
        for name in points[0].mean_utility:
            label = name + (" (with fallback)" if name == "policy-selection" else "")
            ax.plot(errors, [p.mean_utility[name] for p in points], marker="o", label=label)
        ax.set_xlabel("forecast error level (log-price s.d.; availability flips at half)")
        ax.set_ylabel("mean utility per job")
        ax.set_title("fine-tune: CHC sensitivity to forecast error")
        ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    traced = [r for r in results if r.regret is not None and r.regret.rounds]
    if traced:
        path = directory / "regret.png"
        fig, ax = plt.subplots(figsize=(7, 4.5))
        longest = max(r.regret.rounds for r in traced)
        for r in traced:
            ax.plot(np.arange(1, r.regret.rounds + 1), r.regret.regret, label=r.name)
        k = max(len(r.pool) for r in traced)
        t = np.arange(1, longest + 1)
        ax.plot(t, np.sqrt(t * math.log(k) / 2), "k--", label=f"√(T ln K / 2), K = {k}")
        ax.set_xlabel("rounds (jobs settled)")
        ax.set_ylabel("regret (loss units)")
        ax.set_title("policy-selection regret against the best fixed member")
        ax.legend(fontsize="small")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
