"""Every help screen reads on an 80-column terminal: lines fit, command summaries are whole
sentences, flags take no value and value options name what they take."""

import re

import pytest
import typer.main
from typer.testing import CliRunner

from streams.cli import app

runner = CliRunner()


def command_lines() -> list[list[str]]:
    group = typer.main.get_group(app)
    lines = [[]]
    for name, command in group.commands.items():
        lines.append([name])
        lines += [[name, sub] for sub in getattr(command, "commands", {})]
    return lines


@pytest.mark.parametrize("args", command_lines(), ids=lambda args: " ".join(args) or "spotsched")
def test_help_reads_at_80_columns(args):
    result = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    text = result.output
    assert max(len(line) for line in text.splitlines()) <= 80
    _, _, commands = text.partition("\nCommands:")
    assert "..." not in commands  # no summary cut short
    assert not re.search(r"<bool>|/--no-", text), text  # no --flag/--no-flag pairs
    assert not re.search(r"^ +--\S+ <list\[", text, re.M), text  # an option names its value


def test_a_flag_takes_no_value_and_an_option_names_what_it_takes():
    text = runner.invoke(app, ["replay", "--help"], env={"COLUMNS": "80"}).output
    assert re.search(r"^  --per-job +Also print", text, re.M)
    assert re.search(r"^  --trace <file> +Trace file", text, re.M)
    assert re.search(r"^  --bootstrap-servers <host:port>", text, re.M)
