"""The share of the spot their boundaries show that the slots of each evaluated market keep,
per window: the figures :data:`~solver.policies.routing.KEPT_SHARE` was placed between.

    python bench/bench_kept_shares.py [--windows 10]

Prints, per case, the least and the largest share of a window (one instance, every market of
the window pooled; :func:`~solver.forecast.keep.kept_share`): the market shapes of both seed
halves at each zone count, and the public traces (``SPOTSCHED_TRACES_DIR``, default
``../shared/traces``) as ``spotsched evaluate`` slots them.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from results import SIX_ZONES, SIXTEEN_NODES, TUNING

from solver.evaluation.scenarios import (
    SCARCE,
    Episode,
    FineTuneSpec,
    cant_be_late_cases,
    fine_tune_case,
    multi_region_cases,
    shapes_cases,
)
from solver.evaluation.shapes import ShapesSpec
from solver.forecast.keep import kept_share
from solver.traces import load_trace


def shares(episodes: Sequence[Episode]) -> tuple[float, float]:
    """The least and the largest kept share of the episodes' windows."""
    kept = [kept_share(e.data.boundary_availability, e.data.availability, 1) for e in episodes]
    return min(kept), max(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", type=int, default=10)
    windows = parser.parse_args().windows
    rows: list[tuple[str, Sequence[Episode]]] = []
    for seeds in ("tune", "held-out"):
        for zones in (3, 6, 13, 30):
            spec = ShapesSpec(seeds=seeds, windows=windows, zone_counts=(zones,),
                              workloads=("one",), checkpoints_gb=(0.0,))
            rows.append((f"shapes, {seeds} seeds, {zones} zones",
                         shapes_cases(0, spec)[0].episodes))
    six = load_trace(SIX_ZONES)
    rows.append(("multi-region, six zones", multi_region_cases(six, windows, 0)[0].episodes))
    rows.append(("cant-be-late, six zones", cant_be_late_cases(six, windows, 0)[0].episodes))
    rows.append(("fine-tune, six zones", fine_tune_case(six, windows, 0, FineTuneSpec()).episodes))
    one_node = [load_trace(path)[0] for path in TUNING]
    rows.append(("cant-be-late, one-node V100",
                 cant_be_late_cases(one_node, windows, 0)[0].episodes))
    sixteen = [load_trace(path)[0] for path in SIXTEEN_NODES]
    rows.append(("scarce, 16-node V100", fine_tune_case(sixteen, windows, 0, SCARCE).episodes))
    print(f"{'case':<36} {'least':>6} {'largest':>8}")
    for name, episodes in rows:
        least, largest = shares(episodes)
        print(f"{name:<36} {least:6.3f} {largest:8.3f}")


if __name__ == "__main__":
    main()
