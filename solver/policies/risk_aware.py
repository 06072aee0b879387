"""The risk-aware planner: it plans on the markets' forecast distributions, not on point
forecasts, and keeps every hard deadline with an on-demand fallback.

A composition of planners (:mod:`solver.policies.routing`), each job's planner decided when it
is admitted and kept for its life:

* a job at a fixed instance count (``N_min = N_max``) follows stochastic dynamic programs
  (:mod:`solver.policies.stochastic_planner`), one per market worth planning it in: in one
  market that market's program; in several, the cheapest action over the programs of the few
  markets worth it, moves between them priced (restart overhead, transfer time, egress);
* a fixed-count job that, when admitted, shares a market it may use with another fixed-count
  job follows the prediction-free rule (:class:`~solver.policies.prediction_free.ThresholdRule`,
  safety share ``fixed_sigma``, jobs in the simulator's priority order): a program knows the
  market, not the jobs that will come and take its spot; so does one whose markets' slots keep
  too little of the spot their boundaries show
  (:func:`~solver.policies.routing.boundaries_kept`): a program reads the boundary as the
  slot's capacity;
* a job of an instance range that may use spot follows the same rule (safety share ``sigma``)
  when a market it may use usually offers its ``N_max`` instances when it has spot at all
  (:func:`~solver.policies.routing.roomy`): there spot is taken when it shows up, a reserve of
  slack kept, rather than planned on one path of a capacity the job shares with others;
* any other job (an instance range on markets of little spot, or one whose markets have no run
  hazards learned yet) is planned by Committed Horizon Control's window program on the
  distributions (:class:`~solver.policies.forecast_sources.DistributionForecast`: spot only
  where it is ``confidence`` likely, priced with the expected cost of losing it), re-solved
  every slot, on the spot the other planners' jobs left.

That is the routing table (``choose=routes``, the default). With ``choose=evidence`` a job's
planner is instead chosen for its class of job by a backtest on the market's recent closed
history (:mod:`solver.policies.evidence`), the routing table itself one of the options and each
class's default, re-run every ``cadence_hours`` of market time, a choice kept unless beaten by
``margin`` (:data:`EVIDENCE_MARGIN`) of the jobs' on-demand bill; the routing table's answer
until enough history is closed.
"""

from __future__ import annotations

from solver.market import MarketData
from solver.policies.base import PolicyBase
from solver.policies.chc import WINDOW_LIMITS, WindowPlanner
from solver.policies.evidence import EvidenceChooser
from solver.policies.forecast_sources import DistributionForecast, ForecastSource, make_source
from solver.policies.prediction_free import ThresholdRule, check_safety_share
from solver.policies.routing import Composition, PlannerName
from solver.policies.stochastic_planner import StochasticPlanner

EVIDENCE_MARGIN = 0.25
"""By how much of the replayed jobs' on-demand bill a backtest's winner must beat a class's
incumbent to replace it. Chosen on the tuning seeds of the market shapes by the sweep on
docs/results/shapes-evidence.md (``python bench/results.py --windows 10 --page
shapes-evidence``, 10 windows a shape): mean utility over the optimum's across the 24 shapes
0.763, 0.773, 0.777 and 0.782 at margins 0.1, 0.15, 0.25 and 0.5, mean cost over the optimum's
1.413, 1.412, 1.415 and 1.425; 0.25 is within 0.005 of 0.5's utility at 0.010 less cost."""

FIXED_SIGMA = 1.0
"""The rule's safety share for a fixed-count job the routing table sends to it (one sharing a
market, or on markets whose slots keep too little of the spot their boundaries show). Chosen
on the tuning seeds of the market shapes (``spotsched evaluate --scenario shapes --seeds tune
--windows 10 --policy risk-aware:fixed_sigma=0.5 --policy risk-aware:fixed_sigma=0.75 --policy
risk-aware``) at shares 0.5 / 0.75 / 1: one job on 3 zones, mean cost 66.01 / 67.33 / 65.46 USD
(0 GB) and 66.48 / 65.41 / 65.44 USD (50 GB), on 6, 13 and 30 zones the same at every share;
fleets of fixed-count jobs, mean utility per job over their 8 shapes 90.95 / 91.72 / 91.71
USD. Uniform Progress's share, as ``chc``'s rule; a job of an instance range keeps ``sigma``
(chosen on ``scarce``, where every job is one)."""

CHOICES = ("routes", "evidence")
"""How a job's planner is chosen: by the routing table, or on the market's evidence
(:mod:`solver.policies.evidence`)."""


class RiskAware(Composition, PolicyBase):
    """The risk-aware planner (module doc), planning on the ``forecast`` kind (default: the
    learned distributions) or on a given ``source``; a job allowed in several markets is
    planned in at most ``markets`` of them."""

    name = "risk-aware"
    tags = frozenset({"needs_forecasts"})
    context = ("data", "source", "only")
    quick = ({"window_hours": 3.0},
             {"choose": "evidence", "window_hours": 3.0, "backtest_hours": 2.0,
              "cadence_hours": 1.0})

    def __init__(
        self,
        forecast: str = "distribution",
        resolve_hours: float = 6.0,
        window_hours: float = 24.0,
        confidence: float = 0.9,
        solves: int = 12,
        markets: int = 3,
        sigma: float = 0.5,
        fixed_sigma: float = FIXED_SIGMA,
        choose: str = "routes",
        backtest_hours: float = 48.0,
        cadence_hours: float = 24.0,
        margin: float = EVIDENCE_MARGIN,
        data: MarketData | None = None,
        source: ForecastSource | None = None,
        only: PlannerName | None = None,
    ) -> None:
        if choose not in CHOICES:
            raise ValueError(f"choose={choose!r}: expected one of {', '.join(CHOICES)}")
        check_safety_share("sigma", sigma)
        check_safety_share("fixed_sigma", fixed_sigma)
        if source is None:
            source = (DistributionForecast(confidence) if forecast == "distribution"
                      else make_source(forecast, data))
        self.source = source
        self.forecast = forecast
        self.resolve_hours = resolve_hours
        self.window_hours = window_hours
        self.confidence = confidence
        self.solves = solves
        self.markets = markets
        self.sigma = sigma
        self.fixed_sigma = fixed_sigma
        self.choose = choose
        self.backtest_hours = backtest_hours
        self.cadence_hours = cadence_hours
        self.margin = margin
        chooser = (EvidenceChooser(self.routed_to, backtest_hours, cadence_hours, margin)
                   if choose == "evidence" and only is None else None)
        super().__init__(
            StochasticPlanner(source, resolve_hours, None, solves, markets),
            WindowPlanner(window_hours, 1, "decomposed", source, "highs", WINDOW_LIMITS),
            ThresholdRule(sigma, behind_first=False, fixed_sigma=fixed_sigma), ranged_rule=True,
            chooser=chooser, only=only)

    def routed_to(self, planner: PlannerName | None) -> RiskAware:
        """This policy with every job routed to ``planner``, or by the routing table
        (``None``): the evidence's backtests."""
        return self.clone(choose="routes", source=self.source, only=planner)
