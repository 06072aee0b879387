"""Every user mistake on the command line ends in one line naming the flag, before any work."""

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from streams.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> dict[str, str]:
    """A file, a folder, a small trace and a workload released before the synthetic market."""
    root = tmp_path_factory.mktemp("places")
    (root / "a-file").write_text("not a folder\n")
    (root / "a-folder").mkdir()
    lines = ["timestamp,market,spot_price,available,on_demand_price"]
    lines += [f"{1736121600 + 900 * k},aws/us-east-1/us-east-1a/p3.2xlarge,1.0,2,3.06"
              for k in range(4 * 48 + 1)]
    (root / "trace.csv").write_text("\n".join(lines) + "\n")
    job = {"id": "early", "workload": 2, "release": "2025-01-05T00:00:00Z",
           "soft_deadline": "2025-01-07T00:00:00Z", "hard_deadline": "2025-01-07T06:00:00Z"}
    (root / "early.json").write_text(json.dumps([job]))
    typo = {**job, "release": "2025-01-06T00:00:00Z", "hard_dedline": job.pop("hard_deadline")}
    (root / "typo.json").write_text(json.dumps([typo]))
    return {"file": str(root / "a-file"), "dir": str(root / "a-folder"),
            "trace": str(root / "trace.csv"), "early": str(root / "early.json"),
            "typo": str(root / "typo.json"), "ro": str(_read_only_folder(root))}


def _read_only_folder(root: Path) -> Path:
    """A folder no file can be created in: one without write permission, or for root (whom
    permissions do not stop) ``/sys``, which refuses new files to everyone."""
    folder = root / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        (folder / "probe").touch()
    except OSError:
        return folder
    (folder / "probe").unlink()
    return Path("/sys")


CASES = [
    (["replay", "--seed", "-1"], "--seed -1: expected a non-negative integer"),
    (["replay", "--n-jobs", "0"], "--n-jobs 0: expected a whole number >= 1"),
    (["replay", "--synthetic-markets", "9"], "--synthetic-markets 9: expected between 1 and 8"),
    (["replay", "--days", "0.5"], "--days 0.5: expected at least 1 day"),
    (["replay", "--slot-seconds", "0.5"], "--slot-seconds 0.5: expected at least 1 second"),
    (["replay", "--job-partitions", "0"], "--job-partitions 0: expected a whole number >= 1"),
    (["replay", "--policy", "magic"], "--policy magic: policy='magic': expected one of on-demand"),
    (["replay", "--n-jobs", "many"], "Invalid value for '--n-jobs'"),
    (["replay", "--trace", "{dir}/missing.csv"], "Invalid value for '--trace'"),
    (["replay", "--nope"], "No such option: --nope"),
    (["replay", "--decisions", "{dir}"], "--decisions {dir}: expected a file name, not a folder"),
    (["replay", "--jobs", "{early}", "--decisions", "{file}/d.jsonl"],
     "--decisions {file}/d.jsonl: expected a file in a folder that exists or can be created"),
    (["replay", "--report", "{file}"], "--report {file}: expected a folder, not a file"),
    (["replay", "--jobs", "{early}"], "job 'early' release=2025-01-05T00:00:00Z: expected at "
     "or after the market data's first slot start 2025-01-06T00:00:00Z"),
    (["forecast-report", "--trace", "{trace}", "--horizon", "48"],
     "--horizon 48: expected between 1 and 46 slots (the market data has 47 slots of 3600 s)"),
    (["forecast-report", "--trace", "{trace}", "--horizon", "0"],
     "--horizon 0: expected a whole number >= 1"),
    (["forecast-report", "--trace", "{trace}", "--json", "{file}/r.json"],
     "--json {file}/r.json: expected a file in a folder that exists or can be created"),
    (["forecast-report", "--trace", "{trace}", "--plots", "{file}"],
     "--plots {file}: expected a folder, not a file"),
    (["evaluate", "--seed", "-2"], "--seed -2: expected a non-negative integer"),
    (["evaluate", "--windows", "0"], "--windows 0: expected a whole number >= 1"),
    (["evaluate", "--resample", "-1"], "--resample -1: expected a non-negative integer"),
    (["evaluate", "--json", "{dir}"], "--json {dir}: expected a file name, not a folder"),
    (["evaluate", "--plots", "{file}/plots"],
     "--plots {file}/plots: expected a folder that exists or can be created"),
    (["schema", "--out", "{file}"], "--out {file}: expected a folder, not a file"),
    (["worker", "--slot-seconds", "0"], "--slot-seconds 0.0: expected at least 1 second"),
    (["worker", "--log-level", "loud"],
     "--log-level loud: expected one of DEBUG, INFO, WARNING, ERROR"),
    (["replay", "--per-job", "true"], "unexpected extra argument(s) (true)"),
    (["replay", "--days", "1"], "--days 1: the market spans 24.0 h, too short for a generated "
     "job"),
    (["replay", "--on-demand-price", "X=abc"], "--on-demand-price 'X=abc': expected "
     "TYPE=USD_PER_HOUR with a positive price"),
    (["replay", "--policy", "policy-selection:pool=risk-aware+foo"],
     "pool member foo: policy='foo': expected one of"),
    (["replay", "--policy", "risk-awar"], "(did you mean 'risk-aware'?)"),
    (["replay", "--jobs", "{typo}"], "field 'hard_dedline' = '2025-01-07T06:00:00Z': expected a "
     "known job field (did you mean 'hard_deadline'?)"),
    (["evaluate", "--scenario", "cantbelate"], "--scenario cantbelate: expected one of "
     "cant-be-late, multi-region, fine-tune, scarce, shapes (did you mean 'cant-be-late'?)"),
    (["worker", "--markets-file", "{trace}"], "--markets-file (SPOTSCHED_MARKETS_FILE) {trace}: "
     "expected a readable JSON file"),
    (["connector", "sim", "--synthetic-markets", "0"],
     "--synthetic-markets 0: expected between 1 and 8"),
    (["feed", "aws", "--market-partitions", "0"],
     "--market-partitions 0: expected a whole number >= 1"),
]


