"""Snapshots of a stage: its whole state as versioned, signed bytes, so that a worker taking
over a partition restores the newest one and replays only the log after it.

A snapshot is the stage object pickled whole — no per-field code, so whatever state a stage,
its engine, its forecasters or its policy hold is kept — behind a one-line header::

    spotsched-snapshot <mac> {"bytes": 4242, "format": 2, "offset": 12345, "partition": 2,
                              "sequence": 7, "settings": "9f3c…", "sha256": "…",
                              "stage": "market", "state_version": 6, "taken": 1767225600.0}
    <zlib-compressed pickle>

- ``mac``: the HMAC-SHA256, under the workers' snapshot key (:class:`SnapshotKeys`), of the
  header's JSON and the body, in lowercase hex; ``unsigned`` when the writer had no key. It is
  checked before anything else of the snapshot is read: a worker with a key refuses a
  snapshot without a MAC, or whose MAC none of its keys gives;
- ``offset``: the stage has taken its partition's messages up to ``offset - 1``;
  ``sequence``: the number of the partition's snapshot (one more than the one before), which
  the manifest that lists it carries too (:mod:`streams.kafka.state`);
- ``settings``: the digest of the settings the stage's state depends on
  (:meth:`~streams.pipeline.declaration.PipelineConfig.fingerprint`: the catalogue and the
  slot length, and the tick skew of the market stage, the policy of the scheduler): a worker
  with other ones refuses the snapshot;
- ``format`` (this layout) and ``state_version`` (the shape of the stages' state: bump
  :data:`STATE_VERSION` when a class whose instances a stage holds changes its attributes):
  a worker refuses a snapshot of another version;
- ``sha256`` of the compressed body: a torn or corrupted snapshot is refused before it is
  decompressed.

Every field has one type (an int is not a bool, a float or a string); the body is refused
before it inflates past ``max_bytes``. Objects of the worker's environment (the pipeline
configuration, its metrics, what its stages wrote for one another,
:class:`~streams.pipeline.written.Written`) and their methods are not pickled but named, and
the restoring worker supplies its own. Sets are written in sorted order, so the bytes are a
function of the state alone, whatever the interpreter's hash seed.

Unpickling resolves only the globals of :mod:`streams.pipeline.snapshot_globals`, after
:mod:`streams.pipeline.snapshot_scan` has checked the pickle's opcodes and the nesting of its
tuples; whatever goes wrong while reading a snapshot is a :class:`SnapshotRefused`
(docs/operations.md, *Trust*).
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import math
import pickle
import re
import types
import zlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from streams.pipeline.snapshot_globals import ENVIRONMENT_METHODS, find_global, reduce_state
from streams.pipeline.snapshot_scan import check_nesting

FORMAT = 2
"""The layout of a snapshot: header line (MAC, then fields), then the compressed pickle."""
STATE_VERSION = 6
"""The shape of the stages' state; a snapshot of another version is refused."""
MAGIC = b"spotsched-snapshot "
UNSIGNED_MAC = "unsigned"
COMPRESSION_LEVEL = 1
"""zlib's fastest level: forecaster arrays barely compress, the rest compresses well at any
level (bench/bench_recovery.py prints sizes and times)."""
MAX_HEADER_BYTES = 4096
MAX_TUPLE_DEPTH = 32
"""Deepest nesting of tuples a snapshot's state may hold (the stages' is 3 or less)."""
MAX_TUPLE_ITEMS = 100_000
"""Most items a tuple and those nested in it may hold, shared ones counted each time."""
MAX_REASON_CHARS = 300
"""Longest reason a refusal quotes from what it read."""
_MAC = re.compile(r"[0-9a-f]{64}|" + UNSIGNED_MAC)
_HEX64 = re.compile(r"[0-9a-f]{64}")
MAX_COUNT = 2**63 - 1
"""Largest offset, sequence or size a header or manifest may give (Kafka's offsets are
int64)."""


class SnapshotRefused(ValueError):
    """A snapshot this worker cannot use; the message says which and why, in one line, with
    control characters escaped."""

    def __init__(self, message: str) -> None:
        super().__init__(printable(message))


