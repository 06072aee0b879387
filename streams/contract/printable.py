"""Text from a message made safe to print: what a stranger wrote (a job id, a refusal's reason,
an exception's message about a value) may hold line breaks, terminal escapes, NUL or
bidirectional overrides, which forge log lines, recolour a terminal or reorder what it shows.
"""

from __future__ import annotations


def printable(text: str) -> str:
    """``text`` with each character that is not printable written as its Python escape:
    control characters (``\\n``, ``\\x1b``, ``\\x00``), format characters such as the
    right-to-left override (``\\u202e``), line and paragraph separators. Spaces stay."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