OUTPUTS = [("replay", "--decisions", "file"), ("replay", "--report", "dir"),
           ("evaluate", "--json", "file"), ("evaluate", "--plots", "dir"),
           ("evaluate", "--cache-dir", "dir"), ("forecast-report", "--json", "file"),
           ("forecast-report", "--plots", "dir"), ("schema", "--out", "dir"),
           ("worker", "--data-dir", "dir"), ("connector", "--data-dir", "dir"),
           ("dev", "--data-dir", "dir")]
"""Every option naming a file or a folder a command writes, and which of the two it is."""

PREFIX = {"forecast-report": ["forecast-report", "--trace", "{trace}"],
          "connector": ["connector", "log"], "dev": ["dev", "kafka"]}


def _refused(command: str, flag: str, kind: str, place: str) -> tuple[list[str], str]:
    """The command line writing to ``place`` and the start of its error."""
    path = {"proc": "/proc/x" + (".json" if kind == "file" else ""), "full": "/dev/full",
            "ro": "{ro}/out" + (".json" if kind == "file" else "")}[place]
    expected = {
        ("file", "proc"): "expected a file in a folder this user may write in (/proc:",
        ("dir", "proc"): "expected a folder that exists or can be created",
        ("file", "full"): "expected a regular file, not a device or a pipe",
        ("dir", "full"): "expected a folder, not a device or a pipe",
        ("file", "ro"): "expected a file in a folder this user may write in ({ro}:",
        ("dir", "ro"): "expected a folder that exists or can be created"}[kind, place]
    return [*PREFIX.get(command, [command]), flag, path], f"{flag} {path}: {expected}"


CASES += [_refused(command, flag, kind, place) for command, flag, kind in OUTPUTS
          for place in ("proc", "full", "ro")]


@pytest.mark.parametrize(("args", "message"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_a_mistake_ends_in_one_line_naming_the_flag(args, message, places):
    result = runner.invoke(app, [a.format(**places) for a in args])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: ")
    assert message.format(**places) in lines[0]
    assert "Traceback" not in result.output


def test_a_write_that_fails_after_the_checks_ends_in_one_line(capsys):
    from streams.cli.errors import writing

    with pytest.raises(typer.Exit) as stopped, writing(), open("/dev/full", "w") as full:
        full.write("a decision\n")
    assert stopped.value.exit_code == 1
    assert capsys.readouterr().err == "error: cannot write the output (No space left on device)\n"


def test_output_folders_are_created_and_every_written_file_named(tmp_path, places):
    decisions, report = tmp_path / "new" / "d.jsonl", tmp_path / "deeper" / "report"
    result = runner.invoke(app, ["replay", "--n-jobs", "2", "--policy", "greedy", "--decisions",
                                 str(decisions), "--report", str(report)])
    assert result.exit_code == 0, result.output
    written = [line for line in result.stderr.splitlines() if line.startswith("wrote ")]
    assert "wrote " not in result.stdout  # a diagnostic, not the command's result
    assert written == [f"wrote {decisions}", f"wrote {report / 'report.json'}",
                       f"wrote {report / 'replay.png'}"]
    assert decisions.stat().st_size > 0


def test_version_is_the_installed_package_version():
    from importlib.metadata import version

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"spotsched {version('spotsched')}"
