"""Snapshots written by a stranger to the snapshot topics: each one is refused in one line —
unsigned, or signed with the workers' key by a writer gone rogue, or restored by a worker told
to run without a key — and none runs a command, reads a file, takes more memory than the caps
allow, or stops the worker: its stages fall back to the snapshot before, or to the log."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import os
import pickle
import struct
import subprocess
import sys
import tracemalloc
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from aiokafka import ConsumerRecord
from numpy._core.numeric import _frombuffer
from prometheus_client import CollectorRegistry

from solver.policies import PolicySpec
from solver.policies.selection import PolicySelection
from streams.contract.events import JobSubmitted
from streams.kafka.state import Manifest
from streams.metrics import PipelineMetrics
from streams.pipeline.declaration import PIPELINE, PipelineConfig
from streams.pipeline.snapshot import (
    MAGIC,
    STATE_VERSION,
    UNSIGNED,
    SnapshotKeys,
    SnapshotRefused,
    pickle_state,
    restore,
    seal,
)
from streams.pipeline.written import Written
from streams.runners.recovery import PartitionStages
from streams.settings import Settings

KEY = b"k" * 32
SIGNED = SnapshotKeys((KEY,))
MAX_BYTES = 4 * 1024 * 1024
WHERE = {"stage": "scheduler", "partition": 0, "settings": "digest"}


class Call:
    """Unpickles as ``func(*args)`` (then ``state`` set on what it made, if given)."""

    def __init__(self, func, *args, state=None) -> None:
        self.func, self.args, self.state = func, args, state

    def __call__(self, *args):  # so that a Call may stand for the callable of another
        raise AssertionError("built, not called")

    def __reduce__(self):
        return (self.func, self.args) if self.state is None else (
            self.func, self.args, self.state)


def code_execution(marker: Path) -> bytes:
    """A pydantic model's ``parse_raw`` (reached with ``getattr`` on the class) unpickles a
    command; a policy selection's constructor calls it with the keywords that make it."""
    inner = pickle.dumps(Call(os.system, f"touch {marker}"))
    parse_raw = Call(getattr, JobSubmitted, "parse_raw")
    return pickle.dumps(Call(PolicySelection, parse_raw, "hedge", 4.0, 0.1, math.inf, 0,
                             [inner], "risk-aware", None,
                             {"proto": "pickle", "allow_pickle": True}), protocol=5)


def file_read(path: str) -> bytes:
    return pickle.dumps(Call(Call(getattr, JobSubmitted, "parse_file"), path), protocol=5)


def nested_tuple_key(depth: int) -> bytes:
    """``{((((),),),...): None}``: hashing the key recurses ``depth`` deep in C."""
    return b"\x80\x05}" + b")" + b"\x85" * depth + b"Ns."


def shared_tuples(levels: int) -> bytes:
    """``{t: None}`` where each level of ``t`` is ``(t', t')``: 2**levels items to hash."""
    made = b"\x80\x05})"
    for level in range(levels):
        made += b"\x94j" + struct.pack("<I", level) + b"\x86"
    return made + b"Ns."


def out_of_bounds_dtype() -> bytes:
    """An array of a dtype whose field lies past its item."""
    crafted = Call(np.dtype, "V8", False, True,
                   state=(3, "|", None, ("a",), {"a": (np.dtype("<f8"), 1 << 20)}, 8, 1, 16))
    return pickle.dumps(Call(_frombuffer, b"\0" * 8, crafted, (1,), "C"), protocol=5)


def sealed(pickled: bytes, keys: SnapshotKeys = UNSIGNED, **fields) -> bytes:
    return seal(pickled, stage="scheduler", partition=0, offset=fields.pop("offset", 10),
                sequence=fields.pop("sequence", 1), settings="digest", taken=1.0, keys=keys)


