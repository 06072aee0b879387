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

_PUSH_FIXED = {  # opcode: bytes of its argument; pushes one value
    pickle.NONE[0]: 0, pickle.NEWTRUE[0]: 0, pickle.NEWFALSE[0]: 0, pickle.BININT[0]: 4,
    pickle.BININT1[0]: 1, pickle.BININT2[0]: 2, pickle.BINFLOAT[0]: 8,
    pickle.EMPTY_DICT[0]: 0, pickle.EMPTY_LIST[0]: 0}
_PUSH_SIZED = {  # opcode: (bytes of its length, struct format); pushes one value
    pickle.SHORT_BINUNICODE[0]: (1, "<B"), pickle.BINUNICODE[0]: (4, "<I"),
    pickle.BINUNICODE8[0]: (8, "<Q"), pickle.SHORT_BINBYTES[0]: (1, "<B"),
    pickle.BINBYTES[0]: (4, "<I"), pickle.BINBYTES8[0]: (8, "<Q"),
    pickle.BYTEARRAY8[0]: (8, "<Q"), pickle.LONG1[0]: (1, "<B"), pickle.LONG4[0]: (4, "<i")}
_TUPLE_N = {pickle.TUPLE1[0]: 1, pickle.TUPLE2[0]: 2, pickle.TUPLE3[0]: 3}
_TO_MARK = {pickle.APPENDS[0], pickle.SETITEMS[0], pickle.POP_MARK[0]}
_ATOM = (0, 1)


class NestingRefused(ValueError):
    """The pickle holds what the scan refuses; the message says what."""


def check_nesting(data: bytes, max_depth: int, max_items: int) -> None:
    """Nothing when ``data`` is a pickle of the opcodes snapshots use whose tuples are within
    the bounds (module doc); else :class:`NestingRefused`."""
    view = memoryview(data)
    stack: list[tuple[int, int]] = []  # (depth, items) of each value
    marks: list[int] = []
    memo: list[tuple[int, int]] = []
    i, end = 0, len(data)

    def to_mark() -> list[tuple[int, int]]:
        if not marks:
            raise NestingRefused("malformed pickle: no mark")
        fence = marks.pop()
        items = stack[fence:]
        del stack[fence:]
        return items

    def tuple_of(items: list[tuple[int, int]]) -> tuple[int, int]:
        depth = 1 + max((d for d, _ in items), default=0)
        size = 1 + sum(n for _, n in items)
        if depth > max_depth:
            raise NestingRefused(f"tuples nested {depth} deep (at most {max_depth})")
        if size > max_items:
            raise NestingRefused(f"a tuple of {size:,} items with its nested ones (at most "
                                 f"{max_items:,})")
        return depth, size

    def pop(n: int) -> list[tuple[int, int]]:
        if len(stack) - (marks[-1] if marks else 0) < n:
            raise NestingRefused("malformed pickle: stack underflow")
        items = stack[len(stack) - n:]
        del stack[len(stack) - n:]
        return items

    while i < end:
        op = data[i]
        i += 1
        fixed = _PUSH_FIXED.get(op)
        if fixed is not None:
            i += fixed
            stack.append(_ATOM)
            continue
        sized = _PUSH_SIZED.get(op)
        if sized is not None:
            width, layout = sized
            (length,) = struct.unpack_from(layout, view, i)
            i += width + max(length, 0)
            stack.append(_ATOM)
            continue
        count = _TUPLE_N.get(op)
        if count is not None:
            stack.append(tuple_of(pop(count)))
        elif op == pickle.MARK[0]:
            marks.append(len(stack))
        elif op == pickle.MEMOIZE[0]:
            if not stack:
                raise NestingRefused("malformed pickle: nothing to memoize")
            memo.append(stack[-1])
        elif op in (pickle.BINGET[0], pickle.LONG_BINGET[0]):
            width = 1 if op == pickle.BINGET[0] else 4
            (index,) = struct.unpack_from("<B" if width == 1 else "<I", view, i)
            i += width
            if index >= len(memo):
                raise NestingRefused("malformed pickle: memo index out of range")
            stack.append(memo[index])
        elif op == pickle.EMPTY_TUPLE[0]:
            stack.append((1, 1))
        elif op == pickle.TUPLE[0]:
            stack.append(tuple_of(to_mark()))
        elif op in _TO_MARK:
            to_mark()
        elif op == pickle.APPEND[0] or op == pickle.BUILD[0] or op == pickle.POP[0]:
            pop(1)
        elif op == pickle.SETITEM[0]:
            pop(2)
        elif op == pickle.STACK_GLOBAL[0]:
            pop(2)
            stack.append(_ATOM)
        elif op == pickle.REDUCE[0]:  # what it makes counts as its arguments (a named tuple)
            stack.append(pop(2)[1])
        elif op == pickle.BINPERSID[0]:
            pop(1)
            stack.append(_ATOM)
        elif op == pickle.FRAME[0]:
            i += 8
        elif op == pickle.PROTO[0]:
            i += 1
        elif op == pickle.STOP[0]:
            return
        else:
            raise NestingRefused(f"opcode {bytes([op])!r} at byte {i - 1:,}, which snapshots "
                                 "are not written with")
    raise NestingRefused("malformed pickle: no STOP")
