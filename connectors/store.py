"""Durable records in a connector's data directory: one SQLite file per record.

SQLite rather than a compacted Kafka topic: a local write is durable (``synchronous=FULL``)
before the runtime moves on, there is no read-back at start-up and no second broker round
trip per decision, and a record survives a crash of the process at any point. The record is
per worker; a partition that moves to another worker relies on the connector itself being
idempotent (desired-state reconciliation, EC2 client tokens).

A record belongs to the decisions it was made from: :meth:`Record.claim` names their origin
(the Kafka cluster and topic). A record of another origin, or of none, is set aside (the file
renamed) and an empty one started, so that decisions of a new broker or a topic created again
are not taken for the old ones.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

SIDECARS = ("-wal", "-shm")
"""The files SQLite keeps beside a database in WAL mode."""


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    return db


class Record:
    """One SQLite file of records, made from the decisions of one origin."""

    TABLE = ""
    COLUMNS = ""
    """The record's table and its columns."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        db = _connect(self.path)
        db.execute(f"CREATE TABLE IF NOT EXISTS {self.TABLE} ({self.COLUMNS})")
        db.execute("CREATE TABLE IF NOT EXISTS origin (origin TEXT NOT NULL)")
        return db

    def claim(self, origin: str) -> tuple[str, Path] | None:
        """Make this the record of ``origin``. A record of another origin (or of none, when
        it holds entries) is moved aside first: its origin and new path are returned."""
        row = self._db.execute("SELECT origin FROM origin").fetchone()
        if row is not None and row[0] == origin:
            return None
        if row is None and self._db.execute(f"SELECT 1 FROM {self.TABLE}").fetchone() is None:
            self._db.execute("INSERT INTO origin VALUES (?)", (origin,))
            return None
        made_on = "an unknown origin" if row is None else str(row[0])
        self._db.close()
        aside = self.path.with_name(f"{self.path.name}.set-aside-{time.time_ns()}")
        self.path.rename(aside)
        for suffix in SIDECARS:
            sidecar = self.path.with_name(self.path.name + suffix)
            if sidecar.exists():
                sidecar.rename(aside.with_name(aside.name + suffix))
        self._db = self._open()
        self._db.execute("INSERT INTO origin VALUES (?)", (origin,))
        return made_on, aside

    def close(self) -> None:
        self._db.close()


class AppliedKeys(Record):
    """Idempotency keys of the decisions a connector has applied."""

    TABLE, COLUMNS = "applied", "key TEXT PRIMARY KEY, applied_at REAL NOT NULL"

    def __contains__(self, key: str) -> bool:
        row = self._db.execute("SELECT 1 FROM applied WHERE key = ?", (key,)).fetchone()
        return row is not None

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM applied").fetchone()[0])

    def record(self, key: str) -> None:
        """Remember ``key``; durable when this returns."""
        self._db.execute("INSERT OR IGNORE INTO applied VALUES (?, ?)", (key, time.time()))


class Journal(Record):
    """An append-only log of JSON entries under unique keys, read back in order."""

    TABLE = "journal"
    COLUMNS = "seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT UNIQUE NOT NULL, entry TEXT NOT NULL"

    def get(self, key: str) -> dict | None:
        row = self._db.execute("SELECT entry FROM journal WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def append(self, key: str, entry: dict) -> None:
        """Add ``entry`` under ``key``; durable when this returns."""
        self._db.execute("INSERT INTO journal (key, entry) VALUES (?, ?)",
                         (key, json.dumps(entry, sort_keys=True)))

    def entries(self) -> Iterator[dict]:
        rows = self._db.execute("SELECT entry FROM journal ORDER BY seq").fetchall()
        for (text,) in rows:
            yield json.loads(text)
