"""The suggestion an error about a mistyped name offers."""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches


def closest(value: str, choices: Iterable[str]) -> str | None:
    """The choice a mistyped ``value`` most likely meant, if one is close."""
    close = get_close_matches(value, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the choice closest to a mistyped ``value``, else ``""``."""
    meant = closest(value, choices)
    return f" (did you mean {meant!r}?)" if meant else ""
