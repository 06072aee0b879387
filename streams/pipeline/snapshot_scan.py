"""A check of a snapshot's pickle before it is unpickled: only the opcodes snapshots are written
with, and no tuple nested deeper or holding more than the bounds.

Unpickling hashes what it puts in dicts and sets, and hashing a tuple hashes its items in C,
without Python's recursion limit: a few kilobytes of tuples nested in one another crash the
interpreter, and tuples sharing their items (through the pickle's memo) take exponential time
to hash. Tuples are immutable, so their nesting is known when they are made: this scan
follows the unpickler's stack and memo and refuses a tuple (or a value rebuilt from one) deeper
than ``max_depth`` or spanning more than ``max_items`` items once shared items are counted each
time. Lists, dicts and objects are not hashed through (they are unhashable, or hash by
identity or in Python, which the recursion limit bounds).
"""

from __future__ import annotations

import pickle
import struct

(_PUSH, _MEMOIZE, _GET1, _GET4, _SIZED1, _SIZED4, _SIZED4_SIGNED, _SIZED8, _TUPLE_N, _MARK,
 _TUPLE, _TO_MARK, _POP, _REDUCE, _GLOBAL, _PERSID, _EMPTY_TUPLE, _FRAME, _PROTO, _STOP,
 _REFUSED) = range(21)
_KIND = [_REFUSED] * 256
"""What each opcode does to the stack: only those snapshots are written with."""
_ARG = [0] * 256
"""Bytes of a fixed argument (``_PUSH``), or items taken (``_TUPLE_N``, ``_POP``)."""
for _code, _kind, _arg in (
        (pickle.NONE, _PUSH, 0), (pickle.NEWTRUE, _PUSH, 0), (pickle.NEWFALSE, _PUSH, 0),
        (pickle.BININT, _PUSH, 4), (pickle.BININT1, _PUSH, 1), (pickle.BININT2, _PUSH, 2),
        (pickle.BINFLOAT, _PUSH, 8), (pickle.EMPTY_DICT, _PUSH, 0), (pickle.EMPTY_LIST, _PUSH, 0),
        (pickle.MEMOIZE, _MEMOIZE, 0), (pickle.BINGET, _GET1, 0), (pickle.LONG_BINGET, _GET4, 0),
        (pickle.SHORT_BINUNICODE, _SIZED1, 0), (pickle.SHORT_BINBYTES, _SIZED1, 0),
        (pickle.LONG1, _SIZED1, 0), (pickle.BINUNICODE, _SIZED4, 0), (pickle.BINBYTES, _SIZED4, 0),
        (pickle.LONG4, _SIZED4_SIGNED, 0), (pickle.BINUNICODE8, _SIZED8, 0),
        (pickle.BINBYTES8, _SIZED8, 0), (pickle.BYTEARRAY8, _SIZED8, 0),
        (pickle.TUPLE1, _TUPLE_N, 1), (pickle.TUPLE2, _TUPLE_N, 2), (pickle.TUPLE3, _TUPLE_N, 3),
        (pickle.MARK, _MARK, 0), (pickle.TUPLE, _TUPLE, 0), (pickle.APPENDS, _TO_MARK, 0),
        (pickle.SETITEMS, _TO_MARK, 0), (pickle.POP_MARK, _TO_MARK, 0),
        (pickle.APPEND, _POP, 1), (pickle.BUILD, _POP, 1), (pickle.POP, _POP, 1),
        (pickle.SETITEM, _POP, 2), (pickle.REDUCE, _REDUCE, 0),
        (pickle.STACK_GLOBAL, _GLOBAL, 0), (pickle.BINPERSID, _PERSID, 0),
        (pickle.EMPTY_TUPLE, _EMPTY_TUPLE, 0), (pickle.FRAME, _FRAME, 0),
        (pickle.PROTO, _PROTO, 0), (pickle.STOP, _STOP, 0)):
    _KIND[_code[0]], _ARG[_code[0]] = _kind, _arg
_ATOM = (0, 1)
_U4, _I4, _U8 = struct.Struct("<I"), struct.Struct("<i"), struct.Struct("<Q")


