"""The README's Kafka walkthrough run twice in a row with the same data directory, the second
time on a fresh broker (as after restarting `spotsched dev kafka`, whose data is temporary):
the same app id, topics, jobs and connector groups, and the connectors' records left from the
first run. Both times `connector log` and `connector sim` apply every decision; the second
time each connector sets its old records aside, saying so.

The commands run are those of the README block that feed the connectors (the catalogue, the
worker, the jobs, the cancel, the replay and the two connectors); the commands that only read
the service are checked by ``test_walkthrough``."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from deploy.kafka.devkafka import KafkaBroker, fetch_jars, kafka_home
from tests.kafka.pipeline_harness import Pipeline
from tests.kafka.walkthrough import Walkthrough, walkthrough
from tests.traces_dir import needs_traces

pytestmark = [pytest.mark.kafka, pytest.mark.slow, needs_traces]

FEEDING = {"markets", "worker", "submit", "cancel", "replay", "connector"}
"""The README commands that make decisions or act on them."""


@pytest.fixture
def fresh_broker(tmp_path):
    """A broker of this test's own, started empty."""
    broker = KafkaBroker(fetch_jars(kafka_home()), tmp_path / "fresh-broker")
    broker.start()
    yield broker.bootstrap
    broker.stop()


def test_the_connectors_apply_every_decision_again_on_a_fresh_broker(
        kafka_bootstrap, fresh_broker, tmp_path):
    state = tmp_path / "state"  # the operator's ./.spotsched, kept from one broker to the next
    first = Pipeline(kafka_bootstrap, _folder(tmp_path / "first"), ())
    second = Pipeline(fresh_broker, _folder(tmp_path / "second"), ())
    second.topics, second.app_id = first.topics, first.app_id  # the defaults, both times
    for run, pipeline in enumerate((first, second)):
        walk = Walkthrough(pipeline, pipeline.workdir)
        walk.env["SPOTSCHED_DATA_DIR"] = str(state)
        try:
            _run_the_walkthrough(walk)
            keys = _every_decision_applied(walk, pipeline)
        finally:
            walk.stop()
        assert len(keys) > 100, len(keys)
        for name in ("connector log", "connector sim"):
            log = walk.log(name)
            assert "skipped: already applied" not in log, log[-3000:]
            assert "dead letter" not in log, log[-3000:]
            set_aside = re.findall(r"records not made on .* set aside: (.*)", log)
            assert len(set_aside) == run, log[-3000:]
            assert [line.count(" as ") for line in set_aside] == \
                [2 if name == "connector sim" else 1] * run  # the sim's journal too
    assert len(list(state.glob("*.set-aside-*[0-9]"))) == 3  # log's keys, sim's keys, journal


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


def _run_the_walkthrough(walk: Walkthrough) -> None:
    for words, background, into in walkthrough():
        if words[0] != "spotsched" or words[1] not in FEEDING:
            continue
        if background:
            walk.start(words)
            if words[1] == "worker":
                walk.wait_in_log(" ".join(words[1:3]), "Worker ready")
            continue
        done = walk.run(words)
        if into is not None:
            (walk.cwd / into).write_text(done.stdout)
        expected = 1 if words[1:3] == ["submit", "examples/gcp-job.json"] else 0
        assert done.returncode == expected, f"{' '.join(words)}:\n{done.stdout}\n{done.stderr}"


def _every_decision_applied(walk: Walkthrough, pipeline: Pipeline,
                            timeout: float = 900) -> set[str]:
    """Wait until the decisions stop coming and each connector has applied every one of
    them; the decisions' keys."""
    deadline = time.monotonic() + timeout
    keys: set[str] = set()
    while True:
        settled = keys
        keys = {d.idempotency_key for d in pipeline.decisions()}
        printed = set(re.findall(r" key=(\S+?:\d+:\d+)\b", walk.log("connector log")))
        simulated = set(re.findall(r"applied (\S+) \(", walk.log("connector sim")))
        if keys and keys == settled == printed == simulated:
            return keys
        for name, (process, _) in walk.background.items():
            assert process.poll() is None, f"{name} exited:\n{walk.log(name)[-3000:]}"
        assert time.monotonic() < deadline, (
            f"{len(keys)} decisions; log printed {len(printed & keys)}, sim applied "
            f"{len(simulated & keys)}\n{walk.log('connector log')[-2000:]}\n"
            f"{walk.log('connector sim')[-2000:]}")
        time.sleep(5)