def printable(text: str) -> str:
    """``text`` on one line: control and other unprintable characters escaped."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


@dataclass(frozen=True, slots=True)
class SnapshotKeys:
    """The workers' snapshot keys: the first signs the snapshots written, any of them verifies
    one read (so a key can be replaced without refusing the snapshots signed with the one
    before). None: snapshots are written unsigned and read without authentication (a worker
    runs so only when told ``--insecure-unsigned-snapshots``)."""

    keys: tuple[bytes, ...] = ()

    def sign(self, signed: bytes) -> str:
        """The MAC of ``signed`` under the first key, or :data:`UNSIGNED_MAC` with none."""
        if not self.keys:
            return UNSIGNED_MAC
        return hmac.new(self.keys[0], signed, hashlib.sha256).hexdigest()

    def verify(self, mac: str, signed: bytes, what: str) -> None:
        """Nothing when ``mac`` (checked by :func:`mac_of`) is one of these keys' MACs of
        ``signed`` (or there are no keys); else :class:`SnapshotRefused`."""
        if not self.keys:
            return
        if mac == UNSIGNED_MAC:
            raise SnapshotRefused(f"{what}: unsigned, and this worker has a snapshot key: "
                                  "written by a worker without one, or not by a worker")
        if not any(hmac.compare_digest(hmac.new(key, signed, hashlib.sha256).hexdigest(), mac)
                   for key in self.keys):
            raise SnapshotRefused(f"{what}: its MAC matches none of this worker's snapshot "
                                  "keys: written with another key, or altered")


UNSIGNED = SnapshotKeys()
"""No key: snapshots written unsigned, read unauthenticated."""


def mac_of(token: bytes, what: str) -> str:
    """The MAC a header or manifest starts with: 64 lowercase hex digits, or
    :data:`UNSIGNED_MAC`; :class:`SnapshotRefused` for anything else."""
    text = token.decode("ascii", "replace")
    if not _MAC.fullmatch(text):
        raise SnapshotRefused(f"{what}: its MAC {text[:80]!r} is not 64 hex digits or "
                              f"{UNSIGNED_MAC!r}")
    return text


@dataclass(frozen=True, slots=True)
class SnapshotHeader:
    """What a snapshot is: whose, up to which offset, its number, under which settings, and
    its checks."""

    stage: str
    partition: int
    offset: int
    sequence: int
    settings: str
    taken: float
    bytes: int
    sha256: str
    format: int = FORMAT
    state_version: int = STATE_VERSION

    def describe(self) -> str:
        return f"snapshot of {self.stage}[{self.partition}] at offset {self.offset:,}"


HEADER_FIELDS: Mapping[str, str] = {
    "stage": "text", "partition": "count", "offset": "count", "sequence": "count",
    "settings": "text", "taken": "time", "bytes": "count", "sha256": "hex64",
    "format": "count", "state_version": "count"}
"""Each header field and its kind (:func:`checked_fields`)."""


def checked_fields(raw: bytes, kinds: Mapping[str, str], what: str) -> dict[str, Any]:
    """The JSON object ``raw`` with exactly the fields of ``kinds``, each of its kind:
    ``count`` an int (not a bool) from 0 to :data:`MAX_COUNT`, ``counts`` a non-empty list of
    them, ``time`` a finite number, ``text`` a string of up to 256 printable characters,
    ``hex64`` 64 lowercase hex digits; :class:`SnapshotRefused` naming the field otherwise."""
    try:
        fields = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise SnapshotRefused(f"{what}: unreadable ({type(exc).__name__}: {exc})") from None
    if not isinstance(fields, dict) or set(fields) != set(kinds):
        names = sorted(map(str, fields)) if isinstance(fields, dict) else type(fields).__name__
        raise SnapshotRefused(f"{what}: unreadable (fields {str(names)[:200]}; expected "
                              f"{sorted(kinds)})")
    for name, kind in kinds.items():
        value = fields[name]
        if not _is_kind(value, kind):
            raise SnapshotRefused(f"{what}: field {name!r} = {json.dumps(value)[:80]}: "
                                  f"expected {_EXPECTED[kind]}")
    return fields


_EXPECTED = {"count": f"an integer from 0 to {MAX_COUNT}",
             "counts": f"a non-empty list of integers from 0 to {MAX_COUNT}",
             "time": "a finite number", "text": "a string of up to 256 printable characters",
             "hex64": "64 lowercase hex digits"}


def _is_kind(value: object, kind: str) -> bool:
    if kind == "count":
        return type(value) is int and 0 <= value <= MAX_COUNT
    if kind == "counts":
        return (type(value) is list and bool(value)
                and all(_is_kind(item, "count") for item in value))
    if kind == "time":
        return type(value) in (int, float) and math.isfinite(value)  # type: ignore[arg-type]
    if kind == "text":
        return type(value) is str and len(value) <= 256 and value.isprintable()
    return type(value) is str and _HEX64.fullmatch(value) is not None


def pickle_state(stage: object, environment: Mapping[str, object]) -> bytes:
    """The stage pickled, ``environment``'s objects and their methods by name. Call it between
    two messages, where the state is consistent; :func:`seal` may then run in another
    thread."""
    buffer = io.BytesIO()
    _Pickler(buffer, environment).dump(stage)
    return buffer.getvalue()


def seal(pickled: bytes, *, stage: str, partition: int, offset: int, sequence: int,
         settings: str, taken: float, keys: SnapshotKeys = UNSIGNED) -> bytes:
    """The snapshot of pickled state: header line, then the compressed body; signed with the
    first of ``keys``, if any."""
    body = zlib.compress(pickled, COMPRESSION_LEVEL)
    header = SnapshotHeader(stage, partition, offset, sequence, settings, taken, len(body),
                            hashlib.sha256(body).hexdigest())
    fields = json.dumps(asdict(header), sort_keys=True).encode()
    mac = keys.sign(fields + b"\n" + body)
    return MAGIC + mac.encode() + b" " + fields + b"\n" + body


def read_header(blob: bytes, keys: SnapshotKeys = UNSIGNED, what: str = "snapshot"
                ) -> tuple[SnapshotHeader, bytes]:
    """The header of a snapshot, its MAC verified first, and its body;
    :class:`SnapshotRefused` when it is not one of this format or not signed with ``keys``
    (``what``: the snapshot, as the refusal names it)."""
    if not blob.startswith(MAGIC):
        raise SnapshotRefused("not a spotsched snapshot (no header)")
    if blob[len(MAGIC):len(MAGIC) + 1] == b"{":
        raise SnapshotRefused(f"snapshot of an earlier format (1): this worker reads format "
                              f"{FORMAT}")
    end = blob.find(b"\n", 0, MAX_HEADER_BYTES)
    if end < 0:
        raise SnapshotRefused("unreadable snapshot header (no end of line)")
    token, _, raw = blob[len(MAGIC):end].partition(b" ")
    mac = mac_of(token, "snapshot header")
    body = blob[end + 1:]
    keys.verify(mac, raw + b"\n" + body, what)
    fields = checked_fields(raw, HEADER_FIELDS, "snapshot header")
    if fields["format"] != FORMAT:
        raise SnapshotRefused(f"snapshot format {fields['format']}: this worker reads format "
                              f"{FORMAT}")
    return SnapshotHeader(**fields), body


def restore(blob: bytes, *, stage: str, partition: int, settings: str,
            environment: Mapping[str, object], max_bytes: int,
            keys: SnapshotKeys = UNSIGNED, offset: int | None = None,
            sequence: int | None = None) -> tuple[SnapshotHeader, Any]:
    """The header and the stage of a snapshot of ``stage``'s ``partition`` taken under
    ``settings``, signed with one of ``keys`` (if any), of the ``offset`` and ``sequence`` its
    manifest gives (if given), whose pickle is at most ``max_bytes``;
    :class:`SnapshotRefused` (one line) for anything else, anything broken, and any global
    it names that a stage's state is not made of."""
    try:
        return _restore(blob, stage, partition, settings, environment, max_bytes, keys,
                        offset, sequence)
    except SnapshotRefused:
        raise
    except Exception as exc:  # whatever the bytes make the reader raise
        raise SnapshotRefused(f"snapshot of {stage}[{partition}]: unreadable "
                              f"({type(exc).__name__}: {str(exc)[:MAX_REASON_CHARS]})"
                              ) from None


