"""``submit`` of one job from flags and ``cancel`` of several jobs, or of every active one, on
a real broker (no worker: the jobs stay pending)."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from streams.contract import JobCancelled, JobSubmitted
from streams.kafka.topics import ensure_topics

pytestmark = pytest.mark.kafka

AT = "2029-12-02T00:00:00Z"


def test_one_job_from_flags_and_cancels_of_several_or_all(pipelines):
    pipeline = pipelines(())
    asyncio.run(ensure_topics(pipeline.settings))
    for job_id in ("a", "b", "c"):
        pipeline.spotsched("submit", "--id", job_id, "--workload", "3", "--deadline",
                           "2030-01-01T00:00:00Z", "--release", "2029-12-01T00:00:00Z",
                           "--instances", "2", "--no-wait")
    unknown = subprocess.run([sys.executable, "-m", "streams", "cancel", "a", "nope"],
                             env=pipeline.env(), capture_output=True, text=True, timeout=120)
    assert unknown.returncode == 2 and unknown.stdout == "", unknown
    assert unknown.stderr.startswith("error: job 'nope': never submitted"), unknown.stderr
    several = pipeline.spotsched("cancel", "a", "b", "--at", AT)
    assert several.splitlines() == [
        f"cancelled {j} at 2029-12-02 00:00:00 UTC (--at); it takes effect at the first epoch "
        "at or after that time" for j in ("a", "b")]
    every = pipeline.spotsched("cancel", "--all", "--at", AT)
    assert [line.split()[1] for line in every.splitlines()] == ["a", "b", "c"]

    events = pipeline.read(pipeline.topics.job_events)
    assert [e.job_id for e in events if isinstance(e, JobCancelled)] == ["a", "b", "a", "b", "c"]
    (first, *_) = [e for e in events if isinstance(e, JobSubmitted)]
    assert (first.job_id, first.workload, first.n_min, first.n_max) == ("a", 3.0, 2, 2)
    assert first.soft_deadline == first.hard_deadline
    assert first.soft_deadline.isoformat() == "2030-01-01T00:00:00+00:00"
