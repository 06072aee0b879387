"""``spotsched evaluate`` on several workers, on Ray, from its cache, and stopped half-way."""

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streams.cli import app
from tests.scenarios import write_probe_trace

ROOT = Path(__file__).resolve().parents[2]

LINE = re.compile(r"^\[(\d+)/(\d+)\] (.+) (\d+\.\d) s, eta (\d+:\d\d:\d\d|\?)$")


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    return write_probe_trace(tmp_path_factory.mktemp("trace") / "probe.csv", hours=90)


def small_case(trace):
    """Two Can't Be Late cases (one task at both overheads) over two windows of ``trace``,
    every policy, and the planners on every forecast kind."""
    return ["evaluate", "--trace", str(trace), "--scenario", "cant-be-late", "--windows", "2",
            "--work-hours", "6", "--deadline-hours", "8", "--value-of-forecasts"]


def evaluate(args, out, *extra):
    result = CliRunner().invoke(app, [*args, "--json", str(out), *extra])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.slow
def test_the_same_json_on_one_worker_and_two(trace, tmp_path):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    serial = evaluate(small_case(trace), one, "--workers", "1", "--no-cache")
    parallel = evaluate(small_case(trace), two, "--workers", "2", "--no-cache")
    assert one.read_bytes() == two.read_bytes()
    assert "to play on 1 worker" in serial and "to play on 2 workers" in parallel
    lines = [LINE.match(line) for line in parallel.splitlines() if line.startswith("[")]
    assert lines and all(lines)
    total = int(lines[0][2])
    assert sorted(int(m[1]) for m in lines) == list(range(1, total + 1))
    assert {m[3] for m in lines} >= {"cant-be-late 6h/8h/0.2h w01 risk-aware:forecast=oracle",
                                     "cant-be-late 6h/8h/0.02h all windows policy-selection"}


RAY_CASE = ["--policy", "greedy", "--policy", "risk-aware", "--policy", "policy-selection",
            "--policy", "optimum"]


@pytest.mark.slow
def test_the_same_json_on_a_ray_instance_of_its_own(trace, tmp_path):
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[ray]')")
    local, ray = tmp_path / "local.json", tmp_path / "ray.json"
    evaluate([*small_case(trace), *RAY_CASE], local, "--workers", "1", "--no-cache")
    output = evaluate([*small_case(trace), *RAY_CASE], ray, "--executor", "ray", "--workers",
                      "2", "--no-cache")
    assert "to play on 2 workers (ray)" in output
    assert local.read_bytes() == ray.read_bytes()


