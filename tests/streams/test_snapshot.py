"""Snapshots of the stages: a stage restored from a snapshot taken anywhere in its log goes on
exactly like the stage that never stopped; what is not a snapshot of this version, these
settings and this partition, whole and intact, is refused in one line."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from solver.market import build_market_data
from solver.policies import PolicySpec
from solver.synthetic import synthetic_ticks
from streams.metrics import PipelineMetrics
from streams.pipeline.declaration import PIPELINE, PipelineConfig
from streams.pipeline.driver import Driver, Handling
from streams.pipeline.snapshot import (
    FORMAT,
    MAGIC,
    STATE_VERSION,
    UNSIGNED,
    SnapshotKeys,
    SnapshotRefused,
    pickle_state,
    read_header,
    restore,
    seal,
)
from streams.pipeline.stage import encoded
from streams.pipeline.written import Written
from streams.settings import Settings
from tests.streams.snapshot_runs import ONLINE, SLOT, SPEC, STAGES, RunsACommand, run

REPO = Path(__file__).resolve().parents[2]
MAX_BYTES = Settings.model_fields["snapshot_max_bytes"].default


def digest(config: PipelineConfig, stage: str = "scheduler") -> str:
    """The settings digest of a stage's snapshots."""
    return config.fingerprint(STAGES[stage].depends_on)


def made(handling: Handling) -> tuple:
    """What a message made a stage do, comparable across runs."""
    return ([encoded(e) for e in handling.outputs],
            [(r.message.offset, str(r.error)) for r in handling.rejections],
            [(f.stage, str(f.error)) for f in handling.faults], len(handling.decided))


def snapshot(stage: object, name: str, partition: int, offset: int,
             config: PipelineConfig) -> bytes:
    pickled = pickle_state(stage, {"config": config, "written": stage.written})
    return seal(pickled, stage=name, partition=partition, offset=offset, sequence=0,
                settings=digest(config, name), taken=1.0)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ONLINE)
