"""A long command tells how far it is on standard error, whatever standard output is."""

import io
import re
from types import SimpleNamespace

from rich.console import Console
from typer.testing import CliRunner

from streams.cli import app
from streams.cli.progress import Steps


def test_off_a_terminal_a_plain_line_comes_at_every_tenth_of_the_work():
    out = io.StringIO()
    with Steps("replaying", 40, "slots", Console(file=out, force_terminal=False)) as steps:
        for _ in range(40):
            steps.advance()
    lines = out.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == [
        f"replaying: {4 * k}/40 slots ({10 * k}%)" for k in range(1, 11)]
    assert all(re.search(r", \d+:\d\d:\d\d elapsed, eta (\d+:\d\d:\d\d|\?)$", line)
               for line in lines)


def test_the_time_left_is_told_from_the_rate_since_the_previous_line(monkeypatch):
    clock = SimpleNamespace(now=0.0)
    monkeypatch.setattr("streams.cli.progress.time", SimpleNamespace(monotonic=lambda: clock.now))
    out = io.StringIO()
    with Steps("replaying", 100, "slots", Console(file=out, force_terminal=False)) as steps:
        steps.advance(60)  # the fast policies: 60 slots at once
        for _ in range(40):  # then a slot a second
            clock.now += 1
            steps.advance()
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("(60%), 0:00:00 elapsed, eta ?"), lines
    assert lines[1].endswith("(70%), 0:00:10 elapsed, eta 0:00:30"), lines
    assert lines[-1].endswith("(100%), 0:00:40 elapsed, eta 0:00:00"), lines


def test_on_a_terminal_a_bar_is_drawn_and_nothing_is_left_behind():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=80)
    with Steps("replaying", 5, "slots", console) as steps:
        for _ in range(5):
            steps.advance()
    assert "replaying" in out.getvalue() and "5/5" in out.getvalue()
    assert "elapsed" not in out.getvalue()  # the plain lines are for other outputs


def test_replay_reports_its_progress_on_standard_error():
    result = CliRunner().invoke(app, ["replay", "--n-jobs", "2", "--policy", "greedy"])
    assert result.exit_code == 0, result.output
    assert re.search(r"replaying: [\d,]+/[\d,]+ slots \(100%\)", result.stderr)
    assert "replaying" not in result.stdout
