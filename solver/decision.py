"""What the engine decided at one slot boundary, and why.

:meth:`solver.engine.Engine.decide` returns a :class:`SlotDecision`: the observation the policy
was given, every active job's allocation, the jobs it failed (and what the policy raised), and
the jobs that left since the last boundary. :meth:`SlotDecision.explain` says, per job, what an
operator needs to read the decision alone: the bill it expects, the slack it saw, and the
forecast of its market it was made on. The simulator, the streaming decision encoder and the
metrics all read this one value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from solver.job import Allocation
from solver.migration import STAY, Move, Place
from solver.observation import JobView, Observation

Outcome = Literal["finished", "cancelled", "deadline_missed", "failed"]
"""How a job leaves: finished by its hard deadline, cancelled, the hard deadline passed before
it finished (it may have finished after it), or failed (it could not be decided)."""


@dataclass(frozen=True, slots=True)
class Explanation:
    """One job's part of a slot decision, read alone.

    ``expected_cost_usd``: the slot's bill at the boundary's prices, with the egress of moving
    the checkpoint; ``slack_seconds``: the hard deadline minus the finish on on-demand at
    ``n_max`` started now (one restart overhead paid); the spot price and count in force at the
    boundary and the on-demand price of the decision's market; ``price_forecast``: the median
    forecast of that market's mean spot price over the slot, and ``capacity_probability``: the
    forecast probability of spot capacity for the whole slot (``NaN`` while the forecaster
    knows nothing); ``spot_denied``: that market denied spot (refused or lost it) since it last
    held spot through a whole slot (:attr:`~solver.observation.Observation.denied`); ``move``:
    what launching there moves (:mod:`solver.migration`; a launch away from the checkpoint's
    place ``checkpoint``), :data:`~solver.migration.STAY` when the job keeps what it holds;
    ``planner``: the planner that decided (:mod:`solver.policies.routing`; a policy not made of
    planners decides itself: its name), ``planner_reason`` why it has that planner, where the
    policy says (e.g. the backtest it was chosen on, :mod:`solver.policies.evidence`).
    """

    expected_cost_usd: float
    slack_seconds: float
    spot_price_now: float
    spot_available_now: int
    on_demand_price: float
    price_forecast: float
    capacity_probability: float
    spot_denied: bool = False
    move: Move = STAY
    checkpoint: Place | None = None
    planner: str = ""
    planner_reason: str = ""


@dataclass(frozen=True, slots=True)
class Departure:
    """A job that left: the market it last ran in and how it ended."""

    market: int
    outcome: Outcome
    reason: str = ""


@dataclass(frozen=True)
class SlotDecision:
    """The engine's decision at the boundary of ``observation.slot`` (module doc).

    ``allocations`` has every active job the policy decided (zero instances when idle), in
    spot-priority order; ``departures`` the jobs that left since the last boundary (those
    decided then and not now) and the jobs failed now (``outcome`` ``failed``, ``reason`` why);
    ``policy_errors`` what the policy raised deciding the jobs together, when the engine then
    decided them one by one (``isolate_failures``); ``planners`` the planner that decided each
    allocated job, ``planner_reasons`` why it has that planner where the policy says.
    """

    observation: Observation
    allocations: Mapping[str, Allocation]
    departures: Mapping[str, Departure]
    policy_errors: tuple[Exception, ...] = ()
    planners: Mapping[str, str] = field(default_factory=dict)
    planner_reasons: Mapping[str, str] = field(default_factory=dict)

    @cached_property
    def _views(self) -> dict[str, JobView]:
        return {view.id: view for view in self.observation.jobs}

    def view(self, job_id: str) -> JobView:
        """What the policy saw of an active job."""
        try:
            return self._views[job_id]
        except KeyError:
            raise KeyError(f"job_id={job_id!r}: expected a job active at slot "
                           f"{self.observation.slot}") from None

    def explain(self, job_id: str) -> Explanation:
        """The explanation of an allocated job's decision (computed when asked)."""
        obs = self.observation
        view = self.view(job_id)
        allocation = self.allocations[job_id]
        m = allocation.market
        on_demand_price = obs.markets[m].on_demand_price
        price_now = float(obs.price_now[m])
        outlook = obs.outlooks[m]
        launches = allocation.total > 0 and allocation != view.current
        move = obs.move(view, m) if launches else STAY
        return Explanation(
            expected_cost_usd=(allocation.spot * price_now
                               + allocation.on_demand * on_demand_price) * obs.slot_hours
            + move.egress_usd,
            slack_seconds=view.job.slack(obs.time, view.remaining),
            spot_price_now=price_now,
            spot_available_now=int(obs.availability_now[m]),
            on_demand_price=on_demand_price,
            price_forecast=float(outlook.price_median[0]) if outlook.horizon else math.nan,
            capacity_probability=(float(outlook.capacity.probability[0]) if outlook.horizon
                                  else math.nan),
            spot_denied=m in obs.denied,
            move=move,
            checkpoint=view.checkpoint,
            planner=self.planners.get(job_id, ""),
            planner_reason=self.planner_reasons.get(job_id, ""),
        )
