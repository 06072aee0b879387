"""Present provisioning decisions as a table that reads at 80 columns and more, each with the
planner that made it and replays of a decision marked."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.console import Console

from evaluation.reports.tables import (
    ReportTable,
    add_key_column,
    add_number_columns,
    first_fitting,
    report_table,
)
from solver.market import SECONDS_PER_HOUR
from streams.cli.reports.cells import cell
from streams.contract import ProvisioningDecision

REASON_WIDTH = 30
"""The room a wider layout leaves the reasons before a narrower one is chosen."""
REPLAY_MARK = "*"
REPLAY_NOTE = (f"{REPLAY_MARK} replay: a decision already listed, written again after a restart "
               "(same idempotency key); harmless, a connector applies each key once")


class SeenKeys:
    """Tells a replayed decision: one whose idempotency key came before."""

    def __init__(self) -> None:
        self._keys: set[str] = set()

    def replay(self, decision: ProvisioningDecision) -> bool:
        """Whether ``decision``'s key was seen already; it is seen from now on."""
        seen = decision.idempotency_key in self._keys
        self._keys.add(decision.idempotency_key)
        return seen


def replays(decisions: Iterable[ProvisioningDecision]) -> list[bool]:
    """For each decision in order, whether it replays an earlier one."""
    seen = SeenKeys()
    return [seen.replay(d) for d in decisions]


def decisions_table(decisions: Sequence[ProvisioningDecision], console: Console) -> ReportTable:
    """One row per decision: slot start (UTC), job, market, instances, expected cost, slack,
    planner and why; the policy in the title when every decision has the same one, replays
    marked. Market keys are whole when the console is wide enough, else numbered with a legend
    under the table, and at the narrowest the job goes under its slot start."""
    policies = sorted({d.policy for d in decisions})
    title = f"decisions of {policies[0]}" if len(policies) == 1 else "decisions"
    markets = list(dict.fromkeys(d.market for d in decisions))
    numbers = {key: f"m{k + 1}" for k, key in enumerate(markets)}
    marks = replays(decisions)
    notes = ([f"{numbers[key]}: {key}" for key in markets]
             + ([REPLAY_NOTE] if any(marks) else []))
    legend = "\n".join(notes) or None
    wide_legend = REPLAY_NOTE if any(marks) else None
    roomy = min(max((len(d.reason) for d in decisions), default=0), REASON_WIDTH)
    layouts = [
        _layout(decisions, marks, title, None, wide_legend, len(policies) > 1, False, roomy),
        _layout(decisions, marks, title, numbers, legend, len(policies) > 1, False, roomy),
        _layout(decisions, marks, title, numbers, legend, len(policies) > 1, True, None),
    ]
    return first_fitting(console, layouts)


def _layout(decisions: Sequence[ProvisioningDecision], marks: Sequence[bool], title: str,
            numbers: dict[str, str] | None, legend: str | None, by_policy: bool,
            job_under_time: bool, reason_width: int | None) -> ReportTable:
    table = report_table(title + " (slot start in UTC)", legend)
    if job_under_time:
        add_key_column(table, "slot start\n  job")
    else:
        add_key_column(table, "slot start")
        add_key_column(table, "job")
    add_key_column(table, "market")
    add_number_columns(table, "spot", "on-demand", "USD", "slack h")
    if by_policy:
        add_key_column(table, "policy")
    add_key_column(table, "planner")
    table.add_column("reason", min_width=reason_width)
    for d, replay in zip(decisions, marks, strict=True):
        start = f"{d.slot_start:%Y-%m-%d %H:%M}" + (f" {REPLAY_MARK}" if replay else "")
        job = cell(d.job_id)
        when = [f"{start}\n  {job}"] if job_under_time else [start, job]
        market = numbers[d.market] if numbers else d.market
        table.add_row(*when, cell(market), str(d.spot), str(d.on_demand),
                      f"{d.expected_cost_usd:.2f}", f"{d.slack_seconds / SECONDS_PER_HOUR:.1f}",
                      *([cell(d.policy)] if by_policy else []), cell(d.planner or "-"),
                      cell(d.reason))
    return table
