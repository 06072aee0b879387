"""Snapshots of a stage: its whole state as versioned, verified bytes, so that a worker taking
over a partition restores the newest one and replays only the log after it.

A snapshot is the stage object pickled whole — no per-field code, so whatever state a stage,
its engine, its forecasters or its policy hold is kept — behind a one-line header::

    spotsched-snapshot {"bytes": 4242, "format": 1, "offset": 12345, "partition": 2,
                        "settings": "9f3c…", "sha256": "…", "stage": "market",
                        "state_version": 1, "taken": 1767225600.0}
    <zlib-compressed pickle>

- ``offset``: the stage has taken its partition's messages up to ``offset - 1``;
- ``settings``: the digest of the settings the stage's state depends on
  (:meth:`~streams.pipeline.declaration.PipelineConfig.fingerprint`: the catalogue and the
  slot length, and the tick skew of the market stage, the policy of the scheduler): a worker
  with other ones refuses the snapshot;
- ``format`` (this layout) and ``state_version`` (the shape of the stages' state: bump
  :data:`STATE_VERSION` when a class whose instances a stage holds changes its attributes):
  a worker refuses a snapshot of another version;
- ``sha256`` of the compressed body: a torn or corrupted snapshot is refused before it is
  unpickled;
- ``mac``: the HMAC-SHA256, under the workers' snapshot key (:class:`SnapshotKeys`), of the
  header's other fields and the body; ``null`` when the writer had no key. A worker with a key
  refuses a snapshot without a MAC, or whose MAC none of its keys gives: only a holder of the
  key can make it restore one.

Objects of the worker's environment (the pipeline configuration, its metrics) are not pickled
but named, and the restoring worker supplies its own. Sets are written in sorted order, so
the bytes are a function of the state alone, whatever the interpreter's hash seed.

Unpickling resolves only the globals of :mod:`streams.pipeline.snapshot_globals` (the classes
the stages' state is made of); a snapshot naming any other is refused, so a snapshot cannot
run code of its writer's choosing even without a key (docs/operations.md, *Trust*).
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import pickle
import zlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from streams.pipeline.snapshot_globals import find_global

FORMAT = 1
"""The layout of a snapshot: header line, then the compressed pickle."""
STATE_VERSION = 3
"""The shape of the stages' state; a snapshot of another version is refused."""
MAGIC = b"spotsched-snapshot "
COMPRESSION_LEVEL = 1
"""zlib's fastest level: forecaster arrays barely compress, the rest compresses well at any
level (bench/bench_recovery.py prints sizes and times)."""
MAX_HEADER_BYTES = 4096


class SnapshotRefused(ValueError):
    """A snapshot this worker cannot use; the message says which and why, in one line."""


@dataclass(frozen=True, slots=True)
class SnapshotKeys:
    """The workers' snapshot keys: the first signs the snapshots written, any of them verifies
    one read (so a key can be replaced without refusing the snapshots signed with the one
    before). None: snapshots are written unsigned and read without authentication."""

    keys: tuple[bytes, ...] = ()

    def sign(self, signed: bytes) -> str | None:
        return hmac.new(self.keys[0], signed, hashlib.sha256).hexdigest() if self.keys else None

    def verify(self, mac: str | None, signed: bytes, what: str) -> None:
        """Nothing when ``mac`` is one of these keys' (or there are no keys); else
        :class:`SnapshotRefused`."""
        if not self.keys:
            return
        if mac is None:
            raise SnapshotRefused(f"{what}: unsigned, and this worker has a snapshot key: "
                                  "written by a worker without one, or not by a worker")
        if not any(hmac.compare_digest(hmac.new(key, signed, hashlib.sha256).hexdigest(),
                                       str(mac)) for key in self.keys):
            raise SnapshotRefused(f"{what}: its MAC matches none of this worker's snapshot "
                                  "keys: written with another key, or altered")


UNSIGNED = SnapshotKeys()
"""No key: snapshots written unsigned, read unauthenticated."""


@dataclass(frozen=True, slots=True)
class SnapshotHeader:
    """What a snapshot is: whose, up to which offset, under which settings, and its checks."""

    stage: str
    partition: int
    offset: int
    settings: str
    taken: float
    bytes: int
    sha256: str
    format: int = FORMAT
    state_version: int = STATE_VERSION
    mac: str | None = None

    def describe(self) -> str:
        return f"snapshot of {self.stage}[{self.partition}] at offset {self.offset:,}"


def signed(header: SnapshotHeader, body: bytes) -> bytes:
    """What a snapshot's MAC covers: its other header fields, canonically, and its body."""
    fields = asdict(header)
    del fields["mac"]
    return json.dumps(fields, sort_keys=True).encode() + b"\n" + body


def pickle_state(stage: object, environment: Mapping[str, object]) -> bytes:
    """The stage pickled, ``environment``'s objects by name. Call it between two messages,
    where the state is consistent; :func:`seal` may then run in another thread."""
    buffer = io.BytesIO()
    _Pickler(buffer, environment).dump(stage)
    return buffer.getvalue()


