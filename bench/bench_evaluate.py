"""`spotsched evaluate`'s figures: where its time goes, one worker against two, an unchanged
re-run, and the same JSON as another revision of the code.

    python bench/bench_evaluate.py profile [--windows 1] [--top 25]
    python bench/bench_evaluate.py workers [--windows 2] [--workers 1 2]
    python bench/bench_evaluate.py schedule [--windows 1] [--workers 1 2 4]
    python bench/bench_evaluate.py rerun [--windows 2]
    python bench/bench_evaluate.py same --against REV [--windows 1]

Every figure is on the six-zone Can't Be Late evaluation (`--scenario cant-be-late`, default
policies) of the SkyNomad p3.2xlarge trace in the public traces folder
(`SPOTSCHED_TRACES_DIR`, default `../shared/traces`), seed 0.

* ``profile`` trains the windows' forecasters, then plays every cell in this process under
  cProfile with a CPU-time clock and prints the functions that take the most CPU, cumulative
  and own.
* ``workers`` runs ``spotsched evaluate`` with each ``--workers`` count (no cache) and prints
  wall-clock and CPU seconds and the load average before and after: on a shared machine the
  wall clock says how busy it was as much as how fast the code is; under each, the run's own
  lines on training the forecasters and playing the cells, whose CPU is the workers'. The CPU
  seconds are those of the command and the children it waited for: with one worker
  everything, with several the main process only (the pool's processes are the children of
  its fork server), so the workers' CPU is in the run's lines.
* ``schedule`` does each piece of work of the evaluation in this process, in the order the
  runner sends it out (the forecasters' trainings, then the cells), timing its CPU, and prints
  the time the runner's schedule would take on each ``--workers`` count of idle cores (each
  piece to the first worker free, the trainings done before any cell): how much faster more
  workers make the evaluation, whatever else the machine is doing.
* ``rerun`` fills a fresh cache, then times the run that reads every cell back.
* ``same`` runs the evaluation with this checkout's code and with ``REV``'s (its tree from
  ``git archive``), one worker each, and compares the JSON byte for byte.
"""

from __future__ import annotations

import argparse
import cProfile
import heapq
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = ("skynomad-artifact/"
         "aws_p3.2xlarge_availability_and_spot_price_2023-02-15_to_2023-04-02.csv.gz")


def trace() -> Path:
    folder = Path(os.environ.get("SPOTSCHED_TRACES_DIR", ROOT.parent / "shared" / "traces"))
    path = folder / TRACE
    if not path.exists():
        sys.exit(f"{path}: the public traces folder is needed (SPOTSCHED_TRACES_DIR)")
    return path


def evaluate_args(windows: int) -> list[str]:
    return ["evaluate", "--trace", str(trace()), "--scenario", "cant-be-late",
            "--windows", str(windows)]