@pytest.fixture
def ray_head(monkeypatch):
    """A Ray head on loopback (``ray start --head --block``, stopped with its processes)."""
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[ray]')")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    head = subprocess.Popen(
        [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block",
         "--port", str(port), "--node-ip-address", "127.0.0.1", "--num-cpus", "2",
         "--include-dashboard", "false", "--disable-usage-stats"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in head.stdout:
            if "will now block" in line:
                break
        else:
            pytest.fail("ray start --head ended before it was up")
        yield f"127.0.0.1:{port}"
    finally:
        head.terminate()
        head.wait(timeout=60)


@pytest.mark.slow
def test_the_same_json_on_a_ray_cluster_at_an_address(trace, tmp_path, ray_head):
    local, ray = tmp_path / "local.json", tmp_path / "ray.json"
    evaluate([*small_case(trace), *RAY_CASE], local, "--workers", "1", "--no-cache")
    output = evaluate([*small_case(trace), *RAY_CASE], ray, "--executor", "ray", "--address",
                      ray_head, "--no-cache")
    assert "to play on 2 workers (ray)" in output
    assert local.read_bytes() == ray.read_bytes()


def entries(cache):
    return sorted(p.name for p in cache.rglob("*.pickle"))


@pytest.mark.slow
def test_an_evaluation_stopped_half_way_plays_only_the_cells_it_lacks(trace, tmp_path):
    cache = tmp_path / "cache"
    args = [*small_case(trace), "--workers", "2", "--cache-dir", str(cache)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.Popen([sys.executable, "-m", "streams", *args, "--json",
                            str(tmp_path / "stopped.json")], cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 600
    while len(entries(cache)) < 4 and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    run.send_signal(signal.SIGINT)
    output, _ = run.communicate(timeout=120)
    assert run.returncode != 0, output
    assert not (tmp_path / "stopped.json").exists()
    kept = entries(cache)
    total = int(re.search(r"^(\d+) cells: 0 read from the cache", output, re.M)[1])
    assert 4 <= len(kept) < total
    assert not list(cache.rglob("*.part"))

    resumed = evaluate(args, tmp_path / "resumed.json")
    assert f"{total} cells: {len(kept)} read from the cache ({cache}), " \
           f"{total - len(kept)} to play" in resumed
    assert len(entries(cache)) == total
    evaluate(small_case(trace), tmp_path / "whole.json", "--workers", "1", "--no-cache")
    assert (tmp_path / "resumed.json").read_bytes() == (tmp_path / "whole.json").read_bytes()

    again = evaluate(args, tmp_path / "again.json")
    assert f"{total} cells: {total} read from the cache ({cache}), none to play" in again
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "whole.json").read_bytes()


def test_cells_are_kept_by_the_market_content_not_the_file_name(tmp_path):
    first = write_probe_trace(tmp_path / "a.csv", hours=70)
    renamed = tmp_path / "b.csv"
    renamed.write_bytes(first.read_bytes())
    args = ["evaluate", "--scenario", "cant-be-late", "--windows", "1", "--work-hours", "2",
            "--deadline-hours", "3", "--overhead-hours", "0.2", "--policy", "greedy",
            "--workers", "1", "--cache-dir", str(tmp_path / "cache")]
    assert "1 cells: 0 read from the cache" in evaluate(
        [*args, "--trace", str(first)], tmp_path / "a.json")
    (entry,) = (tmp_path / "cache").rglob("*.pickle")
    assert "1 cells: 1 read from the cache" in evaluate(
        [*args, "--trace", str(renamed)], tmp_path / "b.json")
    assert "1 cells: 0 read from the cache" in evaluate(
        [*args, "--trace", str(first), "--on-demand-price", "p3.2xlarge=4.0"],
        tmp_path / "c.json")
    assert "1 cells: 1 to play" in evaluate(
        [*args, "--trace", str(first), "--no-cache"], tmp_path / "d.json")
    entry.write_bytes(entry.read_bytes()[:20])  # damaged: played again
    assert "1 cells: 0 read from the cache" in evaluate(
        [*args, "--trace", str(first)], tmp_path / "e.json")
    assert (tmp_path / "e.json").read_bytes() == (tmp_path / "a.json").read_bytes()


@pytest.mark.parametrize(("flag", "path", "expected"), [
    ("--json", "/proc/x.json", "--json /proc/x.json: expected a file in a folder this user may "
                               "write in"),
    ("--json", "/dev/full", "--json /dev/full: expected a regular file, not a device"),
    ("--plots", "/proc/plots", "--plots /proc/plots: expected a folder that exists or can be "
                               "created"),
    ("--cache-dir", "/proc/cache", "--cache-dir /proc/cache: expected a folder"),
])
def test_an_output_that_cannot_be_written_is_refused_before_any_work(trace, flag, path,
                                                                      expected):
    result = CliRunner().invoke(app, [*small_case(trace), flag, path])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and expected in result.output
    assert "cells" not in result.output


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write in a read-only folder")
def test_a_read_only_folder_is_refused(trace, tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    result = CliRunner().invoke(app, [*small_case(trace), "--json", str(folder / "x.json")])
    assert result.exit_code == 2
    assert "expected a file in a folder this user may write in" in result.output


def test_the_ray_executor_alone_takes_an_address(trace):
    result = CliRunner().invoke(app, [*small_case(trace), "--address", "127.0.0.1:6379"])
    assert result.exit_code == 2
    assert "address='127.0.0.1:6379': expected only with the ray executor" in result.output
