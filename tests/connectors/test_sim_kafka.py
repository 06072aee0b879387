"""The closed loop on a real broker: a scheduler worker decides, the sim connector runs the
decisions and reports progress, completions and lost spot back onto the topics."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time

import pytest

from solver.policies import make_policy
from solver.simulator import simulate
from solver.synthetic import SyntheticMarketSpec
from streams.contract import AvailabilityTick, JobFinished, JobProgress
from streams.kafka.clients import publish_replay
from streams.pipeline.trace_events import trace_events
from tests.connectors.helpers import SLOT, read_all
from tests.kafka.pipeline_harness import Pipeline
from tests.scenarios import synthetic

pytestmark = pytest.mark.kafka

SPEC = SyntheticMarketSpec(seed=4, n_markets=2, days=3)
N_JOBS = 5


def test_a_replay_runs_closed_loop_through_the_scheduler_and_the_sim(kafka_bootstrap, tmp_path):
    ticks, data, jobs = synthetic(SPEC.seed, SPEC.n_markets, SPEC.days, N_JOBS, slot=SLOT,
                                  workload_range=(4, 16))
    expected = simulate(data, jobs, make_policy("greedy"))
    completed = {r.job_id for r in expected.jobs if r.completion is not None}
    pipeline = Pipeline(kafka_bootstrap, tmp_path, tuple(t.market for t in ticks),
                        policy="greedy")
    worker = pipeline.start_worker()
    log = (tmp_path / "sim.log").open("wb")
    sim = subprocess.Popen(
        [sys.executable, "-m", "streams", "connector", "sim", "--seed", str(SPEC.seed),
         "--synthetic-markets", str(SPEC.n_markets), "--days", str(SPEC.days),
         "--data-dir", str(tmp_path / "sim"), "--group", f"{pipeline.app_id}-sim"],
        env=pipeline.env(), stdout=log, stderr=subprocess.STDOUT)
    try:
        pipeline.wait_until_joined(worker)
        asyncio.run(publish_replay(pipeline.settings, trace_events(ticks, jobs)))
        deadline = time.monotonic() + 120
        while True:
            reported = asyncio.run(read_all(pipeline.settings, pipeline.topics.job_events))
            finished = {e.job_id: e for e in reported if isinstance(e, JobFinished)}
            if set(finished) >= completed:
                break
            assert sim.poll() is None, (tmp_path / "sim.log").read_text()[-3000:]
            assert time.monotonic() < deadline, (
                f"finished {sorted(finished)} of {sorted(completed)}\n"
                + (tmp_path / "sim.log").read_text()[-3000:])
            time.sleep(1.0)
    finally:
        sim.send_signal(signal.SIGTERM)
        sim.wait(timeout=30)
        pipeline.stop_workers()
    assert sim.returncode == 0
    assert set(finished) == completed
    hard = {j.id: j.hard_deadline for j in jobs}
    assert all(e.event_time.timestamp() <= hard[e.job_id] for e in finished.values())
    assert any(isinstance(e, JobProgress) for e in reported)
    lost = [e for e in asyncio.run(read_all(pipeline.settings, pipeline.topics.market_ticks))
            if isinstance(e, AvailabilityTick) and e.reason != "probe"]
    letters = pipeline.dead_letters()
    # The scheduler took every job report; the market stage had passed the slots that the
    # lost-spot reports describe, and set them aside as late.
    assert len(letters) == len(lost)
    assert all("late tick" in d.reason for d in letters)
