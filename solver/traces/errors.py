"""The error every trace and workload loader raises for malformed input, and the checked
readers that raise it (file contents, numbers, counts, times)."""

from __future__ import annotations

import gzip
import json
import math
import os
import zlib
from datetime import datetime
from pathlib import Path
from typing import Any

PathLike = str | os.PathLike[str]

MISSING: Any = object()
"""Pass as ``value`` when the field is absent altogether."""

TIME_EXPECTED = "Unix seconds or an ISO-8601 time with 'Z' or a UTC offset"


class TraceFormatError(ValueError):
    """Malformed input, located: file, line (text formats) or JSON path, field, offending value
    and what was expected, e.g. ``prices.csv line 4: field 'spot_price' = 'abc': expected a
    number >= 0``. ``where`` is ``None`` for problems with the file as a whole."""

    def __init__(
        self, file: PathLike, where: str | None, field: str, value: Any, expected: str
    ) -> None:
        self.file = os.fspath(file)
        self.where = where
        self.field: str | None = field
        self.value = value
        self.expected: str | None = expected
        shown = "is missing" if value is MISSING else f"= {value!r}"
        place = _place(self.file, where)
        super().__init__(f"{place}: field {field!r} {shown}: expected {expected}")

    @classmethod
    def locate(cls, file: PathLike, where: str, error: ValueError) -> TraceFormatError:
        """Add file and place to a model's own validation error, whose message already names
        the field, the value and the expectation."""
        located = cls.__new__(cls)
        ValueError.__init__(located, f"{_place(os.fspath(file), where)}: {error}")
        located.file, located.where = os.fspath(file), where
        located.field = located.value = located.expected = None
        return located


def _place(file: str, where: str | None) -> str:
    return f"{file} {where}" if where else file


def read_text(path: PathLike) -> str:
    """The file's text (UTF-8, optional BOM), gunzipped when the name ends in ``.gz``."""
    gzipped = os.fspath(path).endswith(".gz")
    raw = Path(path).read_bytes()
    try:
        return (gzip.decompress(raw) if gzipped else raw).decode("utf-8-sig")
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as error:
        expected = "gzip-compressed UTF-8 text" if gzipped else "UTF-8 text"
        raise TraceFormatError(path, None, "content", str(error), expected) from error


def read_json(path: PathLike) -> Any:
    """The parsed JSON document of a non-empty file."""
    text = read_text(path)
    if not text.strip():
        raise TraceFormatError(path, None, "content", "", "a JSON document, got an empty file")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise TraceFormatError.locate(
            path, f"line {error.lineno} column {error.colno}",
            ValueError(f"not valid JSON ({error.msg})")
        ) from error


def number(
    raw: Any, file: PathLike, where: str | None, field: str, *, low: float | None = 0.0,
    strict: bool = False,
) -> float:
    """A finite number (JSON number or numeric text) ``>= low`` (``> low`` when ``strict``)."""
    expected = (
        "a finite number" if low is None else f"a number {'>' if strict else '>='} {low:g}"
    )
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise TraceFormatError(file, where, field, raw, expected)
    try:
        value = float(raw)
    except ValueError:
        raise TraceFormatError(file, where, field, raw, expected) from None
    if not math.isfinite(value) or (
        low is not None and (value <= low if strict else value < low)
    ):
        raise TraceFormatError(file, where, field, raw, expected)
    return value


def count(raw: Any, file: PathLike, where: str | None, field: str) -> int:
    """A whole number ``>= 0`` (JSON integer or integral number, or integer text)."""
    expected = "an integer count >= 0"
    if isinstance(raw, bool):
        raise TraceFormatError(file, where, field, raw, expected)
    if isinstance(raw, float) and raw.is_integer():
        raw = int(raw)
    try:
        value = int(raw) if isinstance(raw, int | str) else -1
    except ValueError:
        value = -1
    if value < 0:
        raise TraceFormatError(file, where, field, raw, expected)
    return value


def parse_time(raw: Any, file: PathLike, where: str | None, field: str) -> float:
    """Unix seconds from a number, numeric text, or ISO-8601 text with an explicit offset."""
    value = None
    if isinstance(raw, str):
        try:
            value = float(raw)
        except ValueError:
            try:
                moment = datetime.fromisoformat(raw.strip())
            except ValueError:
                moment = None
            if moment is not None and moment.tzinfo is not None:
                value = moment.timestamp()
    elif isinstance(raw, int | float) and not isinstance(raw, bool):
        value = float(raw)
    if value is None or not math.isfinite(value):
        raise TraceFormatError(file, where, field, raw, TIME_EXPECTED)
    return value


def json_type(value: Any) -> str:
    """JSON name of a parsed value's type, for messages about wrong shapes."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    names: dict[type, str] = {dict: "object", list: "array", str: "string"}
    return names.get(type(value), "number")
