"""The suggestion an error about a mistyped name offers."""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the choice closest to a mistyped ``value``, else ``""``."""
    close = get_close_matches(value, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
