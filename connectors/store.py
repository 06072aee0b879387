"""Durable records in a connector's data directory: one SQLite file per record.

SQLite rather than a compacted Kafka topic: a local write is durable (``synchronous=FULL``)
before the runtime moves on, there is no read-back at start-up and no second broker round
trip per decision, and a record survives a crash of the process at any point. The record is
per worker; a partition that moves to another worker relies on the connector itself being
idempotent (desired-state reconciliation, EC2 client tokens).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    return db


class AppliedKeys:
    """Idempotency keys of the decisions a connector has applied."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = _connect(path)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS applied (key TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
        )

    def __contains__(self, key: str) -> bool:
        row = self._db.execute("SELECT 1 FROM applied WHERE key = ?", (key,)).fetchone()
        return row is not None

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM applied").fetchone()[0])

    def record(self, key: str) -> None:
        """Remember ``key``; durable when this returns."""
        self._db.execute("INSERT OR IGNORE INTO applied VALUES (?, ?)", (key, time.time()))

    def close(self) -> None:
        self._db.close()


class Journal:
    """An append-only log of JSON entries under unique keys, read back in order."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = _connect(path)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS journal "
            "(seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT UNIQUE NOT NULL, entry TEXT NOT NULL)"
        )

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

    def close(self) -> None:
        self._db.close()
