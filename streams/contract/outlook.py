"""The wire form of a market's outlook: the probabilistic forecast a market stage makes at a
slot boundary and every scheduler plans on.

It holds, for the ``h`` slots starting at the boundary, the quantiles of each slot's mean spot
price and the probability of spot capacity, and the compact models behind them (capacity
levels, run hazards by age and time of day, the current run), with the forecaster's running
errors. ``null`` stands for a number nothing is known of yet. A reader rebuilds the outlook
exactly from these numbers (JSON numbers round-trip).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from streams.contract.fields import (
    MAX_ITEMS,
    Amount,
    Available,
    Int,
    NonNegativeAmount,
    Probability,
)

Row = Annotated[tuple[Probability, ...], Field(max_length=MAX_ITEMS)]


class Hazards(BaseModel):
    """Run hazards: ``hazard[state][age bucket][day bucket]`` is the probability that a run of
    spot capacity (state 1) or none (0) of that age ends at the next slot, when that slot
    starts in that part of the day; ages are bucketed at ``age_edges`` (slots); ``period`` is
    the slot cycle (a day, or a week for slots of a day or more) and ``next_position`` the
    cycle position of the first slot after the last one learned."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    age_edges: Annotated[tuple[Annotated[Int, Field(ge=1, le=2**31)], ...],
                         Field(min_length=1, max_length=MAX_ITEMS)]
    period: Annotated[Int, Field(ge=1, le=2**31)]
    next_position: Annotated[Int, Field(ge=0, le=2**31)]
    hazard: Annotated[tuple[Annotated[tuple[Row, ...], Field(max_length=MAX_ITEMS)], ...],
                      Field(min_length=2, max_length=2)]


class Outlook(BaseModel):
    """A market's outlook at a boundary (module doc); ``price[q][j]`` is the
    ``quantile_levels[q]`` quantile of the mean spot price (USD per instance-hour) of slot
    ``j`` from the boundary, ``capacity_probability[j]`` the probability of spot capacity for
    the whole slot and ``capacity_levels[j][l - 1]`` that of ``l`` instances given some."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    quantile_levels: Annotated[tuple[Probability, ...], Field(min_length=1, max_length=99)]
    price: Annotated[tuple[Annotated[tuple[Amount | None, ...], Field(max_length=MAX_ITEMS)],
                           ...], Field(min_length=1, max_length=99)]
    capacity_probability: Row
    capacity_levels: Annotated[tuple[Row, ...], Field(max_length=MAX_ITEMS)]
    level_shares: Annotated[tuple[NonNegativeAmount, ...],
                            Field(min_length=1, max_length=MAX_ITEMS)]
    last_level: Available = Field(description="Last positive capacity level (0 before any)")
    level_persistence: Probability = Field(
        description="Chance that a capacity level repeats from one slot with capacity to the next")
    hazards: Hazards | None = Field(description="Absent while no run was observed")
    run: Annotated[tuple[Annotated[Int, Field(ge=0, le=1)],
                         Annotated[Int, Field(ge=1, le=2**31)],
                         Annotated[Int, Field(ge=0, le=2**31)]] | None,
                   Field(description="The run in the last observed slot: [state, age in slots, "
                         "unobserved slots since]")]
    price_error: NonNegativeAmount | None = Field(description="Running price MAPE, percent")
    availability_error: NonNegativeAmount | None = Field(description="Running Brier score")
