"""Derive the ``shapes`` markets' parameters from the public traces
(:mod:`solver.evaluation.shape_calibration`): ``python -m evaluation.calibrate_shapes
[FOLDER]`` prints the table kept there as ``CALIBRATION``. The folder defaults to
``SPOTSCHED_TRACES_DIR``, else ``../shared/traces`` beside the checkout."""

from __future__ import annotations

import csv
import os
import sys
from pathlib import Path

import numpy as np

from solver.evaluation.shape_calibration import ShapeCalibration, calibrate
from solver.traces import load_trace
from solver.traces.errors import TraceFormatError, read_text
from solver.traces.prices import ON_DEMAND_USD_PER_HOUR

SPOTLAKE_DAILY = "spotlake-daily-via-ec2-spot-dashboard/gpu_spot_price_daily.csv.gz"
ONE_NODE = "skypilot-spot-traces/availability/1-node"
SIXTEEN_NODE = "skypilot-spot-traces/availability/16-node"
BAMBOO_GROUPS = ("bamboo-spot-cluster/traces/p3-trace.csv",
                 "bamboo-spot-cluster/traces/g4dn-trace.csv")


def default_traces_dir() -> Path:
    """``SPOTSCHED_TRACES_DIR`` (relative to the checkout), else ``../shared/traces``."""
    root = Path(__file__).resolve().parents[2]
    return (root / os.environ.get("SPOTSCHED_TRACES_DIR", "../shared/traces")).resolve()


def calibrate_from(folder: Path) -> ShapeCalibration:
    """The parameters derived from the traces in ``folder`` (module doc of
    :mod:`solver.evaluation.shape_calibration`)."""
    prices = load_trace(folder / SPOTLAKE_DAILY, clouds=["aws"])
    availability = [t for path in sorted((folder / ONE_NODE).glob("*/*.json"))
                    for t in load_trace(path)]
    counts = [(t.times, t.available) for path in sorted((folder / SIXTEEN_NODE).glob("*/*.json"))
              for t in load_trace(path)]
    counts += [group_sizes(folder / name) for name in BAMBOO_GROUPS]
    return calibrate(prices, set(ON_DEMAND_USD_PER_HOUR), availability, counts)


def group_sizes(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A Bamboo spot group's size over time (seconds, nodes) from its ``time_ms,event,node``
    rows of ``add`` and ``remove`` events; events at one time count once all applied."""
    times, steps = [], []
    for line, row in enumerate(csv.reader(read_text(path).splitlines()), start=1):
        if len(row) != 3 or row[1] not in ("add", "remove"):
            raise TraceFormatError(path, f"line {line}", "event", ",".join(row),
                                   "time_ms,add|remove,node")
        try:
            times.append(float(row[0]) / 1000.0)
        except ValueError:
            raise TraceFormatError(path, f"line {line}", "time_ms", row[0],
                                   "a number of milliseconds") from None
        steps.append(1 if row[1] == "add" else -1)
    at, last = np.unique(np.array(times)[::-1], return_index=True)
    sizes = np.cumsum(steps)[len(steps) - 1 - last]
    return at, sizes


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else default_traces_dir()
    calibration = calibrate_from(folder)
    print("CALIBRATION = ShapeCalibration(")
    for name, value in vars(calibration).items():
        shown = tuple(round(v, 3) for v in value) if isinstance(value, tuple) \
            else round(value, 3)
        print(f"    {name}={shown},")
    print(")")


if __name__ == "__main__":
    main()
