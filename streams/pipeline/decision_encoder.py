"""The decision encoder: the engine's slot decision as provisioning decisions on the wire.

Every job the engine decided gets a ``run`` or ``idle`` decision that explains itself (what
the policy saw of the market, the forecast it used, the bill it expects, the slack left, and
the move of its checkpoint when it launches away from it), and every job that left gets a
``release`` with its cause.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from solver.decision import Departure, Explanation, SlotDecision
from solver.job import Allocation
from streams.contract import Envelope, MarketView, ProvisioningDecision


@dataclass(frozen=True, slots=True)
class DecidedSlot:
    """Where decisions of one epoch belong: the slot, the policy and the catalogue's keys."""

    epoch: int
    start: datetime
    seconds: float
    policy: str
    markets: tuple[str, ...]


def run_or_idle(slot: DecidedSlot, decided: SlotDecision, job_id: str) -> ProvisioningDecision:
    """The decision of a job the engine decided, explained."""
    allocation = decided.allocations[job_id]
    why = decided.explain(job_id)
    return _decision(
        slot, job_id, allocation, "run" if allocation.total else "idle",
        expected_cost_usd=why.expected_cost_usd, slack_seconds=why.slack_seconds,
        planner=why.planner or None, market_view=MarketView(
            spot_price_now=why.spot_price_now, spot_available_now=why.spot_available_now,
            on_demand_price=why.on_demand_price, price_forecast=_known(why.price_forecast),
            capacity_probability=_known(why.capacity_probability),
            spot_denied=why.spot_denied, **_move(why)),
        reason=(_reason(allocation) + (f"; planner {why.planner}: {why.planner_reason}"
                                       if why.planner_reason else ""))[:500])


def release(slot: DecidedSlot, job_id: str, departure: Departure) -> ProvisioningDecision:
    """The zero-instance decision of a job that left, in the market it last ran in."""
    words = departure.outcome.replace("_", " ")
    reason = f"released: {words}" + (f": {departure.reason}" if departure.reason else "")
    return _decision(slot, job_id, Allocation(departure.market), "release",
                     release_cause=departure.outcome, expected_cost_usd=0.0, slack_seconds=0.0,
                     reason=reason[:500])


def _decision(slot: DecidedSlot, job_id: str, allocation: Allocation, action: str,
              **fields: object) -> ProvisioningDecision:
    return ProvisioningDecision.model_validate({
        "event_time": slot.start, "job_id": job_id, "epoch": slot.epoch,
        "slot_start": slot.start, "slot_seconds": slot.seconds,
        "market": slot.markets[allocation.market], "spot": allocation.spot,
        "on_demand": allocation.on_demand, "policy": slot.policy, "action": action, **fields})


def _move(why: Explanation) -> dict[str, object]:
    """The market view's fields of the checkpoint move a decision makes (none when none)."""
    if not why.move.moves:
        return {}
    return {"move_from": str(why.checkpoint), "move_locality": why.move.locality,
            "move_egress_usd": why.move.egress_usd,
            "move_transfer_seconds": why.move.transfer_seconds}


def _known(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _reason(allocation: Allocation) -> str:
    if allocation.total == 0:
        return "idle"
    parts = [f"{n} {kind}" for n, kind in ((allocation.spot, "spot"),
                                           (allocation.on_demand, "on-demand")) if n]
    return "run " + " + ".join(parts)


def allocation_rows(decisions: Sequence[Envelope]) -> list[tuple[int, str, str, int, int]]:
    """``(epoch, job, market, spot, on_demand)`` of the decisions that are not releases,
    sorted: the form in which an in-process replay and a pipeline run are compared."""
    return sorted(
        (d.epoch, d.job_id, d.market, d.spot, d.on_demand)
        for d in decisions
        if isinstance(d, ProvisioningDecision) and d.action != "release"
    )