def _restore(blob: bytes, stage: str, partition: int, settings: str,
             environment: Mapping[str, object], max_bytes: int, keys: SnapshotKeys,
             offset: int | None, sequence: int | None) -> tuple[SnapshotHeader, Any]:
    at = "" if offset is None else f" at offset {offset:,}"
    header, body = read_header(blob, keys, f"snapshot of {stage}[{partition}]{at}")
    what = header.describe()
    if (header.stage, header.partition) != (stage, partition):
        raise SnapshotRefused(f"{what}: expected one of {stage}[{partition}]")
    if (offset, sequence) != (None, None) and (header.offset, header.sequence) != (
            offset, sequence):
        raise SnapshotRefused(f"{what}: its manifest gives offset {offset} and sequence "
                              f"{sequence}, it says {header.offset} and {header.sequence}")
    if header.state_version != STATE_VERSION:
        raise SnapshotRefused(f"{what}: state version {header.state_version}; this worker "
                              f"reads state version {STATE_VERSION}")
    if header.settings != settings:
        raise SnapshotRefused(f"{what}: taken with other settings than this worker's (the "
                              "catalogue, the slot length, the policy or the tick skew)")
    if len(body) < header.bytes:
        raise SnapshotRefused(f"{what}: truncated ({len(body):,} of its {header.bytes:,} "
                              "bytes)")
    if len(body) != header.bytes or hashlib.sha256(body).hexdigest() != header.sha256:
        raise SnapshotRefused(f"{what}: corrupt ({len(body):,} bytes whose digest does not "
                              f"match the header's {header.bytes:,})")
    try:
        inflater = zlib.decompressobj()
        pickled = inflater.decompress(body, max_bytes + 1)
        if len(pickled) > max_bytes or not inflater.eof:
            raise SnapshotRefused(f"{what}: inflates past {max_bytes:,} bytes, the most a "
                                  "snapshot may (SPOTSCHED_SNAPSHOT_MAX_BYTES), or is cut "
                                  "short")
        check_nesting(pickled, MAX_TUPLE_DEPTH, MAX_TUPLE_ITEMS)
        return header, _Unpickler(io.BytesIO(pickled), environment).load()
    except SnapshotRefused:
        raise
    except Exception as exc:
        raise SnapshotRefused(f"{what}: cannot be read by this worker ({type(exc).__name__}: "
                              f"{str(exc)[:MAX_REASON_CHARS]})") from None