def with_body(body: bytes, keys: SnapshotKeys = UNSIGNED, raw: bytes | None = None,
              mac: bytes | None = None, **changes) -> bytes:
    """A snapshot of a compressed ``body`` as it is, its header ``raw`` or changed by
    ``changes``, signed with ``keys`` unless given its ``mac``."""
    fields = {"bytes": len(body), "format": 2, "offset": 10, "partition": 0, "sequence": 1,
              "settings": "digest", "sha256": hashlib.sha256(body).hexdigest(),
              "stage": "scheduler", "state_version": STATE_VERSION, "taken": 1.0,
              **changes}
    header = raw if raw is not None else json.dumps(fields).encode()
    token = mac if mac is not None else keys.sign(header + b"\n" + body).encode()
    return MAGIC + token + b" " + header + b"\n" + body


def refused(blob: bytes, keys: SnapshotKeys = UNSIGNED, max_bytes: int = MAX_BYTES,
            **expected) -> str:
    with pytest.raises(SnapshotRefused) as refusal:
        restore(blob, environment={}, keys=keys, max_bytes=max_bytes, **{**WHERE, **expected})
    line = str(refusal.value)
    assert line.isprintable(), line  # one line, no control characters
    return line


ATTACKS = {
    "code execution": lambda tmp: code_execution(tmp / "ran"),
    "file read": lambda tmp: file_read(str(tmp / "secret.json")),
    "endless file": lambda tmp: file_read("/dev/zero"),
    "1.5 GiB bytearray": lambda tmp: pickle.dumps(Call(bytearray, 1536 * 2**20), protocol=5),
    "out-of-bounds dtype": lambda tmp: out_of_bounds_dtype(),
    "nested tuple key": lambda tmp: nested_tuple_key(200_000),
    "shared tuples": lambda tmp: shared_tuples(64),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_an_attack_is_refused_unrun_with_or_without_a_key(attack, tmp_path):
    (tmp_path / "secret.json").write_text('{"aws_secret": "CANARY-1234"}')
    pickled = ATTACKS[attack](tmp_path)
    tracemalloc.start()
    try:
        # Unsigned, to a worker with a key: refused by its MAC before anything is read.
        assert "unsigned, and this worker has a snapshot key" in refused(sealed(pickled), SIGNED)
        # Signed with the key, or to a worker told to run without one: refused all the same.
        for keys in (SIGNED, UNSIGNED):
            line = refused(sealed(pickled, keys), keys)
            assert line.startswith("snapshot of scheduler[0] at offset 10: cannot be read by "
                                   "this worker ("), line
            assert "CANARY" not in line
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024
    assert not (tmp_path / "ran").exists()


def test_what_each_attack_is_refused_for():
    reasons = {
        "code execution": "it names solver.policies.selection.PolicySelection, which is not "
                          "among the globals",
        "file read": "it names builtins.getattr, which is not among the globals",
        "1.5 GiB bytearray": "it names builtins.bytearray, which is not among the globals",
        "out-of-bounds dtype": "it names numpy._core.numeric._frombuffer, which is not among",
        "nested tuple key": "tuples nested 33 deep (at most 32)",
        "shared tuples": "a tuple of 131,071 items with its nested ones (at most 100,000)",
    }
    for attack, reason in reasons.items():
        assert reason in refused(sealed(ATTACKS[attack](Path("/nonexistent")))), attack


def test_a_body_that_inflates_past_the_cap_is_refused_within_it():
    squeezer = zlib.compressobj(9)
    bomb = b"".join(squeezer.compress(bytes(1 << 20)) for _ in range(64)) + squeezer.flush()
    assert len(bomb) < 100_000
    tracemalloc.start()
    try:
        line = refused(with_body(bomb, SIGNED), SIGNED)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert line == ("snapshot of scheduler[0] at offset 10: inflates past 4,194,304 bytes, the "
                    "most a snapshot may (SPOTSCHED_SNAPSHOT_MAX_BYTES), or is cut short")
    assert peak < 3 * MAX_BYTES  # the inflated bytes, and zlib's buffer as it grows
    # Within the cap, what a stage's state is restores.
    state = {"jobs": [1.5, "a"], "arrays": np.arange(6.0).reshape(2, 3)}
    _, restored = restore(sealed(pickle_state(state, {}), SIGNED), environment={}, keys=SIGNED,
                          max_bytes=MAX_BYTES, **WHERE)
    assert restored["jobs"] == [1.5, "a"] and (restored["arrays"] == state["arrays"]).all()
    refused(sealed(pickle_state(state, {}), SIGNED), SIGNED, max_bytes=100)


BODY = zlib.compress(pickle.dumps({}, protocol=5))


@pytest.mark.parametrize(("raw", "expected"), [
    (b'{"offset": "x"}', "field 'offset' = \"x\": expected an integer"),
    (b'{"offset": null}', "field 'offset' = null: expected an integer"),
    (b'{"offset": 1e400}', "field 'offset' = Infinity: expected an integer"),
    (b'{"offset": 10.0}', "field 'offset' = 10.0: expected an integer"),
    (b'{"partition": true}', "field 'partition' = true: expected an integer"),
    (b'{"bytes": "42"}', "field 'bytes' = \"42\": expected an integer"),
    (b'{"sequence": -1}', "field 'sequence' = -1: expected an integer from 0"),
    (b'{"offset": 99999999999999999999}', "field 'offset' = 99999999999999999999"),
    (b'{"taken": NaN}', "field 'taken' = NaN: expected a finite number"),
    (b'{"stage": "sched\\u001b[2Juler"}', "field 'stage' = \"sched\\u001b[2Juler\": expected a "
                                          "string of up to 256 printable characters"),
    (b'{"sha256": "' + "é".encode() * 32 + b'"}', "field 'sha256'"),
    (b'{"extra": 1}', "unreadable (fields ["),
    (b"[" * 2000 + b"]" * 2000, "snapshot header: unreadable"),
])
def test_a_header_field_of_the_wrong_type_is_refused_even_signed(raw, expected):
    fields = json.loads(with_body(BODY)[len(MAGIC):].split(b"\n")[0].split(b" ", 1)[1])
    changed = raw if raw.startswith(b"[") else b"{" + b", ".join(
        [json.dumps({k: v}).encode()[1:-1] for k, v in fields.items()
         if k.encode() not in raw.split(b":")[0]] + [raw[1:-1]]) + b"}"
    blob = with_body(BODY, SIGNED, raw=changed)
    assert expected in refused(blob, SIGNED)
    assert expected in refused(blob, UNSIGNED)


def test_a_mac_that_is_not_64_hex_digits_is_refused_before_anything_else():
    for mac in ("é" * 64, "A" * 64, "0" * 63, "\x1b[2J" + "0" * 60, ""):
        line = refused(with_body(BODY, mac=mac.encode()), SIGNED)
        assert "its MAC" in line and "is not 64 hex digits or 'unsigned'" in line, line


def record(value: bytes, key: bytes = b"a", offset: int = 100) -> ConsumerRecord:
    return SimpleNamespace(topic="snapshots", partition=0, offset=offset, key=key,
                           value=value)  # type: ignore[return-value]


def manifest_wire(keys: SnapshotKeys = SIGNED, **changes) -> bytes:
    fields = {"slot": "a", "offset": 10, "sequence": 3, "chunks": [1, 2], "bytes": 600_000,
              "taken": 1.0, **changes}
    raw = json.dumps(fields, sort_keys=True).encode()
    return keys.sign(b"snapshots[0]\n" + raw).encode() + b" " + raw


def manifest_of(value: bytes, keys: SnapshotKeys = SIGNED, key: bytes = b"a") -> Manifest:
    return Manifest.from_record(record(value, key), keys, max_chunks=8, max_bytes=MAX_BYTES)


def test_a_manifest_is_read_only_signed_and_well_formed():
    genuine = Manifest("a", 10, 3, (1, 2), 600_000, 1.0)
    assert manifest_of(genuine.to_wire("snapshots", 0, SIGNED)) == Manifest(
        "a", 10, 3, (1, 2), 600_000, 1.0, at=100)
    wire = genuine.to_wire("snapshots", 0, SIGNED)
    for value, expected in (
            (wire.replace(b'"offset": 10', b'"offset": 11'), "its MAC matches none"),
            (genuine.to_wire("snapshots", 1, SIGNED), "its MAC matches none"),  # moved
            (genuine.to_wire("snapshots", 0, UNSIGNED), "unsigned, and this worker has"),
            (b"\xff" * 64 + wire[64:], "is not 64 hex digits"),
            (manifest_wire(offset="x"), "field 'offset' = \"x\""),
            (manifest_wire(offset=None), "field 'offset' = null"),
            (manifest_wire(bytes="600000"), "field 'bytes' = \"600000\""),
            (manifest_wire(chunks=[]), "field 'chunks' = []"),
            (manifest_wire(chunks=[[[[1]]]]), "field 'chunks'"),
            (manifest_wire(chunks=[2, 1]), "chunks not in increasing order"),
            (manifest_wire(chunks=[1, 200]), "chunks not in increasing order before the "
                                             "manifest"),
            (manifest_wire(chunks=list(range(9))), "9 chunks, more than 8"),
            (manifest_wire(chunks=[1, 50]), "chunks spread over 50 records"),
            (manifest_wire(bytes=0), "0 bytes in 2 chunks"),
            (manifest_wire(bytes=2**40), "bytes in 2 chunks"),
            (manifest_wire(slot="b"), "slot 'b' under key b'a'"),
            (b"", "is not 64 hex digits")):
        with pytest.raises(SnapshotRefused, match=None) as refusal:
            manifest_of(value)
        assert expected in str(refusal.value), (value, str(refusal.value))
        assert str(refusal.value).isprintable()


# -- the recovery layer -------------------------------------------------------------------

class HostileState:
    """A snapshot topic holding ``snapshots`` (manifest, then the blob or what reading it
    raises), and an empty input partition."""

    def __init__(self, snapshots: list[tuple[Manifest, bytes | BaseException]]) -> None:
        self.snapshots = snapshots
        self.read: list[int] = []

    async def manifests(self, topic: str, partition: int) -> list[Manifest]:
        return [manifest for manifest, _ in self.snapshots]

    async def read_snapshot(self, topic: str, partition: int, manifest: Manifest) -> bytes:
        self.read.append(manifest.sequence)
        found = dict(self.snapshots)[manifest]
        if isinstance(found, BaseException):
            raise found
        return found

    async def log_start(self, topic: str, partition: int) -> int:
        return 0

    async def read_log(self, topic: str, partition: int, start: int, end: int
                       ) -> AsyncIterator[list[ConsumerRecord]]:
        for _ in ():
            yield []


def stages_on(state: HostileState, **settings: object) -> PartitionStages:
    config = PipelineConfig((), 3600.0, PolicySpec("greedy"))
    spec = next(spec for spec in PIPELINE if spec.name == "coordinator")
    return PartitionStages(
        spec, Settings(**{"snapshot_key": KEY.decode(), "snapshot_max_bytes": MAX_BYTES,
                          **settings}),
        config, state, Written(), {"config": config},  # type: ignore[arg-type]
        PipelineMetrics(CollectorRegistry(), markets=[], topics=[], slot_seconds=3600.0,
                        started=0.0).recovery)


def coordinator_snapshot(stages: PartitionStages, offset: int, sequence: int,
                         keys: SnapshotKeys = SIGNED, pickled: bytes | None = None) -> bytes:
    state = pickle_state(stages.make_stage(), stages.environment) if pickled is None else pickled
    return seal(state, stage="coordinator", partition=0, offset=offset, sequence=sequence,
                settings=stages.fingerprint, taken=1.0, keys=keys)


def slot(sequence: int, offset: int) -> Manifest:
    return Manifest("ab"[sequence % 2], offset, sequence, (sequence,), 1, 1.0, at=sequence)


def test_whatever_reading_snapshots_raises_the_stage_falls_back_to_the_log(tmp_path, caplog):
    marker = tmp_path / "ran"
    probe = stages_on(HostileState([]))
    hostile = {
        "unreadable (MemoryError: )": MemoryError(),
        "unreadable (RecursionError: maximum recursion depth exceeded)": RecursionError(
            "maximum recursion depth exceeded"),
        "unreadable (TypeError: a chunk of None)": TypeError("a chunk of None"),
        "it names solver.policies.selection.PolicySelection": coordinator_snapshot(
            probe, 90, 9, pickled=code_execution(marker)),
        "tuples nested 33 deep": coordinator_snapshot(probe, 90, 9,
                                                      pickled=nested_tuple_key(200_000)),
        "it names numpy._core.numeric._\\n\\x1b[2Juffer": coordinator_snapshot(
            probe, 90, 9, pickled=out_of_bounds_dtype().replace(
                b"\x8c\x0b_frombuffer", b"\x8c\x0b_\n\x1b[2Juffer")),
        "unsigned, and this worker has a snapshot key": coordinator_snapshot(
            probe, 90, 9, UNSIGNED),
    }
    for reason, found in hostile.items():
        stages = stages_on(HostileState([(slot(9, 90), found), (slot(8, 80), found)]))
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            asyncio.run(stages.recover(0, 0))
        assert stages.ready(0, 0) and stages._held[0].readable is None  # from the log
        lines = [r.getMessage() for r in caplog.records if "snapshot refused" in r.getMessage()]
        assert len(lines) == 2 and all(line.isprintable() for line in lines), lines
        assert reason in lines[0], lines
    assert not marker.exists()


def test_the_snapshot_before_the_newest_is_restored_and_none_older():
    probe = stages_on(HostileState([]))
    newest, before = slot(8, 80), slot(7, 70)
    state = HostileState([(newest, b"torn"), (before, coordinator_snapshot(probe, 70, 7))])
    stages = stages_on(state)
    asyncio.run(stages.recover(0, 0))
    assert state.read == [8, 7] and stages._held[0].next == 70  # the one before, restored
    # An older signed snapshot appended again (its chunks and manifest): the worker knows of
    # number 8, so number 3 is refused, and so is one whose manifest says another number than
    # its header.
    for manifests in ([(slot(3, 30), coordinator_snapshot(probe, 30, 3))],
                      [(slot(9, 90), coordinator_snapshot(probe, 30, 3))]):
        state.snapshots, state.read = manifests, []
        stages._held.pop(0)
        asyncio.run(stages.recover(0, 0))
        assert stages._held[0].next == 0 and stages._held[0].readable is None  # the log
    assert state.read == [9]  # number 3 was refused before it was read


def test_a_worker_refuses_to_start_without_a_key_unless_told(tmp_path):
    catalogue = tmp_path / "markets.json"
    catalogue.write_text('{"aws/r/z/t": 3.0}')
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SPOTSCHED_")},
           "SPOTSCHED_BOOTSTRAP_SERVERS": "127.0.0.1:1", "SPOTSCHED_BROKER_TIMEOUT_SECONDS": "1"}
    args = [sys.executable, "-m", "streams", "worker", "--markets-file", str(catalogue),
            "--data-dir", str(tmp_path)]
    without = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert without.returncode == 2 and without.stdout + without.stderr == (
        "error: snapshot_key (SPOTSCHED_SNAPSHOT_KEY) is not set: a worker signs its snapshots "
        "and restores only signed ones; set it to the same secret on every worker (openssl "
        "rand -hex 32), or run without one with --insecure-unsigned-snapshots "
        "(SPOTSCHED_INSECURE_UNSIGNED_SNAPSHOTS=true), which lets whoever can write the "
        "snapshot topics set the stages' state\n")
    told = subprocess.run([*args, "--insecure-unsigned-snapshots"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert "SNAPSHOT_KEY" not in told.stderr  # on to the broker, which is not there
    assert told.stderr.splitlines()[-1].startswith("error: creating topics on 127.0.0.1:1")
