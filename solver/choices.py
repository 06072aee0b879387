"""Text checked against a fixed set of names, typed as the name it matched."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

Name = TypeVar("Name", bound=str)


def one_of(field: str, value: str, names: Sequence[Name]) -> Name:
    """The one of ``names`` that ``value`` is; a ValueError naming ``field`` otherwise."""
    for name in names:
        if value == name:
            return name
    raise ValueError(f"{field}={value!r}: expected one of {', '.join(names)}")
