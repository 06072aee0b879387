"""The risk-aware planner: it plans on the markets' forecast distributions, not on point
forecasts, and keeps every hard deadline with an on-demand fallback.

* A job at a fixed instance count (``N_min = N_max``) that may use spot in one market only
  follows a stochastic dynamic program (:mod:`solver.optimize.stochastic`) for that market: it
  minimises the expected bill minus the value of finishing over (slack, mode, capacity, age of
  the capacity run), with capacity following the market's run hazards by age and time of day.
  Restart overhead is priced as a risk: entering spot pays it, and the program knows how likely
  the run is to end before the overhead pays off. A program is solved once and followed — it is
  a rule for every state — and re-solved every ``resolve_hours`` of the job's life on the newest
  outlook (or sooner when the job's state leaves what it covers). A job seeing fewer than its
  instances left in its market reads that as a slot without capacity.
* A fixed-count job allowed in several spot markets, or whose one market another such job may
  use, follows the prediction-free rule instead: the program models one job against one market,
  and such a job can move to another market, or competes with the scheduler's own jobs.
  Spot goes first to the jobs that would buy on-demand for want of it, then to the others; in
  each group first to the jobs already running on it (then in the simulator's priority order).
* Any other job (an instance range, or one confined to a market with no run hazards learned
  yet) is planned by Committed Horizon Control on the distributions
  (:class:`~solver.policies.forecast_sources.DistributionForecast`: spot only where it is
  ``confidence`` likely, priced with the expected cost of losing it), re-solved every slot, on
  the spot the fixed-count jobs left.

Before an allocation of a fixed-count job runs, :func:`~solver.policies.common.finishable`
checks that on-demand could still meet the hard deadline should this slot's spot be lost;
where it could not, the job runs on-demand at ``N_max`` (the soft deadline is the value
function's business). Committed Horizon Control applies its own safety net.
"""

from __future__ import annotations

from typing import ClassVar

from solver.market import MarketData
from solver.policies.chc import WINDOW_LIMITS, WindowPrograms
from solver.policies.forecast_sources import DistributionForecast, ForecastSource, make_source
from solver.policies.prediction_free import ThresholdRule
from solver.policies.programs import SingleJobPrograms
from solver.policies.routing import Composition


class RiskAware(Composition):
    """The risk-aware planner (module doc), planning on ``forecast`` (default: the learned
    distributions)."""

    name = "risk-aware"
    PARAMETERS: ClassVar[dict[str, type]] = {
        "forecast": str, "resolve_hours": float, "window_hours": float, "confidence": float,
        "solves": int, "markets": int}
    CONTEXT: ClassVar[tuple[str, ...]] = (
        "data", "source")

    def __init__(
        self,
        forecast: str = "distribution",
        resolve_hours: float = 6.0,
        window_hours: float = 24.0,
        confidence: float = 0.9,
        solves: int = 12,
        markets: int = 3,
        data: MarketData | None = None,
        source: ForecastSource | None = None,
    ) -> None:
        if source is None:
            source = (DistributionForecast(confidence) if forecast == "distribution"
                      else make_source(forecast, data))
        self.forecast = source
        self.resolve_hours = resolve_hours
        self.window_hours = window_hours
        self.confidence = confidence
        self.solves = solves
        self.markets = markets
        super().__init__(
            SingleJobPrograms(source, resolve_hours, None, solves, markets),
            WindowPrograms(window_hours, 1, "decomposed", source, "highs", WINDOW_LIMITS),
            ThresholdRule())

    def __repr__(self) -> str:
        return (f"RiskAware(resolve_hours={self.resolve_hours}, "
                f"window_hours={self.window_hours}, confidence={self.confidence}, "
                f"solves={self.solves}, markets={self.markets}, "
                f"forecast={type(self.forecast).__name__})")
