"""Job workloads (:class:`solver.job.Job`) from JSON or CSV files, plain or ``.gz``.

JSON is an array of objects, CSV a header and one row per job; the names are ``Job``'s field
names and unknown names are an error. ``id``, ``workload``, ``release``, ``soft_deadline`` and
``hard_deadline`` are required; a missing optional field (or an empty CSV cell) takes
``Job``'s default. Times are Unix seconds or ISO-8601 with ``Z`` or a UTC offset.
``allowed_markets`` is an array of market keys and ``market_patterns`` one of patterns such as
``gcp/us-*`` (CSV: separated by ``;``); absent, ``null`` or an empty cell means any market.
``allow_spot`` is a JSON boolean (CSV: ``true``/``false``, ``1``/``0``, ``yes``/``no``).
``home_region`` is ``cloud/region`` text; ``checkpoint_gb`` and ``max_hourly_usd`` numbers.
Job ids must be unique within a file.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from typing import Any

from solver.job import Job
from solver.suggest import did_you_mean
from solver.traces.errors import (
    MISSING,
    PathLike,
    TraceFormatError,
    count,
    json_type,
    number,
    parse_time,
    read_json,
)
from solver.traces.plain_csv import MARKET_EXPECTED, read_csv

FIELDS = tuple(field.name for field in dataclasses.fields(Job))
REQUIRED = tuple(
    field.name for field in dataclasses.fields(Job) if field.default is dataclasses.MISSING
)
_TIMES = ("release", "soft_deadline", "hard_deadline")
_COUNTS = ("n_min", "n_max")
_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def load_jobs(path: PathLike) -> list[Job]:
    """The jobs of a ``.json`` or ``.csv`` workload file, in file order."""
    name = os.fspath(path).removesuffix(".gz")
    if name.endswith(".json"):
        entries, text = _json_entries(path), False
    elif name.endswith(".csv"):
        entries, text = _csv_entries(path), True
    else:
        raise TraceFormatError(
            path, None, "file name", os.path.basename(name), "a .json or .csv file (or .gz)"
        )
    jobs: list[Job] = []
    first_place: dict[str, str] = {}
    for where, entry in entries:
        job = job_of(entry, path, where, text)
        if job.id in first_place:
            raise TraceFormatError(
                path, where, "id", job.id, f"a job id not already used at {first_place[job.id]}"
            )
        first_place[job.id] = where
        jobs.append(job)
    return jobs


def job_of(entry: dict[str, Any], source: PathLike, where: str = "",
           text: bool = True) -> Job:
    """The job of one entry of ``source`` (CSV text when ``text``, else JSON values), checked
    as each job of a file is; the required fields must be there."""
    _require(source, where, entry)
    values = {key: _value(source, where, key, raw, text) for key, raw in entry.items()}
    try:
        return Job(**values)
    except ValueError as error:
        raise TraceFormatError.locate(source, where, error) from None


def _json_entries(path: PathLike) -> Iterator[tuple[str, dict[str, Any]]]:
    document = read_json(path)
    if not isinstance(document, list) or not document:
        shown = json_type(document) if document != [] else document
        raise TraceFormatError(path, None, "top level", shown, "a non-empty array of job objects")
    for index, entry in enumerate(document):
        where = f"[{index}]"
        if not isinstance(entry, dict):
            raise TraceFormatError(path, where, "job", json_type(entry), "an object")
        unknown = sorted(set(entry) - set(FIELDS))
        if unknown:
            name = unknown[0]
            raise TraceFormatError(path, where, name, entry[name],
                                   f"a known job field{did_you_mean(name, FIELDS)}: "
                                   f"{', '.join(FIELDS)}")
        _require(path, where, entry)
        yield where, entry


def _csv_entries(path: PathLike) -> Iterator[tuple[str, dict[str, Any]]]:
    table = read_csv(path, REQUIRED, [name for name in FIELDS if name not in REQUIRED])
    for row in range(len(table.lines)):
        entry = {name: values[row] for name, values in table.columns.items() if values[row]}
        _require(path, table.where(row), entry)
        yield table.where(row), entry


def _require(path: PathLike, where: str, entry: dict[str, Any]) -> None:
    for name in REQUIRED:
        if entry.get(name) is None:
            raise TraceFormatError(path, where, name, entry.get(name, MISSING), "a value")


def _value(path: PathLike, where: str, name: str, raw: Any, text: bool) -> Any:
    """``raw`` (a JSON value, or CSV text when ``text``) converted to the type of ``name``."""
    if name == "id":
        if not isinstance(raw, str):
            raise TraceFormatError(path, where, name, raw, "a string")
        return raw
    if name in _TIMES:
        return parse_time(raw, path, where, name)
    if name in _COUNTS:
        return count(raw, path, where, name)
    if name == "allow_spot":
        flag = _BOOLEANS.get(raw.strip().lower()) if text else raw
        if not isinstance(flag, bool):
            expected = f"one of {', '.join(_BOOLEANS)}" if text else "true or false"
            raise TraceFormatError(path, where, name, raw, expected)
        return flag
    if name == "allowed_markets":
        return _markets(path, where, raw, text)
    if name == "market_patterns":
        return _patterns(path, where, raw, text)
    if name == "home_region":
        if raw is not None and not isinstance(raw, str):
            raise TraceFormatError(path, where, name, raw, "'cloud/region' text")
        return raw.strip() if raw is not None else None
    if name == "max_hourly_usd" and raw is None:
        return None
    return number(raw, path, where, name, low=None)


def _patterns(path: PathLike, where: str, raw: Any, text: bool) -> tuple[str, ...] | None:
    if raw is None:
        return None
    patterns = [p.strip() for p in raw.split(";") if p.strip()] if text else raw
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise TraceFormatError(path, where, "market_patterns", raw,
                               "an array of patterns on market keys, e.g. gcp/us-*")
    return tuple(patterns)


def _markets(path: PathLike, where: str, raw: Any, text: bool) -> tuple[str, ...] | None:
    if raw is None:
        return None
    if text:
        keys = [key.strip() for key in raw.split(";") if key.strip()]
    elif isinstance(raw, list):
        keys = raw
    else:
        raise TraceFormatError(path, where, "allowed_markets", raw, "an array of market keys")
    for key in keys:
        parts = key.split("/") if isinstance(key, str) else []
        if len(parts) != 4 or not all(parts):
            raise TraceFormatError(path, where, "allowed_markets", key, MARKET_EXPECTED)
    return tuple(keys)
