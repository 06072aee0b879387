"""The README's Kafka walkthrough, run as written against the session broker: each command of
its first block in order (the broker is the fixture's, the live feed is left out), with each
step's visible result checked."""

from __future__ import annotations

import json
import re
import time
import urllib.request

import pytest

from tests.kafka.walkthrough import Walkthrough, walkthrough
from tests.traces_dir import REPO_ROOT, needs_traces

pytestmark = [pytest.mark.kafka, pytest.mark.slow, needs_traces]

FINAL = {"finished", "missed", "cancelled", "failed", "rejected"}


@pytest.fixture
def walk(pipelines, tmp_path):
    steps = Walkthrough(pipelines(()), tmp_path)
    yield steps
    steps.stop()


def test_the_readme_kafka_walkthrough_works_as_written(walk):
    demo = json.loads((REPO_ROOT / "examples" / "demo-jobs.json").read_text())
    demo_ids = {job["id"] for job in demo}
    outputs: dict[str, str] = {}
    for words, background, into in walkthrough():
        step = " ".join(words[1:3])
        if words[1:] == ["dev", "kafka", "--port", "9092"] or words[1:3] == ["feed", "aws"]:
            continue  # the fixture's broker; no live prices in a test
        if words[0] == "export":  # the snapshot key: the pipeline's workers have theirs
            assert words[1].partition("=")[0] in walk.env, words
            continue
        if background:
            walk.start(words)
            if words[1] == "worker":
                walk.wait_in_log(step, "Worker ready")
            continue
        if words[1:] == ["jobs", "--all"]:  # the replay is in; wait for its decisions
            deadline = time.monotonic() + 600
            while not all(walk.jobs().get(j, {}).get("state") in FINAL for j in demo_ids):
                assert time.monotonic() < deadline, walk.jobs()
                time.sleep(3)
        done = walk.run(words)
        if into is not None:
            (walk.cwd / into).write_text(done.stdout)
        expected = 1 if words[1:3] == ["submit", "examples/gcp-job.json"] else 0
        assert done.returncode == expected, f"{' '.join(words)}:\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr, done.stderr
        outputs[" ".join(words[1:3])] = done.stdout

    # submit answers for each job: the demo jobs queued until their release's epoch
    answer = outputs["submit examples/demo-jobs.json"]
    for job_id in demo_ids:
        assert re.search(rf"^{job_id}: queued: decided from the epoch at or after 2023-03",
                         answer, re.MULTILINE), answer
    # the rejected job and its reason: in submit's answer, in `jobs` and in `dead-letters`
    rejected = outputs["submit examples/gcp-job.json"]
    assert re.search(r"^gemma-2b-sft: rejected: allowed_markets=\['gcp/.*expected markets of "
                     "the catalogue", rejected, re.MULTILINE), rejected
    assert "0 accepted or queued, 1 rejected" in rejected
    assert "cancelled eval-sweep at 2023-03-08 12:00:00 UTC (--at)" in outputs["cancel eval-sweep"]
    assert "(20 jobs)" in outputs["replay --bootstrap-servers"]

    jobs = walk.jobs()
    assert jobs["gemma-2b-sft"]["state"] == "rejected"
    assert "expected markets of the catalogue" in jobs["gemma-2b-sft"]["detail"]
    assert jobs["eval-sweep"]["state"] == "cancelled"
    for job_id in demo_ids - {"eval-sweep"}:  # every other demo job was decided to the end
        assert jobs[job_id]["state"] in {"finished", "missed"}, jobs[job_id]
        assert jobs[job_id]["first_epoch"] is not None and jobs[job_id]["cost_usd"] > 0
    assert len([j for j in jobs if j.startswith("job-")]) == 20
    table = outputs["jobs --all"]
    assert "gemma-2b-sft" in table and "rejected" in table and "cancelled" in table
    assert re.search(r"^job-\S+ +(finished|missed) .*\b(met|missed)\b.*\b(met|missed)\s*$",
                     table, re.MULTILINE), table  # each deadline, met or missed, on the row
    history = outputs["jobs eval-sweep"]
    assert history.startswith("eval-sweep: cancelled") and "release (cancelled)" in history
    letters = outputs["dead-letters --summary"]
    assert "allowed_markets" in letters and "expected markets of the catalogue" in letters
    status = outputs["status"]
    assert "workers alive: 1 (spotsched-worker-" in status
    assert re.search(r"last epoch closed: 2023-", status), status
    assert "release" in outputs["decisions"] and "risk-aware" in outputs["decisions"]
    assert "planner" in outputs["decisions"]
    with urllib.request.urlopen(f"http://127.0.0.1:{walk.metrics_port}/metrics") as answer:
        metrics = answer.read().decode()
    assert 'spotsched_build_info{component="worker"' in metrics and "_created" not in metrics

    # the connectors apply the decisions: the log prints them, the sim on the replay's market
    walk.wait_in_log("connector log", "job=llama-8b-sft")
    sim = walk.wait_in_log("connector sim", "applied llama-8b-sft")
    assert "dead letter" not in sim and "error:" not in sim, sim[-3000:]
    _what_the_walkthrough_does_not_show(walk, [w for w, _, _ in walkthrough()])


def _what_the_walkthrough_does_not_show(walk: Walkthrough, commands: list[list[str]]) -> None:
    """A second replay, a sim without the trace, a connector reset, an unknown job."""
    replay = next(w for w in commands if w[1] == "replay")
    again = walk.run(replay)
    assert again.returncode == 2 and "already holds ticks up to 2023-" in again.stderr, again

    group = f"{walk.env['SPOTSCHED_APP_ID']}-no-trace"
    lost = walk.run(["spotsched", "connector", "sim", "--group", group], timeout=300)
    assert lost.returncode == 2, lost.stdout + lost.stderr
    assert "--trace FILE" in lost.stderr and "Traceback" not in lost.stderr
    status = walk.run(["spotsched", "status"]).stdout
    assert not [line for line in status.splitlines()  # nothing committed: no lag to show
                if group in line and "decisions" in line], status

    sim = next(w for w in commands if w[1:3] == ["connector", "sim"])
    busy = walk.run([*sim, "--reset"])
    assert busy.returncode == 2 and "live member" in busy.stderr, busy.stderr
    applied = walk.log("connector sim").count("applied ")
    process, _ = walk.background.pop("connector sim")
    process.terminate()
    process.wait(timeout=60)
    walk.start([*sim, "--reset"])  # every decision applied again, from the first
    assert "reset to the beginning" in walk.wait_in_log("connector sim", "applied ")
    deadline = time.monotonic() + 300
    while walk.log("connector sim").count("applied ") < applied:
        assert time.monotonic() < deadline, walk.log("connector sim")[-3000:]
        time.sleep(1)
    assert "dead letter" not in walk.log("connector sim")

    unknown = walk.run(["spotsched", "cancel", "no-such-job"])
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("error: job 'no-such-job': never submitted")
    assert unknown.stdout == ""
