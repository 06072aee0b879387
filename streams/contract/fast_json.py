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
  ``0.00001`` and, before 3.13, ``1e16``. Any exponent, in either spelling, takes the standard
  path, so the bytes written do not depend on orjson's version.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

_EXPONENT = re.compile(rb"e[-+0-9]")
_NUMBER_PART = frozenset(b"0123456789.-")
_SMALL = b"0.0000"
"""What orjson writes for a float of magnitude below 1e-4 unless it gives an exponent."""
_DIGITS_AS_ZEROS = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19
"""19 digits in a row not after a decimal point: maybe an integer beyond 64 bits, which orjson
reads as a float (or digits in a string or an exponent, which only costs the standard path)."""
_ZERO, _POINT = ord("0"), ord(".")
_NOT_SHAPE = bytes(sorted(set(range(256)) - set(b'[]{}"')))
"""Every byte but the brackets and quotes (deleted to leave a text's shape)."""
_STRING = re.compile(rb'"[^"]*"')
_AS_SQUARE = bytes.maketrans(b"{}", b"[]")
MAX_CONTAINERS = 1024
"""Most arrays and objects a message orjson reads may open (which bounds its nesting)."""


def loads(raw: bytes, max_nesting: int) -> dict[str, Any] | None:
    """``raw`` decoded as ``json`` decodes it, when it is a JSON object of unique field names
    nested at most ``max_nesting`` levels that orjson reads as ``json`` does; otherwise
    ``None``: the standard path reads it and says what is wrong, if anything."""
    if b"\\" in raw:
        return None
    marks = _marks(raw)
    if marks.count(b"[") > MAX_CONTAINERS:
        return None
    data = orjson_object(raw)
    if data is None or not _nests_within(marks, max_nesting):
        return None
    try:
        written = orjson.dumps(data)
    except orjson.JSONEncodeError:
        return None
    if written == raw:
        # orjson writes back exactly what it read (as it does what the codec wrote): every
        # field is there and every integer is one (a float is written with a point or an
        # exponent, which no integer has).
        return data
    if _long_integer(raw):
        return None
    # Without escapes every '"' delimits a string, in ``raw`` and in what orjson writes of
    # ``data`` alike: a field orjson dropped (the first of a repeated one) leaves fewer in the
    # latter.
    return data if written.count(b'"') == raw.count(b'"') else None


def _long_integer(raw: bytes) -> bool:
    """Whether ``raw`` may hold an integer of 19 digits or more (module doc); the digits of a
    fraction (a float's ``repr`` gives up to 17 significant ones after zeros) do not count."""
    digits = raw.translate(_DIGITS_AS_ZEROS)
    at = digits.find(_LONG_RUN)
    while at != -1:  # ``at`` starts a run of digits
        if at == 0 or digits[at - 1] != _POINT:
            return True
        end = at + len(_LONG_RUN)
        while end < len(digits) and digits[end] == _ZERO:
            end += 1
        at = digits.find(_LONG_RUN, end)
    return False


def orjson_object(raw: bytes) -> dict[str, Any] | None:
    """What orjson reads of ``raw`` when it is a JSON object (its fields are still to be
    checked as :func:`loads` says); otherwise ``None``."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return data if type(data) is dict else None


def _marks(raw: bytes) -> bytes:
    """The brackets (all written ``[]``) and quotes of ``raw``, in order."""
    return raw.translate(_AS_SQUARE, _NOT_SHAPE)


def _nests_within(marks: bytes, levels: int) -> bool:
    """Whether the arrays and objects of a JSON text without escapes, of which ``marks`` are
    the :func:`_marks`, nest at most ``levels`` deep. Its shape is its brackets once the
    strings are taken out; each pass removes the innermost pairs."""
    shape = marks.replace(b'""', b"")
    if b'"' in shape:  # a string holds a bracket
        shape = _STRING.sub(b"", marks)
    for _ in range(levels):
        if not shape:
            return True
        shape = shape.replace(b"[]", b"")
    return not shape


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
