"""orjson where it gives exactly what the standard library's ``json`` gives the codec, which
stays the reference: a message it could read or write differently takes the standard path.

orjson reads floats as ``json`` does (correctly rounded) and escapes strings as ``json`` does
with ``ensure_ascii=False``. It differs in what this module screens out:

- a repeated field: orjson keeps the last one, the codec refuses the message;
- an integer beyond 64 bits: orjson reads it as a float;
- ``NaN`` and ``Infinity`` literals and invalid UTF-8: orjson refuses them, the codec reads
  them to say what is wrong;
- deep nesting: orjson before 3.9 recurses without a limit, down to a crash;
- writing a float below 1e-4 or from 1e16 up: ``repr`` gives ``1e-05`` and ``1e+16``, orjson
  ``0.00001`` and ``1e16``.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

_EXPONENT = re.compile(rb"e[-0-9]")
_NUMBER_PART = frozenset(b"0123456789.-")
_SMALL = b"0.0000"
"""What orjson writes for a float of magnitude below 1e-4 unless it gives an exponent."""
_DIGITS_AS_ZEROS = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19
"""19 digits in a row: maybe an integer beyond 64 bits, which orjson reads as a float (or the
digits of a long fraction, which only costs the standard path)."""
MAX_CONTAINERS = 1024
"""Most arrays and objects a message orjson reads may open (which bounds its nesting)."""


def loads(raw: bytes, max_nesting: int) -> dict[str, Any] | None:
    """``raw`` decoded as ``json`` decodes it, when it is a JSON object of unique field names
    nested at most ``max_nesting`` levels that orjson reads as ``json`` does; otherwise
    ``None``: the standard path reads it and says what is wrong, if anything."""
    if (b"\\" in raw or _LONG_RUN in raw.translate(_DIGITS_AS_ZEROS)
            or (len(raw) > 2 * MAX_CONTAINERS  # too short to open more
                and raw.count(b"[") + raw.count(b"{") > MAX_CONTAINERS)):
        return None
    data = orjson_object(raw)
    if data is None:
        return None
    strings = _strings(data, max_nesting)
    # Without escapes every '"' delimits a string: a field orjson dropped leaves more of them.
    return data if strings is not None and raw.count(b'"') == 2 * strings else None


def orjson_object(raw: bytes) -> dict[str, Any] | None:
    """What orjson reads of ``raw`` when it is a JSON object (its fields are still to be
    checked as :func:`loads` says); otherwise ``None``."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return data if type(data) is dict else None


def _strings(data: dict[str, Any], max_nesting: int) -> int | None:
    """Field names and string values in ``data``; ``None`` when it nests deeper than
    ``max_nesting``. Each container's values are looked at in C, its containers in Python."""
    count = 0
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, level = stack.pop()
        if level > max_nesting:
            return None
        if type(value) is dict:
            count += len(value)
            value = value.values()
        kinds = list(map(type, value))
        count += kinds.count(str)
        if dict in kinds or list in kinds:
            stack.extend((child, level + 1) for child in value
                         if type(child) is dict or type(child) is list)
    return count


def dumps(data: dict[str, Any]) -> bytes | None:
    """``data`` as compact JSON with sorted keys, as ``json`` writes it with
    ``ensure_ascii=False``, when orjson writes the same bytes; otherwise ``None``. Its floats
    are finite (orjson would write ``null``)."""
    try:
        out = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:  # e.g. an integer beyond 64 bits, a key that is no string
        return None
    return None if _SMALL in out or _has_exponent(out) else out


def _has_exponent(out: bytes) -> bool:
    """Whether orjson wrote a number with an exponent in ``out``, which ``repr`` writes
    otherwise (a string that looks like one only costs the standard path)."""
    for match in _EXPONENT.finditer(out):
        start = end = match.start()
        while start and out[start - 1] in _NUMBER_PART:
            start -= 1
        if start < end and out[start - 1] in b":,[":
            return True
    return False
