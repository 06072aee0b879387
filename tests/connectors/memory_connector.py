"""An in-memory connector for tests: it holds each job's desired state and counts changes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from connectors.base import Applied
from connectors.holding import Holding, changes
from streams.contract import ProvisioningDecision


class MemoryConnector:
    """Applies decisions to a dict of holdings and keeps every decision it was given.

    ``failures`` maps an idempotency key to exceptions raised, one per attempt, before the
    decision applies: a script for retry and dead-letter tests.
    """

    name = "memory"

    def __init__(self, failures: Mapping[str, Iterable[Exception]] | None = None) -> None:
        self.decisions: list[ProvisioningDecision] = []
        self.holdings: dict[str, Holding] = {}
        self.launched = 0
        self.terminated = 0
        self.closed = False
        self._failures = {key: list(errors) for key, errors in (failures or {}).items()}

    async def apply(self, decision: ProvisioningDecision) -> Applied:
        pending = self._failures.get(decision.idempotency_key)
        if pending:
            raise pending.pop(0)
        self.decisions.append(decision)
        after = Holding.of(decision)
        launched, terminated = changes(self.holdings.pop(decision.job_id, None), after)
        if after is not None:
            self.holdings[decision.job_id] = after
        self.launched += launched
        self.terminated += terminated
        return Applied(launched=launched, terminated=terminated)

    async def close(self) -> None:
        self.closed = True
