"""The operator's commands without a broker: their flag errors, and a broker that does not
answer ends each within 10 s in one line on standard error saying how to start one, exit
status 3."""

import time

import pytest
from typer.testing import CliRunner

from streams.cli import app
from streams.cli.jobs import event_time
from tests.traces_dir import REPO_ROOT

runner = CliRunner()
NOBODY = "127.0.0.1:1"
"""A port where no broker answers."""


@pytest.mark.parametrize(("args", "message"), [
    (["cancel", "x", "--at", "2023-13-01"], "--at 2023-13-01: expected an ISO-8601 time"),
    (["finish", "x", "--at", "yesterday"], "--at yesterday: expected an ISO-8601 time"),
    (["progress", "x", "--work-done", "-1"], "--work-done -1.0: expected a number of work units"),
    (["progress", "x"], "Missing option '--work-done'"),
    (["submit", "examples/demo-jobs.json", "--wait", "-1"],
     "--wait -1.0: expected a number of seconds >= 0"),
    (["jobs", "--state", "runing"], "--state runing: expected one of pending, waiting, running"),
    (["dead-letters", "--since", "noon"], "--since noon: expected an ISO-8601 time"),
    (["submit", "--id", "a", "--workload", "x", "--deadline", "2030-01-01T00:00:00Z"],
     "--workload x: expected a finite number"),
    (["submit", "--id", "a", "--workload", "1"], "--deadline missing: expected a value"),
    (["submit"], "submit: expected a file of jobs or one job's --id, --workload and "
     "--deadline, not neither"),
    (["cancel"], "cancel: expected job ids or --all, not neither"),
    (["cancel", "a", "--all"], "cancel: expected job ids or --all, not both"),
    (["dead-letters", "--limit", "-1"], "--limit -1: expected a non-negative integer"),
])
def test_a_mistake_ends_in_one_line_naming_the_flag(args, message, monkeypatch):
    monkeypatch.chdir(REPO_ROOT)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.output


@pytest.mark.parametrize("text", ["2023-03-08T12:00:00Z", "2023-03-08T12:00:00",
                                  "1678276800", "1678276800.0"])
def test_at_reads_iso_times_as_utc_and_unix_seconds(text):
    assert event_time(text).isoformat() == "2023-03-08T12:00:00+00:00"


@pytest.fixture(scope="module")
def imported() -> None:
    """The modules the commands import when they run, imported once: the 10 s are the
    broker's, not the first import's on a loaded machine."""
    import solver.traces.jobs_file  # noqa: F401


@pytest.mark.parametrize("args", [
    ["submit", "examples/demo-jobs.json"], ["cancel", "eval-sweep"], ["cancel", "--all"],
    ["jobs"],
    ["dead-letters"], ["status"], ["decisions"],
    ["finish", "eval-sweep", "--at", "2023-03-08T12:00:00Z"],
])
def test_a_silent_broker_ends_a_one_shot_command_within_10_s(args, monkeypatch, imported):
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.delenv("SPOTSCHED_BROKER_TIMEOUT_SECONDS", raising=False)
    started = time.monotonic()
    result = runner.invoke(app, [*args, "--bootstrap-servers", NOBODY])
    elapsed = time.monotonic() - started
    assert result.exit_code == 3, result.output
    assert elapsed < 10, elapsed
    assert not [line for line in result.stdout.splitlines() if line.startswith("error:")]
    error = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and "cannot connect" in error[0], result.output
    assert "`spotsched dev kafka`" in error[0]
    assert "Traceback" not in result.output
