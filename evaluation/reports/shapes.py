"""The ``shapes`` suite's tables: every shape's policies as ratios to the hindsight optimum."""

from __future__ import annotations

from collections.abc import Sequence

from evaluation.reports.tables import ReportTable, keyed_table
from solver.evaluation.evaluate import CaseResult
from solver.evaluation.scenarios import Case


def shapes_tables(cases: Sequence[Case], results: Sequence[CaseResult], title: str
                  ) -> list[ReportTable]:
    """Per zone count, each policy's mean cost over the optimum's in each shape (a column
    each) and, for the shapes of several jobs a window (fleets), its mean utility over the
    optimum's (``—`` where the optimum did not run or its figure is not positive)."""
    policies = list(dict.fromkeys(p for r in results for p in r.policies if p != "optimum"))
    groups: dict[str, list[tuple[str, bool, CaseResult]]] = {}
    for case, result in zip(cases, results, strict=True):
        zones, _, shape = case.name.removeprefix("shapes ").partition(" zones ")
        fleet = any(len(e.jobs) > 1 for e in case.episodes)
        groups.setdefault(f"{zones} zones", []).append((shape, fleet, result))
    tables = []
    for zones, shapes in groups.items():
        tables.append(_table(f"{title}, {zones}: mean cost ÷ the optimum's", policies,
                             [(s, r) for s, _, r in shapes], "mean_cost_usd"))
        fleets = [(s, r) for s, fleet, r in shapes if fleet]
        if fleets:
            tables.append(_table(f"{title}, {zones}, fleets: mean utility ÷ the optimum's",
                                 policies, fleets, "mean_utility"))
    return tables


def _table(title: str, policies: Sequence[str], shapes: Sequence[tuple[str, CaseResult]],
           figure: str) -> ReportTable:
    rows = [[p, *(_ratio(r, p, figure) for _, r in shapes)] for p in policies]
    return keyed_table(title, ["policy", *(s for s, _ in shapes)], rows)


def _ratio(result: CaseResult, policy: str, figure: str) -> str:
    optimum = result.policies.get("optimum")
    base = getattr(optimum, figure) if optimum is not None else 0.0
    if base <= 0 or policy not in result.policies:
        return "—"
    return f"{getattr(result.policies[policy], figure) / base:.3f}"