def run(code: Path, args: list[str]) -> tuple[float, float, str]:
    """``spotsched`` from ``code``'s tree: wall-clock and CPU seconds, and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "streams", *args], cwd=code,
                          env={**os.environ, "PYTHONPATH": str(code)}, capture_output=True,
                          text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(done.stdout + done.stderr)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout + done.stderr


def load() -> str:
    return "load average " + " / ".join(f"{x:.2f}" for x in os.getloadavg())


def profile(windows: int, top: int) -> None:
    from solver.evaluation.cells import EvaluationPlan
    from solver.evaluation.cells import run as play_all
    from solver.evaluation.scenarios import build_cases
    from solver.traces import load_trace

    cases = build_cases(load_trace(trace()), ["cant-be-late"], windows, 0)
    start = time.process_time()
    for episode in cases[0].episodes:  # the cases share their windows' forecasters
        if episode.models is not None:
            episode.models.get()
    print(f"forecasters trained up to the last window: {time.process_time() - start:.1f} s of "
          "CPU")
    profiler = cProfile.Profile(time.process_time)
    start = time.process_time()
    profiler.runcall(play_all, EvaluationPlan(tuple(cases)))
    print(f"{windows} window(s), six cases, default policies: {time.process_time() - start:.1f}"
          f" s of CPU under the profiler ({load()})")
    stats = pstats.Stats(profiler)
    for order in ("cumulative", "tottime"):
        print(f"\nby {order}:")
        stats.sort_stats(order).print_stats(top)


def span(seconds: list[float], workers: int) -> float:
    """When the last of ``seconds`` finishes, each started in order on the first free worker."""
    free = [0.0] * workers
    for s in seconds:
        heapq.heappush(free, heapq.heappop(free) + s)
    return max(free)


def schedule(windows: int, counts: list[int]) -> None:
    from evaluation.runner import longest_first, longest_trainings
    from solver.evaluation.cells import EvaluationPlan, play_cell
    from solver.evaluation.scenarios import build_cases, trainings
    from solver.traces import load_trace

    plan = EvaluationPlan(tuple(build_cases(load_trace(trace()), ["cant-be-late"], windows, 0)))
    cells = longest_first(plan, plan.cells())
    work = trainings(e for cell in cells for e in plan.episodes(cell))
    histories = {id(training): history for history, training in work}
    trained, played = [], []
    for training in longest_trainings([t for _, t in work]):
        start = time.process_time()
        histories[id(training)].supply(training, training())
        trained.append(time.process_time() - start)
    for cell in cells:
        start = time.process_time()
        play_cell(cell, plan.episodes(cell), plan.seed, plan.settings)
        played.append(time.process_time() - start)
    longest = max(zip(played, cells, strict=True), key=lambda p: p[0])
    print(f"cant-be-late, {windows} window(s), six cases, default policies ({load()})")
    print(f"{len(trained)} trainings: {sum(trained):.1f} s of CPU, the longest "
          f"{max(trained):.1f} s")
    print(f"{len(played)} cells: {sum(played):.1f} s of CPU, the longest {longest[0]:.1f} s "
          f"({longest[1].label})")
    one = span(trained, 1) + span(played, 1)
    for count in counts:
        total = span(trained, count) + span(played, count)
        print(f"--workers {count}: {total:7.1f} s on idle cores, {one / total:.2f} x one worker")


def workers(windows: int, counts: list[int]) -> None:
    print(f"cant-be-late, {windows} window(s), six cases, default policies, no cache")
    for count in counts:
        before = load()
        wall, cpu, output = run(ROOT, [*evaluate_args(windows), "--workers", str(count),
                                       "--no-cache"])
        print(f"--workers {count}: {wall:7.1f} s wall, {cpu:7.1f} s CPU "
              f"({before} before, {load()} after)")
        for line in output.splitlines():
            if line.startswith(("trained ", "played ")):
                print(f"  {line}")


def rerun(windows: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        args = [*evaluate_args(windows), "--cache-dir", folder]
        wall, cpu, _ = run(ROOT, args)
        print(f"first run: {wall:.1f} s wall, {cpu:.1f} s CPU")
        wall, cpu, output = run(ROOT, args)
        print(f"re-run: {wall:.1f} s wall, {cpu:.1f} s CPU ({load()})")
        print(next(line for line in output.splitlines() if " read from the cache " in line))


def same(against: str, windows: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / "tree"
        tree.mkdir()
        archive = subprocess.run(["git", "archive", against], cwd=ROOT, capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        outputs: dict[str, bytes] = {}
        for name, code in (("this checkout", ROOT), (against, tree)):
            path = Path(folder) / f"{len(outputs)}.json"
            extra = ["--workers", "1", "--no-cache"] if code == ROOT else []
            wall, cpu, _ = run(code, [*evaluate_args(windows), "--json", str(path), *extra])
            outputs[name] = path.read_bytes()
            print(f"{name}: {wall:.1f} s wall, {cpu:.1f} s CPU")
        first, second = outputs.values()
        print("same JSON" if first == second else "the JSON differs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, windows in (("profile", 1), ("workers", 2), ("schedule", 1), ("rerun", 2),
                          ("same", 1)):
        command = commands.add_parser(name)
        command.add_argument("--windows", type=int, default=windows)
        if name == "profile":
            command.add_argument("--top", type=int, default=25)
        if name in ("workers", "schedule"):
            command.add_argument("--workers", type=int, nargs="+",
                                 default=[1, 2] if name == "workers" else [1, 2, 4])
        if name == "same":
            command.add_argument("--against", required=True)
    args = parser.parse_args()
    if args.command == "profile":
        profile(args.windows, args.top)
    elif args.command == "workers":
        workers(args.windows, args.workers)
    elif args.command == "schedule":
        schedule(args.windows, args.workers)
    elif args.command == "rerun":
        rerun(args.windows)
    else:
        same(args.against, args.windows)


if __name__ == "__main__":
    main()
