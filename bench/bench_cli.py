"""How fast the command line answers before any work: ``spotsched --help``, a command's
``--help`` and a flag error.

Each case runs ``python -m streams ...`` in a fresh process (what the ``spotsched`` entry point
runs) ``--runs`` times; prints the median wall time of each against the 1 s target, and the
heavy modules the process imported (none is expected). Run on an idle machine:
``python bench/bench_cli.py``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from rich.console import Console
from rich.table import Table

CASES = {
    "spotsched --help": ["--help"],
    "spotsched replay --help": ["replay", "--help"],
    "spotsched replay --seed -1 (flag error)": ["replay", "--seed", "-1"],
}
HEAVY = ("faust", "numba", "ortools", "river", "matplotlib", "boto3", "aiokafka", "scipy",
         "pandas")
"""Modules only the commands that need them may import."""
TARGET_S = 1.0

_PROBE = """
import runpy, sys
sys.argv = ["spotsched", *sys.argv[1:]]
try:
    runpy.run_module("streams", run_name="__main__")
except SystemExit:
    pass
print("HEAVY:" + ",".join(sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))),
      file=sys.stderr)
"""
"""Runs the command as ``python -m streams`` does, then names the heavy modules it imported."""


def run_once(args: list[str]) -> float:
    """Wall seconds of one ``python -m streams ARGS``."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "streams", *args], capture_output=True, check=False)
    return time.perf_counter() - started


def heavy_imports(args: list[str]) -> list[str]:
    """The heavy top-level modules a ``python -m streams ARGS`` process has imported."""
    probe = _PROBE.replace("set(HEAVY)", repr(set(HEAVY)))
    done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True,
                          text=True, check=False)
    line = next(x for x in done.stderr.splitlines() if x.startswith("HEAVY:"))
    return [m for m in line.removeprefix("HEAVY:").split(",") if m]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per case (default 5)")
    runs = parser.parse_args().runs
    table = Table("case", "median s", f"target {TARGET_S:g} s", "runs s", "heavy imports",
                  title=f"spotsched start-up, median of {runs}")
    for name, args in CASES.items():
        run_once(args)  # warm the file cache and the byte-code
        times = [run_once(args) for _ in range(runs)]
        median = statistics.median(times)
        table.add_row(name, f"{median:.2f}", "met" if median < TARGET_S else "MISSED",
                      " ".join(f"{t:.2f}" for t in times),
                      ", ".join(heavy_imports(args)) or "none")
    Console().print(table)


if __name__ == "__main__":
    main()
