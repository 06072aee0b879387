"""What a live price source provides: the spot price history of markets over a time window.

A source answers with the price changes of each market in ``[start, end]`` plus the change in
force at ``start`` (which may be older), as EC2's ``DescribeSpotPriceHistory`` does. It sorts
its failures into :class:`TransientFeedError` (retried with backoff: throttling, a lost
connection, rejected credentials that may yet be fixed) and :class:`PermanentFeedError` (no
retry can help: no credentials at all, a market the cloud does not know). Their messages are
one line and never carry secrets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from solver.market import Market


@dataclass(frozen=True, slots=True, order=True)
class PriceChange:
    """A market's spot price (USD per instance-hour) from ``time`` (Unix seconds) on."""

    time: float
    price: float


class FeedError(Exception):
    """A price source failed; the message is one line."""


class TransientFeedError(FeedError):
    """Worth retrying after a pause."""


class PermanentFeedError(FeedError):
    """Retrying cannot help."""


class PriceSource(Protocol):
    """A cloud's spot price history."""

    name: str
    """The cloud, as in market keys (``aws``)."""

    def changes(self, markets: Sequence[Market], start: float,
                end: float) -> dict[str, list[PriceChange]]:
        """Each market's changes in ``[start, end]`` and the one in force at ``start``, sorted
        by time (markets the cloud reports nothing for are absent). Blocking."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...
