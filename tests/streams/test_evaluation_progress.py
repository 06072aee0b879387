from rich.console import Console

from evaluation.live import clock
from evaluation.progress import CellProgress, TimeLeft
from solver.evaluation.cells import Cell
from solver.policies import PolicySpec

GREEDY = [Cell(0, "case", k, PolicySpec("greedy")) for k in range(4)]
CHC = [Cell(0, "case", k, PolicySpec("chc")) for k in range(4)]
SELECTION = Cell(0, "case", None, PolicySpec("policy-selection"))


def test_time_left_counts_each_cell_by_its_policy_and_windows():
    cells = [*GREEDY, *CHC, SELECTION]
    episodes = {c: 1 for c in cells} | {SELECTION: 4}
    left = TimeLeft(cells, 2, episodes)
    assert left.estimate() is None
    left.finished(GREEDY[0], 1.0)
    # Nothing measured for chc or policy selection yet: they count at greedy's pace.
    assert left.estimate() == (3 * 1.0 + 4 * 1.0 + 4 * 1.0) / 2
    left.finished(CHC[0], 10.0)
    left.finished(SELECTION, 40.0)
    assert left.estimate() == (3 * 1.0 + 3 * 10.0) / 2


def test_a_plain_line_per_finished_cell_when_not_on_a_terminal():
    console = Console(record=True, force_terminal=False, width=200)
    with CellProgress(console, GREEDY[:2], 1, {c: 1 for c in GREEDY[:2]}) as progress:
        progress.finished(GREEDY[1], 14.24)
        progress.finished(GREEDY[0], 2.0)
    assert console.export_text().splitlines() == [
        "[1/2] case w01 greedy 14.2 s, eta 0:00:14",
        "[2/2] case w00 greedy 2.0 s, eta 0:00:00",
    ]
    assert clock(3725.4) == "1:02:05"
