"""What a connector may be asked to do, checked before it acts.

Whoever can write to the decisions topic can ask a connector for anything the contract allows:
any market, up to 10,000 spot and 10,000 on-demand instances a job. A connector that spends
money is given limits instead: the markets of its catalogue, its regions, the instance types
allowed, and caps on the instances of one job and of all jobs together. :class:`Limited`
wraps a connector and refuses a decision outside them with a :class:`RefusedDecision` (a
:class:`~connectors.base.PermanentError`: the runtime dead-letters it with the reason) before
the connector sees it, and counts the refusal by the limit it broke.

A decision that holds nothing (idle, release) only takes instances away: it is checked for
its region alone, so that a job in a market since dropped from the limits can still leave.
"""

from __future__ import annotations

from dataclasses import dataclass

from connectors.base import Applied, Connector, PermanentError
from connectors.metrics import Limit, RefusalMetrics
from streams.contract import ProvisioningDecision

DEFAULT_MAX_INSTANCES_PER_JOB = 64
"""Most instances (spot and on-demand) one decision may ask for, unless set otherwise."""
DEFAULT_MAX_INSTANCES = 256
"""Most instances all jobs' latest decisions may ask for together, unless set otherwise."""


class RefusedDecision(PermanentError):
    """A decision outside the connector's limits; ``limit`` names the one it broke."""

    def __init__(self, limit: Limit, message: str) -> None:
        super().__init__(message)
        self.limit = limit


@dataclass(frozen=True, slots=True)
class DecisionLimits:
    """The markets, regions and instance types a connector serves (``None``: any) and its
    instance caps."""

    markets: frozenset[str] | None = None
    regions: frozenset[str] | None = None
    instance_types: frozenset[str] | None = None
    max_instances_per_job: int = DEFAULT_MAX_INSTANCES_PER_JOB
    max_instances: int = DEFAULT_MAX_INSTANCES

    def __post_init__(self) -> None:
        for name in ("max_instances_per_job", "max_instances"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r}: expected a whole number of instances, "
                                 "at least 1")

    def check(self, decision: ProvisioningDecision, held_by_others: int) -> None:
        """Raise :class:`RefusedDecision` unless ``decision`` lies within the limits, the other
        jobs holding ``held_by_others`` instances."""
        _, region, _, instance_type = decision.market.split("/")
        if self.regions is not None and region not in self.regions:
            raise RefusedDecision("region", f"market {decision.market!r}: region "
                                  f"{region!r} is not one the connector serves; expected "
                                  f"one of {_listed(self.regions)} (--region)")
        wanted = decision.spot + decision.on_demand
        if wanted == 0:
            return
        if self.markets is not None and decision.market not in self.markets:
            raise RefusedDecision("market", f"market {decision.market!r}: not in the "
                                  f"connector's catalogue; expected one of its "
                                  f"{len(self.markets)} markets")
        if self.instance_types is not None and instance_type not in self.instance_types:
            raise RefusedDecision("instance_type", f"instance type {instance_type!r}: "
                                  f"expected one of {_listed(self.instance_types)} "
                                  "(--allowed-instance-types)")
        if wanted > self.max_instances_per_job:
            raise RefusedDecision("instances_per_job", f"spot={decision.spot} on_demand="
                                  f"{decision.on_demand}: {wanted:,} instances for one job; "
                                  f"expected at most {self.max_instances_per_job:,} "
                                  "(--max-instances-per-job)")
        if held_by_others + wanted > self.max_instances:
            raise RefusedDecision("instances", f"spot={decision.spot} on_demand="
                                  f"{decision.on_demand}: with the {held_by_others:,} "
                                  f"instances of the other jobs, {held_by_others + wanted:,} in "
                                  f"all; expected at most {self.max_instances:,} "
                                  "(--max-instances)")


class Limited:
    """A connector behind :class:`DecisionLimits`: what it is asked is checked first.

    The instances of all jobs are those the latest decision applied for each job asks for,
    counted from the worker's start (each job's next decision brings it in)."""

    def __init__(self, connector: Connector, limits: DecisionLimits,
                 metrics: RefusalMetrics) -> None:
        self.connector = connector
        self.limits = limits
        self.metrics = metrics
        self.name = connector.name
        self._wanted: dict[str, int] = {}

    async def apply(self, decision: ProvisioningDecision) -> Applied:
        others = sum(self._wanted.values()) - self._wanted.get(decision.job_id, 0)
        try:
            self.limits.check(decision, others)
        except RefusedDecision as refusal:
            self.metrics.refused[refusal.limit].inc()
            raise
        applied = await self.connector.apply(decision)
        wanted = decision.spot + decision.on_demand
        if wanted:
            self._wanted[decision.job_id] = wanted
        else:
            self._wanted.pop(decision.job_id, None)
        return applied

    async def close(self) -> None:
        await self.connector.close()


def _listed(values: frozenset[str]) -> str:
    return ", ".join(sorted(values)) or "(none)"