class NestingRefused(ValueError):
    """The pickle holds what the scan refuses; the message says what."""


def check_nesting(data: bytes, max_depth: int, max_items: int) -> None:
    """Nothing when ``data`` is a pickle of the opcodes snapshots use whose tuples are within
    the bounds (module doc); else :class:`NestingRefused`."""
    try:
        _scan(data, max_depth, max_items)
    except (IndexError, struct.error):
        raise NestingRefused("malformed pickle: it reads past its end or its memo") from None


def _scan(data: bytes, max_depth: int, max_items: int) -> None:
    stack: list[tuple[int, int]] = []  # (depth, items) of each value
    marks: list[int] = []
    memo: list[tuple[int, int]] = []
    push, remember = stack.append, memo.append
    fence, i, end = 0, 0, len(data)  # fence: where the stack's top part, after the mark, starts
    while i < end:
        op = data[i]
        kind = _KIND[op]
        i += 1
        if kind == _PUSH:
            i += _ARG[op]
            push(_ATOM)
        elif kind == _MEMOIZE:
            remember(stack[-1])
        elif kind == _GET4:
            push(memo[_U4.unpack_from(data, i)[0]])
            i += 4
        elif kind == _SIZED1:
            i += 1 + data[i]
            push(_ATOM)
        elif kind == _GET1:
            push(memo[data[i]])
            i += 1
        elif kind == _REDUCE:  # what it makes counts as its arguments (a named tuple)
            if len(stack) - fence < 2:
                raise NestingRefused("malformed pickle: stack underflow")
            made = stack.pop()
            stack[-1] = made
        elif kind in (_TUPLE_N, _POP):
            count = _ARG[op]
            if len(stack) - fence < count:
                raise NestingRefused("malformed pickle: stack underflow")
            items = stack[len(stack) - count:]
            del stack[len(stack) - count:]
            if kind == _TUPLE_N:
                push(_tuple_of(items, max_depth, max_items))
        elif kind == _MARK:
            marks.append(fence)
            fence = len(stack)
        elif kind in (_TUPLE, _TO_MARK):
            if not marks:
                raise NestingRefused("malformed pickle: no mark")
            items = stack[fence:]
            del stack[fence:]
            fence = marks.pop()
            if kind == _TUPLE:
                push(_tuple_of(items, max_depth, max_items))
        elif kind == _SIZED4:
            i += 4 + _U4.unpack_from(data, i)[0]
            push(_ATOM)
        elif kind == _SIZED4_SIGNED:
            i += 4 + max(0, _I4.unpack_from(data, i)[0])
            push(_ATOM)
        elif kind == _SIZED8:
            i += 8 + _U8.unpack_from(data, i)[0]
            push(_ATOM)
        elif kind == _GLOBAL:
            if len(stack) - fence < 2:
                raise NestingRefused("malformed pickle: stack underflow")
            del stack[-1]
            stack[-1] = _ATOM
        elif kind == _PERSID:
            if len(stack) - fence < 1:
                raise NestingRefused("malformed pickle: stack underflow")
            stack[-1] = _ATOM
        elif kind == _EMPTY_TUPLE:
            push((1, 1))
        elif kind == _FRAME:
            i += 8
        elif kind == _PROTO:
            i += 1
        elif kind == _STOP:
            return
        else:
            raise NestingRefused(f"opcode {bytes([op])!r} at byte {i - 1:,}, which snapshots "
                                 "are not written with")
    raise NestingRefused("malformed pickle: no STOP")


def _tuple_of(items: list[tuple[int, int]], max_depth: int, max_items: int) -> tuple[int, int]:
    depth = 1 + max((d for d, _ in items), default=0)
    size = 1 + sum(n for _, n in items)
    if depth > max_depth:
        raise NestingRefused(f"tuples nested {depth} deep (at most {max_depth})")
    if size > max_items:
        raise NestingRefused(f"a tuple of {size:,} items with its nested ones (at most "
                             f"{max_items:,})")
    return depth, size
