"""What a job holds in a market, and the launches and terminations between two holdings."""

from __future__ import annotations

from dataclasses import dataclass

from streams.contract import ProvisioningDecision


@dataclass(frozen=True, slots=True)
class Holding:
    """What one job holds: ``spot`` and ``on_demand`` instances in ``market``."""

    market: str
    spot: int
    on_demand: int

    @classmethod
    def of(cls, decision: ProvisioningDecision) -> Holding | None:
        """The decision's desired holding; ``None`` for zero instances."""
        if decision.spot + decision.on_demand == 0:
            return None
        return cls(decision.market, decision.spot, decision.on_demand)


def changes(before: Holding | None, after: Holding | None) -> tuple[int, int]:
    """``(launched, terminated)`` instance counts that turn ``before`` into ``after``."""
    launched = terminated = 0
    for kind in ("spot", "on_demand"):
        have = getattr(before, kind) if before is not None else 0
        want = getattr(after, kind) if after is not None else 0
        if before is not None and after is not None and before.market != after.market:
            launched, terminated = launched + want, terminated + have
        else:
            launched, terminated = launched + max(0, want - have), terminated + max(0, have - want)
    return launched, terminated