def test_a_stage_restored_anywhere_in_its_log_goes_on_like_the_one_that_never_stopped(policy):
    config = PipelineConfig(build_market_data(synthetic_ticks(SPEC), SLOT).markets, SLOT,
                            PolicySpec(policy))
    for (name, partition), log in run(config).items():
        for cut in (1, len(log) // 3, 2 * len(log) // 3):
            driver = Driver(STAGES[name].make(config, Written()))
            for message, _ in log[:cut]:
                driver.process(message)
            blob = snapshot(driver.stage, name, partition, cut, config)
            header, stage = restore(blob, stage=name, partition=partition,
                                    settings=digest(config, name),
                                    environment={"config": config, "written": Written()},
                                    max_bytes=MAX_BYTES)
            assert header.offset == cut
            restored = Driver(stage)
            after = [made(restored.process(message)) for message, _ in log[cut:]]
            assert after == [made(handling) for _, handling in log[cut:]], (name, cut)


def test_the_solve_time_histogram_is_the_restoring_workers_own():
    config_of = {}
    for n in range(2):
        metrics = PipelineMetrics(CollectorRegistry(), markets=[], topics=[], slot_seconds=SLOT,
                                  started=0.0)
        markets = build_market_data(synthetic_ticks(SPEC), SLOT).markets
        config_of[n] = (PipelineConfig(markets, SLOT, PolicySpec("greedy"),
                                       timed=metrics.timed), metrics)
    (first, first_metrics), (second, second_metrics) = config_of[0], config_of[1]
    log = run(first, job_partitions=1)["scheduler", 0]
    driver = Driver(PIPELINE[2].make(first, Written()))
    for message, _ in log[: len(log) // 2]:
        driver.process(message)
    environment = {"config": first, "solve_seconds": first_metrics.solve_seconds,
                   "written": driver.stage.written}
    blob = seal(pickle_state(driver.stage, environment), stage="scheduler", partition=0,
                offset=len(log) // 2, sequence=0, settings=digest(first), taken=1.0)
    _, stage = restore(blob, stage="scheduler", partition=0, settings=digest(second),
                       environment={"config": second, "written": Written(),
                                    "solve_seconds": second_metrics.solve_seconds},
                       max_bytes=MAX_BYTES)
    assert stage.engine.policy._seconds is second_metrics.solve_seconds
    assert stage.policy_factory.__self__ is second


@pytest.fixture(scope="module")
def taken():
    config = PipelineConfig(build_market_data(synthetic_ticks(SPEC), SLOT).markets, SLOT,
                            PolicySpec("greedy"))
    log = run(config, job_partitions=1)["scheduler", 0]
    driver = Driver(PIPELINE[2].make(config, Written()))
    for message, _ in log[:100]:
        driver.process(message)
    return config, snapshot(driver.stage, "scheduler", 0, 100, config)


def refusal(blob: bytes, config: PipelineConfig, keys: SnapshotKeys = UNSIGNED,
            **expected) -> str:
    where = {"stage": "scheduler", "partition": 0, "settings": digest(config), **expected}
    with pytest.raises(SnapshotRefused) as refused:
        restore(blob, environment={"config": config, "written": Written()}, keys=keys,
                max_bytes=MAX_BYTES, **where)
    text = str(refused.value)
    assert "\n" not in text
    return text


def with_header(blob: bytes, **changes) -> bytes:
    header, body = blob[len(MAGIC):].split(b"\n", 1)
    mac, fields = header.split(b" ", 1)
    changed = json.dumps({**json.loads(fields), **changes}).encode()
    return MAGIC + mac + b" " + changed + b"\n" + body


def test_a_snapshot_that_is_not_of_this_version_partition_or_settings_is_refused(taken):
    config, blob = taken
    assert read_header(blob)[0].format == FORMAT
    assert "not a spotsched snapshot" in refusal(b"PK\x03\x04", config)
    assert "snapshot header: unreadable (JSONDecodeError" in refusal(
        MAGIC + b"unsigned {not json\n", config)
    assert "unreadable snapshot header (no end of line)" in refusal(
        MAGIC + b"unsigned {" + b" " * 5000, config)
    assert refusal(MAGIC + b'{"format": 1}\n', config) == (
        f"snapshot of an earlier format (1): this worker reads format {FORMAT}")
    assert refusal(with_header(blob, format=FORMAT + 1), config) == (
        f"snapshot format {FORMAT + 1}: this worker reads format {FORMAT}")
    assert refusal(with_header(blob, state_version=STATE_VERSION + 1), config).endswith(
        f"state version {STATE_VERSION + 1}; this worker reads state version {STATE_VERSION}")
    assert "expected one of scheduler[1]" in refusal(blob, config, partition=1)
    assert "expected one of market[0]" in refusal(blob, config, stage="market")
    other = replace(config, policy=PolicySpec("uniform-progress"))
    assert "taken with other settings" in refusal(blob, other, settings=digest(other))


def test_a_stage_refuses_snapshots_only_for_the_settings_its_state_depends_on(taken):
    config, _ = taken
    skewed = replace(config, max_future_skew=2 * config.max_future_skew)
    other_policy = replace(config, policy=PolicySpec("uniform-progress"))
    assert digest(skewed) == digest(config) != digest(other_policy)
    assert digest(other_policy, "market") == digest(config, "market") != digest(skewed, "market")
    assert len({digest(c, "coordinator") for c in (config, skewed, other_policy)}) == 1
    longer = replace(config, slot_seconds=2 * SLOT)
    assert all(digest(longer, s) != digest(config, s) for s in STAGES)


def test_a_corrupt_or_truncated_snapshot_is_refused_before_it_is_unpickled(taken):
    config, blob = taken
    flipped = bytearray(blob)
    flipped[-10] ^= 0x01
    assert refusal(bytes(flipped), config).startswith(
        "snapshot of scheduler[0] at offset 100: corrupt")
    assert refusal(blob[:-1], config).startswith(
        "snapshot of scheduler[0] at offset 100: truncated (")
    # A body whose digest matches but that does not unpickle (written by other code).
    garbage = seal(b"\x80\x05not a pickle", stage="scheduler", partition=0, offset=100,
                   sequence=0, settings=digest(config), taken=1.0)
    assert "cannot be read by this worker" in refusal(garbage, config)
    # One that refers to an object of its writer's environment this worker lacks.
    lacking = seal(pickle_state(config.catalogue, {"solve_seconds": config.catalogue}),
                   stage="scheduler", partition=0, offset=100, sequence=0,
                   settings=digest(config), taken=1.0)
    assert "it refers to 'solve_seconds', which this worker lacks" in refusal(lacking, config)


def test_shared_sets_stay_shared_and_are_written_in_order():
    shared = {"b", "a", "c"}
    state = {"x": shared, "y": shared, "frozen": frozenset({3, 1, 2}), "mixed": {1, "a"}}
    _, restored = restore(seal(pickle_state(state, {}), stage="s", partition=0, offset=0,
                               sequence=0, settings="", taken=0.0),
                          stage="s", partition=0, settings="", environment={},
                          max_bytes=MAX_BYTES)
    assert restored == state and restored["x"] is restored["y"]


SNAPSHOT_DIGEST = """
import hashlib, sys
from streams.pipeline.declaration import PIPELINE, PipelineConfig
from streams.pipeline.driver import Driver
from streams.pipeline.snapshot import pickle_state
from streams.pipeline.written import Written
from tests.streams.snapshot_runs import SLOT, SPEC, run
from solver.market import build_market_data
from solver.policies import PolicySpec
from solver.synthetic import synthetic_ticks
config = PipelineConfig(build_market_data(synthetic_ticks(SPEC), SLOT).markets, SLOT,
                        PolicySpec("risk-aware"))
for (name, partition), log in sorted(run(config).items()):
    driver = Driver({s.name: s for s in PIPELINE}[name].make(config, Written()))
    for message, _ in log:
        driver.process(message)
    environment = {"config": config, "written": driver.stage.written}
    digest = hashlib.sha256(pickle_state(driver.stage, environment)).hexdigest()
    print(name, partition, digest)
"""


@pytest.mark.slow
def test_the_snapshot_bytes_are_a_function_of_the_state_whatever_the_hash_seed():
    digests = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        done = subprocess.run([sys.executable, "-c", SNAPSHOT_DIGEST], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=600, check=True)
        digests.append(done.stdout)
    assert digests[0] == digests[1] and len(digests[0].splitlines()) == 4


KEY, OLD_KEY, OTHER_KEY = b"k" * 32, b"o" * 32, b"x" * 32


def sealed(pickled: bytes, config: PipelineConfig, keys: SnapshotKeys = UNSIGNED,
           offset: int = 100) -> bytes:
    return seal(pickled, stage="scheduler", partition=0, offset=offset, sequence=0,
                settings=digest(config), taken=1.0, keys=keys)


class ReachesForGlobals:
    """Unpickles as ``getattr(a function, "__globals__")``: the way out to any builtin."""

    def __reduce__(self):
        from solver.policies.registry import make_policy

        return getattr, (make_policy, "__globals__")


def test_a_snapshot_naming_a_global_no_state_is_made_of_is_refused_unrun(taken, tmp_path):
    config, _ = taken
    marker = tmp_path / "ran"
    for keys in (UNSIGNED, SnapshotKeys((KEY,))):  # signed too: the key is no licence
        command = sealed(pickle.dumps({"stage": RunsACommand(marker)}), config, keys)
        assert f"names {os.system.__module__}.system, which is not among the globals" in (
            refusal(command, config, keys))
    assert not marker.exists()
    line = refusal(sealed(pickle.dumps(ReachesForGlobals()), config), config)
    assert line.endswith("(UnpicklingError: it names builtins.getattr, which is not among the "
                         "globals a stage's state is made of "
                         "(streams.pipeline.snapshot_globals))")


def test_with_a_key_only_snapshots_signed_with_one_of_the_workers_keys_restore(taken):
    config, unsigned = taken
    pickled = pickle_state({"state": [1, 2]}, {"config": config})
    signed = sealed(pickled, config, SnapshotKeys((KEY,)))
    assert signed.split(b" ")[1] != b"unsigned" and unsigned.split(b" ")[1] == b"unsigned"
    where = {"stage": "scheduler", "partition": 0, "settings": digest(config),
             "environment": {"config": config}, "max_bytes": MAX_BYTES}
    # Signed with the first key; verified by any (the key before a change of key, too).
    assert restore(signed, keys=SnapshotKeys((KEY,)), **where)[1] == {"state": [1, 2]}
    old = sealed(pickled, config, SnapshotKeys((OLD_KEY,)))
    assert restore(old, keys=SnapshotKeys((KEY, OLD_KEY)), **where)[1] == {"state": [1, 2]}
    assert "its MAC matches none of this worker's snapshot keys: written with another key" in (
        refusal(signed, config, SnapshotKeys((OTHER_KEY,))))
    assert refusal(unsigned, config, SnapshotKeys((KEY,))).startswith(
        "snapshot of scheduler[0]: unsigned, and this worker has a snapshot key")
    # The MAC covers the header: a signed snapshot moved to another offset is refused.
    moved = with_header(signed, offset=5)
    assert "its MAC matches none" in refusal(moved, config, SnapshotKeys((KEY,)))
