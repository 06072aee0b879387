"""The streaming pipeline's three stages, free of Kafka and Faust so they run in memory too.

1. :class:`~streams.pipeline.market_stage.MarketStage` (partitioned by market) cuts market
   ticks into slots and reports each boundary a market passes.
2. :class:`~streams.pipeline.coordinator.EpochCoordinator` (one partition) waits until every
   catalogue market has passed a boundary, then closes the epoch for every scheduler partition.
3. :class:`~streams.pipeline.scheduler.PartitionScheduler` (one per job-events partition) drives a
   :class:`solver.engine.Engine` with its jobs' events and the epochs, and answers
   provisioning decisions.

Every stage is a deterministic function of its partition's log, so rebuilding one from the log
restores it exactly; stages ignore what they have already seen.
:class:`streams.pipeline.driver.Driver` feeds them messages and turns whatever a message makes
them raise into a dead letter.
"""

from __future__ import annotations

from collections.abc import Sequence

from streams.contract.events import Envelope, ProvisioningDecision
from streams.pipeline.coordinator import EpochCoordinator
from streams.pipeline.market_stage import MarketStage
from streams.pipeline.scheduler import PartitionScheduler
from streams.pipeline.stage import RejectedEvent, epoch_index, utc

__all__ = ["EpochCoordinator", "MarketStage", "PartitionScheduler", "RejectedEvent",
           "decision_rows", "epoch_index", "utc"]


def decision_rows(decisions: Sequence[Envelope]) -> list[tuple[int, str, str, int, int]]:
    """``(epoch, job, market, spot, on_demand)`` of allocating decisions, sorted: the form in
    which an in-process replay and a Kafka run are compared."""
    return sorted(
        (d.epoch, d.job_id, d.market, d.spot, d.on_demand)
        for d in decisions
        if isinstance(d, ProvisioningDecision) and not d.reason.startswith("released")
    )