def seal(pickled: bytes, *, stage: str, partition: int, offset: int, settings: str,
         taken: float, keys: SnapshotKeys = UNSIGNED) -> bytes:
    """The snapshot of pickled state: header line, then the compressed body; signed with the
    first of ``keys``, if any."""
    body = zlib.compress(pickled, COMPRESSION_LEVEL)
    header = SnapshotHeader(stage, partition, offset, settings, taken, len(body),
                            hashlib.sha256(body).hexdigest())
    header = replace(header, mac=keys.sign(signed(header, body)))
    return MAGIC + json.dumps(asdict(header), sort_keys=True).encode() + b"\n" + body


def read_header(blob: bytes) -> SnapshotHeader:
    """The header of a snapshot; refused when it is not one of this format."""
    if not blob.startswith(MAGIC):
        raise SnapshotRefused("not a spotsched snapshot (no header)")
    end = blob.find(b"\n", 0, MAX_HEADER_BYTES)
    if end < 0:
        raise SnapshotRefused("unreadable snapshot header (no end of line)")
    try:
        fields = json.loads(blob[len(MAGIC):end])
        version = fields.get("format")
        if version != FORMAT:
            raise SnapshotRefused(f"snapshot format {version!r}: this worker reads format "
                                  f"{FORMAT}")
        return SnapshotHeader(**fields)
    except SnapshotRefused:
        raise
    except (ValueError, TypeError, AttributeError) as exc:
        raise SnapshotRefused(f"unreadable snapshot header ({exc})") from None


def restore(blob: bytes, *, stage: str, partition: int, settings: str,
            environment: Mapping[str, object], keys: SnapshotKeys = UNSIGNED
            ) -> tuple[SnapshotHeader, Any]:
    """The header and the stage of a snapshot of ``stage``'s ``partition`` taken under
    ``settings`` (and signed with one of ``keys``, if any); :class:`SnapshotRefused` (one
    line) for anything else, anything broken, and any global it names that a stage's state
    is not made of."""
    header = read_header(blob)
    what = header.describe()
    if (header.stage, header.partition) != (stage, partition):
        raise SnapshotRefused(f"{what}: expected one of {stage}[{partition}]")
    if header.state_version != STATE_VERSION:
        raise SnapshotRefused(f"{what}: state version {header.state_version}; this worker "
                              f"reads state version {STATE_VERSION}")
    if header.settings != settings:
        raise SnapshotRefused(f"{what}: taken with other settings than this worker's (the "
                              "catalogue, the slot length, the policy or the tick skew)")
    body = blob[blob.index(b"\n") + 1:]
    if len(body) < header.bytes:
        raise SnapshotRefused(f"{what}: truncated ({len(body):,} of its {header.bytes:,} "
                              "bytes)")
    if len(body) != header.bytes or hashlib.sha256(body).hexdigest() != header.sha256:
        raise SnapshotRefused(f"{what}: corrupt ({len(body):,} bytes whose digest does not "
                              f"match the header's {header.bytes:,})")
    keys.verify(header.mac, signed(header, body), what)
    try:
        return header, _Unpickler(io.BytesIO(zlib.decompress(body)), environment).load()
    except Exception as exc:
        raise SnapshotRefused(f"{what}: cannot be read by this worker "
                              f"({type(exc).__name__}: {exc})") from None


class _Pickler(pickle.Pickler):
    """Names the environment's objects; writes sets sorted, each once (shared sets stay
    shared)."""

    def __init__(self, file: io.BytesIO, environment: Mapping[str, object]) -> None:
        super().__init__(file, protocol=5)
        self._names = {id(obj): name for name, obj in environment.items()}
        self._sets: dict[int, int] = {}
        self._kept: list[object] = []

    def persistent_id(self, obj: object) -> Any:
        kind = type(obj)
        if (kind is set or kind is frozenset) and isinstance(obj, set | frozenset):
            number = self._sets.get(id(obj))
            if number is not None:
                return ("same-set", number)
            number = self._sets[id(obj)] = len(self._sets)
            self._kept.append(obj)  # its id stays its own while pickling
            return (kind.__name__, number, _ordered(obj))
        name = self._names.get(id(obj))
        return None if name is None else ("environment", name)


class _Unpickler(pickle.Unpickler):
    """Resolves only the allowed globals; supplies the environment's objects and the sets."""

    def __init__(self, file: io.BytesIO, environment: Mapping[str, object]) -> None:
        super().__init__(file)
        self._environment = environment
        self._sets: dict[int, set[Any] | frozenset[Any]] = {}

    def find_class(self, module: str, name: str) -> Any:
        return find_global(module, name)

    def persistent_load(self, pid: Any) -> Any:
        kind, *rest = pid
        if kind == "environment":
            (name,) = rest
            if name not in self._environment:
                raise pickle.UnpicklingError(f"it refers to {name!r}, which this worker lacks")
            return self._environment[name]
        if kind == "same-set":
            return self._sets[rest[0]]
        number, items = rest
        made = self._sets[number] = set(items) if kind == "set" else frozenset(items)
        return made


def _ordered(items: set[Any] | frozenset[Any]) -> tuple[Any, ...]:
    try:
        return tuple(sorted(items))
    except TypeError:
        return tuple(sorted(items, key=repr))
