"""Assertions and small fixture writers shared by the loader tests."""

from __future__ import annotations

import csv
import gzip
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from solver.traces import TraceFormatError


def fails(
    load: Callable[[], Any], path: Path, where: str | None, field: str, value: str,
    expected: str,
) -> TraceFormatError:
    """Assert ``load()`` raises a TraceFormatError whose message names the file, the place,
    the field, the value (as shown, e.g. ``"'abc'"`` or ``"is missing"``) and the expectation."""
    with pytest.raises(TraceFormatError) as caught:
        load()
    error = caught.value
    message = str(error)
    place = f"{path} {where}:" if where else f"{path}:"
    assert message.startswith(place), message
    assert f"field {field!r}" in message, message
    assert value in message, message
    assert f"expected {expected}" in message, message
    assert (error.file, error.where, error.field) == (str(path), where, field)
    return error


def write_json(path: Path, document: Any) -> Path:
    text = json.dumps(document)
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> Path:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def write_lines(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path
