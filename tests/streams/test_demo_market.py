"""The README's Kafka demo: its market is one where spot pays, and its example jobs fall within
its trace."""

import re
import shlex

import pytest

from solver.evaluation.compare import compare_policies
from solver.market import build_market_data
from solver.traces import load_traces
from solver.traces.jobs_file import load_jobs
from solver.workload import generate_jobs
from tests.traces_dir import REPO_ROOT, needs_traces

pytestmark = needs_traces


def _demo_command(name: str) -> list[str]:
    """The README walkthrough's ``spotsched <name> ...`` line, as its words."""
    readme = (REPO_ROOT / "README.md").read_text()
    walkthrough = readme[readme.index("## Running on Kafka"):]
    line = re.search(rf"^spotsched {name} .*$", walkthrough, re.MULTILINE)
    assert line is not None, f"no 'spotsched {name}' line in the README's Kafka walkthrough"
    return shlex.split(line.group(0), comments=True)


def _demo_ticks():
    words = _demo_command("replay")
    trace = words[words.index("--trace") + 1]
    assert "--trace" in _demo_command("markets") and trace in _demo_command("markets")
    return load_traces([REPO_ROOT / trace])


def test_the_demo_jobs_fall_within_the_demo_trace():
    data = build_market_data(_demo_ticks(), 3600)
    jobs = load_jobs(REPO_ROOT / _demo_command("submit")[2].rstrip(";"))
    end = data.slot_start(data.n_slots)
    assert jobs
    for job in jobs:
        assert data.origin <= job.release < job.hard_deadline <= end, job.id


@pytest.mark.slow
def test_risk_aware_beats_on_demand_only_on_the_demo_market():
    words = _demo_command("replay")
    data = build_market_data(_demo_ticks(), 3600)
    jobs = generate_jobs(data, int(words[words.index("--n-jobs") + 1]))
    _, summaries = compare_policies(data, jobs, ["on-demand", "risk-aware"])
    on_demand, risk_aware = summaries
    assert risk_aware.total_utility > on_demand.total_utility
    assert risk_aware.cost_vs_on_demand is not None and risk_aware.cost_vs_on_demand < 1.0

