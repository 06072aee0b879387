"""Text from a message (an id, a reason) made safe for a table cell."""

from __future__ import annotations

from rich.markup import escape

from streams.contract.printable import printable


def cell(text: str) -> str:
    """``text`` for a table cell: what is not printable written as escapes
    (:func:`~streams.contract.printable.printable`), rich markup escaped."""
    return escape(printable(text))
