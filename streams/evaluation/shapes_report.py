"""The ``shapes`` suite's tables: every shape's policies as ratios to the hindsight optimum."""

from __future__ import annotations

from collections.abc import Sequence

from solver.evaluation.evaluate import CaseResult
from solver.evaluation.scenarios import Case
from streams.reports.tables import ReportTable, keyed_table


def shapes_tables(cases: Sequence[Case], results: Sequence[CaseResult], title: str
                  ) -> list[ReportTable]:
    """Each policy's mean cost over the optimum's, a row per shape, and for the shapes of
    several jobs a window (fleets) their mean utility over the optimum's (``—`` where the
    optimum did not run or its figure is not positive)."""
    policies = list(dict.fromkeys(p for r in results for p in r.policies if p != "optimum"))
    columns = ["shape", *policies]
    tables = [keyed_table(f"{title}: mean cost ÷ the optimum's", columns,
                          [_row(r, policies, "mean_cost_usd") for r in results])]
    fleets = [r for c, r in zip(cases, results, strict=True)
              if any(len(e.jobs) > 1 for e in c.episodes)]
    if fleets:
        tables.append(keyed_table(f"{title}, fleets: mean utility ÷ the optimum's", columns,
                                  [_row(r, policies, "mean_utility") for r in fleets]))
    return tables


def _row(result: CaseResult, policies: Sequence[str], figure: str) -> list[str]:
    optimum = result.policies.get("optimum")
    base = getattr(optimum, figure) if optimum is not None else 0.0
    cells = [f"{getattr(result.policies[p], figure) / base:.3f}"
             if base > 0 and p in result.policies else "—" for p in policies]
    return [result.name, *cells]
