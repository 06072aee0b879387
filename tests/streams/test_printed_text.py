"""What the command line and the log connector print of a message has its control characters
escaped: a reason or an id cannot clear the screen, forge a line or reorder what follows."""

from __future__ import annotations

import io

from rich.console import Console

from connectors.log import describe
from streams.cli.reports.cells import cell
from streams.cli.reports.decisions import decisions_table
from streams.contract import ProvisioningDecision

HOSTILE = "ok\x1b[2J\nINFO forged\x00\u202eevil"
SHOWN = "ok\\x1b[2J\\nINFO forged\\x00\\u202eevil"


def hostile_decision() -> ProvisioningDecision:
    """A decision with a hostile reason, and a job id the contract refuses (as if it got past)."""
    d = ProvisioningDecision(
        event_time=1.728e9, job_id="job-1", epoch=480000, slot_start=1.728e9,
        slot_seconds=3600.0, market="aws/us-east-1/us-east-1a/p3.2xlarge", on_demand=1,
        action="run", policy="greedy", expected_cost_usd=3.06, slack_seconds=0.0,
        reason=HOSTILE)
    return d.model_copy(update={"job_id": "job\x1b[31m-1"})


def test_the_decisions_table_escapes_a_hostile_reason_and_job_id():
    out = io.StringIO()
    console = Console(width=400, file=out, color_system=None)
    console.print(decisions_table([hostile_decision()], console))
    text = out.getvalue()
    assert not any(c in text for c in "\x1b\x00\u202e")
    assert "job\\x1b[31m-1" in text and SHOWN in text


def test_a_table_cell_escapes_control_characters_and_markup():
    assert cell(HOSTILE) == SHOWN
    assert cell("[bold]x\n") == "\\[bold]x\\n"


def test_the_log_connector_writes_one_line_whatever_the_reason():
    line = describe(hostile_decision())
    assert "\n" not in line and "\x1b" not in line
    assert line.endswith(f"run: {SHOWN}") and "job=job\\x1b[31m-1 " in line


def test_a_line_of_the_service_commands_is_escaped(monkeypatch):
    from streams.cli import service

    out = io.StringIO()
    monkeypatch.setattr(service, "console", Console(width=400, file=out, color_system=None))
    service.say(f"job-1 rejected: {HOSTILE}")
    assert out.getvalue() == f"job-1 rejected: {SHOWN}\n"
