"""A connector that writes each decision as one readable line, or as its JSON event."""

from __future__ import annotations

from typing import TextIO

from connectors.base import Applied
from solver.market import SECONDS_PER_HOUR
from streams.contract import ProvisioningDecision, dump_event
from streams.contract.printable import printable


def describe(decision: ProvisioningDecision) -> str:
    """One line: when, which job, what to run where, at what expected cost, and why."""
    d = decision
    return printable(f"{d.slot_start:%Y-%m-%dT%H:%M:%SZ} epoch={d.epoch} job={d.job_id} "
            f"market={d.market} spot={d.spot} on-demand={d.on_demand} "
            f"cost=${d.expected_cost_usd:.2f} slack={d.slack_seconds / SECONDS_PER_HOUR:.1f}h "
            f"policy={d.policy} key={d.idempotency_key} {d.action}"
            f"{'' if d.release_cause is None else ' ' + d.release_cause}: {d.reason or '-'}")


class LogConnector:
    """Writes decisions to ``out`` (flushed per line); acts on nothing."""

    name = "log"

    def __init__(self, out: TextIO, json_lines: bool = False) -> None:
        self.out = out
        self.json_lines = json_lines

    async def apply(self, decision: ProvisioningDecision) -> Applied:
        line = dump_event(decision).decode() if self.json_lines else describe(decision)
        self.out.write(line + "\n")
        self.out.flush()
        return Applied()

    async def close(self) -> None:
        self.out.flush()