class _Pickler(pickle.Pickler):
    """Names the environment's objects and methods; writes sets sorted, each once (shared
    sets stay shared); writes what :func:`~streams.pipeline.snapshot_globals.reduce_state`
    rebuilds its way."""

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
        if kind is types.MethodType:
            assert isinstance(obj, types.MethodType)
            owner = self._names.get(id(obj.__self__))
            if (owner, obj.__name__) not in ENVIRONMENT_METHODS:
                raise pickle.PicklingError(
                    f"a stage's state holds the method {obj.__qualname__}, which is not among "
                    "streams.pipeline.snapshot_globals.ENVIRONMENT_METHODS")
            return ("environment-method", owner, obj.__name__)
        name = self._names.get(id(obj))
        return None if name is None else ("environment", name)

    def reducer_override(self, obj: object) -> Any:
        reduced = reduce_state(obj)
        return NotImplemented if reduced is None else reduced


class _Unpickler(pickle.Unpickler):
    """Resolves only the admitted globals; supplies the environment's objects and methods,
    and the sets."""

    def __init__(self, file: io.BytesIO, environment: Mapping[str, object]) -> None:
        super().__init__(file)
        self._environment = environment
        self._sets: dict[int, set[Any] | frozenset[Any]] = {}

    def find_class(self, module: str, name: str) -> Any:
        return find_global(module, name)

    def persistent_load(self, pid: Any) -> Any:
        if type(pid) is not tuple or not pid:
            raise pickle.UnpicklingError("an unknown reference")
        kind, *rest = pid
        if kind == "environment" and len(rest) == 1:
            return self._lacking(rest[0])
        if kind == "environment-method" and len(rest) == 2:
            if tuple(rest) not in ENVIRONMENT_METHODS:
                raise pickle.UnpicklingError(
                    f"it asks for the method {str(rest)[:80]}, which no stage holds")
            owner, method = rest
            return getattr(self._lacking(owner), method)  # a pair of ENVIRONMENT_METHODS
        if kind == "same-set" and len(rest) == 1 and rest[0] in self._sets:
            return self._sets[rest[0]]
        if kind in ("set", "frozenset") and len(rest) == 2 and type(rest[1]) is list \
                and type(rest[0]) is int and rest[0] not in self._sets:
            number, items = rest
            made = self._sets[number] = set(items) if kind == "set" else frozenset(items)
            return made
        raise pickle.UnpicklingError(f"an unknown reference {str(kind)[:40]!r}")

    def _lacking(self, name: object) -> object:
        if not isinstance(name, str) or name not in self._environment:
            raise pickle.UnpicklingError(f"it refers to {str(name)[:80]!r}, which this "
                                         "worker lacks")
        return self._environment[name]


def _ordered(items: set[Any] | frozenset[Any]) -> list[Any]:
    try:
        return sorted(items)
    except TypeError:
        return sorted(items, key=repr)
