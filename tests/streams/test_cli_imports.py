"""The command line answers ``--help`` and flag errors without loading what only the work of a
command needs (the solvers, the forecasters, Faust, Kafka clients, plots, AWS)."""

import json
import subprocess
import sys

import typer.main

from streams.cli import app

HEAVY = ("faust", "numba", "ortools", "river", "matplotlib", "boto3", "aiokafka")

PROBE = """
import json, sys

def heavy():
    return sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.argv[1])))

from streams.cli import app
loaded = {"import streams.cli": heavy()}
for args in json.loads(sys.argv[2]):
    try:
        app(args, prog_name="spotsched")
    except SystemExit:
        pass
    loaded["spotsched " + " ".join(args)] = heavy()
print(json.dumps(loaded))
"""


def heavy_modules_after(cases: list[list[str]]) -> dict[str, list[str]]:
    """The heavy modules loaded once ``streams.cli`` is imported, then after each command line,
    run in turn in one fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(HEAVY), json.dumps(cases)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_importing_the_command_line_loads_no_heavy_module():
    assert heavy_modules_after([]) == {"import streams.cli": []}


def test_every_help_and_flag_errors_load_no_heavy_module():
    group = typer.main.get_group(app)
    commands = [[name] for name in group.commands]
    commands += [[name, sub] for name, command in group.commands.items()
                 for sub in getattr(command, "commands", {})]
    cases = [["--help"], *([*c, "--help"] for c in commands),
             ["replay", "--seed", "-1"], ["replay", "--n-jobs", "3", "--days", "0"],
             ["evaluate", "--windows", "0"], ["worker", "--job-partitions", "0"]]
    loaded = heavy_modules_after(cases)
    assert len(loaded) == len(cases) + 1
    assert {line: modules for line, modules in loaded.items() if modules} == {}
