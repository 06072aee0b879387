"""Online policy selection (DESIGN §2, algorithm 4): one pool member per job, learned online.

Rounds are jobs. When a job first appears, the learner draws a member from the pool with a
seeded RNG and that member decides for the job until it ends. Each member sees the observation
filtered to its own jobs; since members cannot see each other's jobs, a spot request that jobs
earlier in spot-priority order already hold moves to the cheapest allowed market with room
left (else it is cut to what is left). The learner gets its feedback
once the job's hard deadline has passed: only then is the market history every member would
have run on realised. Each member is then replayed on that job alone through
:func:`~solver.simulator.simulate` (jobs settled together whose allowed markets are disjoint
share one replay: they cannot compete for capacity), on market data built from the observed
history (closed slots only, so never the future; each slot's realised values stand in for its
boundary values). Member ``k``'s utility
``u_k`` becomes the loss

    ``clip((max_i u_i - u_k) / (loss_scale * C), 0, 1)``

with ``C`` the job's on-demand bill (``n_max`` instances in the cheapest allowed market for the
whole workload plus one restart overhead): the round's best member loses 0, and a member
``loss_scale × C`` worse (a missed deadline with its penalty, say) loses 1. Subtracting the
round's best utility shifts every member's loss by the same amount, which leaves regret
unchanged; the scale is fixed per job, so a loss is a share of that job's on-demand bill.

**Fallback.** ``forecast_error(obs)`` is read at every boundary the policy is called at (so a
monitor such as :class:`~solver.policies.forecast_error.ForecastErrorMonitor` sees each slot);
while it exceeds ``error_threshold``, new jobs go to the ``fallback`` member (prediction-free)
whatever the weights. Hedge still learns from every replay; EXP3 learns only from the rounds it
played itself.

Learning state (learner, RNG, regret trace) lives in a :class:`Selector`, which outlives one
simulation so a sequence of episodes keeps learning; a policy instance serves one simulation.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from solver.experts import LEARNERS, Exp3, Hedge, RegretTrace, Round
from solver.job import Allocation, Job
from solver.market import Market, MarketData
from solver.policies.forecast_sources import ForecastSource, LearnedForecast
from solver.policy import Decision, JobView, Observation, Policy
from solver.simulator import simulate


@dataclass(frozen=True)
class Member:
    """A pool member: a registered policy name and its parameters."""

    policy: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.policy}({args})"


MemberFactory = Callable[[Member], Policy]
"""Builds a fresh policy for a member (live play and every counterfactual replay)."""

FALLBACK = Member("prediction-free", {"theta": 1.0, "sigma": 1.0})
"""The member new jobs go to while forecasts are poor."""


def registry_members(forecast: Callable[[], ForecastSource] = LearnedForecast) -> MemberFactory:
    """Members built by the policy registry; one whose policy takes a ``forecast`` source and
    has none among its parameters gets a fresh one from ``forecast`` (default: the online
    learned forecasters, so play stays causal)."""
    from solver.policies import POLICIES, make_policy

    def build(member: Member) -> Policy:
        params = dict(member.params)
        factory = POLICIES.get(member.policy)
        if factory is not None and "forecast" in inspect.signature(factory).parameters:
            params.setdefault("forecast", forecast())
        return make_policy(member.policy, **params)

    return build


PREDICTION_FREE_GRID = tuple(Member("prediction-free", {"theta": theta, "sigma": sigma})
                             for theta in (1.0, 0.35) for sigma in (0.5, 0.75, 1.0))
"""Prediction-free over price thresholds ``θ`` and safety shares ``σ``."""

CHC_GRID = tuple(Member("chc", {"window": w, "commitment": v})
                 for w, v in ((6, 1), (12, 1), (6, 2)))
"""Committed Horizon Control over windows ``w`` and commitments ``v`` (slots)."""


def default_pool() -> tuple[Member, ...]:
    """Both grids; CHC only when it is registered."""
    from solver.policies import POLICIES

    return PREDICTION_FREE_GRID + (CHC_GRID if "chc" in POLICIES else ())


def on_demand_bill(job: Job, markets: Sequence[Market]) -> float:
    """``n_max`` on-demand instances in the cheapest allowed market for the whole workload
    plus one restart overhead, USD."""
    price = min(m.on_demand_price for m in markets if job.may_use(m.key))
    hours = job.restart_overhead_hours + job.hours_to_finish(job.workload, job.n_max)
    return job.n_max * price * hours


def round_losses(utilities: np.ndarray, bill: float, loss_scale: float) -> np.ndarray:
    """Every member's loss in ``[0, 1]`` for one job from their utilities (module doc)."""
    return np.clip((utilities.max() - utilities) / (loss_scale * bill), 0.0, 1.0)


@dataclass(frozen=True, slots=True)
class Settlement:
    """One settled round: the job, the member it ran under (``fallback``: sent there by the
    fallback rule) and every member's loss."""

    job_id: str
    played: int
    fallback: bool
    losses: np.ndarray


class Selector:
    """The learning state of policy selection over ``pool``: learner (``"hedge"`` or
    ``"exp3"``; ``horizon`` rounds if known, else the doubling trick), seeded RNG, the loss
    scale (module doc) and the regret trace."""

    def __init__(
        self,
        pool: Sequence[Member] | None = None,
        learner: str = "hedge",
        horizon: int | None = None,
        seed: int = 0,
        loss_scale: float = 0.25,
    ) -> None:
        if not (math.isfinite(loss_scale) and loss_scale > 0):
            raise ValueError(f"loss_scale={loss_scale!r}: expected a positive share of the "
                             "on-demand bill")
        self.loss_scale = loss_scale
        self.pool = tuple(default_pool() if pool is None else pool)
        if not self.pool:
            raise ValueError("pool: expected at least one member")
        labels = [m.label for m in self.pool]
        if len(set(labels)) != len(labels):
            raise ValueError(f"pool: duplicate members in {labels}")
        if learner not in LEARNERS:
            raise ValueError(f"learner={learner!r}: expected one of {', '.join(LEARNERS)}")
        self.learner: Hedge | Exp3 = LEARNERS[learner](len(self.pool), horizon)
        self.rng = np.random.default_rng(seed)
        self.trace = RegretTrace(len(self.pool))
        self.settled: list[Settlement] = []

    def index(self, member: Member) -> int:
        labels = [m.label for m in self.pool]
        if member.label not in labels:
            raise ValueError(f"member {member.label}: expected one of the pool {labels}")
        return labels.index(member.label)

    def learn(self, job_id: str, round_: Round, played: int, fallback: bool,
              losses: np.ndarray) -> None:
        """Record one settled round and update the learner (EXP3 only on its own draws)."""
        self.trace.record(round_.probabilities, losses)
        if played == round_.played or not isinstance(self.learner, Exp3):
            self.learner.update(round_, losses)
        self.settled.append(Settlement(job_id, played, fallback, losses))


@dataclass(slots=True)
class _Assignment:
    job: Job
    round_: Round
    played: int
    fallback: bool


class PolicySelection:
    """Plays the member drawn for each job and learns from counterfactual replays (module
    doc). ``member_factory`` builds members (default: the policy registry)."""

    name = "policy-selection"

    def __init__(
        self,
        selector: Selector | None = None,
        member_factory: MemberFactory | None = None,
        forecast_error: Callable[[Observation], float] | None = None,
        error_threshold: float = math.inf,
        fallback: Member = FALLBACK,
    ) -> None:
        if math.isnan(error_threshold):
            raise ValueError(f"error_threshold={error_threshold!r}: expected a number")
        self.selector = selector if selector is not None else Selector()
        self.member_factory = member_factory or registry_members()
        self.forecast_error = forecast_error
        self.error_threshold = error_threshold
        self.fallback = self.selector.index(fallback)
        self._live: dict[int, Policy] = {}
        self._assigned: dict[str, _Assignment] = {}

    def decide(self, obs: Observation) -> Decision:
        due = [a for a in self._assigned.values() if a.job.hard_deadline <= obs.time]
        if due:
            self._settle(due, _realised(obs))
        error = self.forecast_error(obs) if self.forecast_error is not None else 0.0
        for view in obs.jobs:
            if view.id not in self._assigned:
                round_ = self.selector.learner.draw(self.selector.rng)
                fallback = error > self.error_threshold
                played = self.fallback if fallback else round_.played
                self._assigned[view.id] = _Assignment(view.job, round_, played, fallback)
        groups: dict[int, list[JobView]] = {}
        for view in obs.jobs:
            groups.setdefault(self._assigned[view.id].played, []).append(view)
        answers: dict[str, Allocation] = {}
        for k, views in groups.items():
            policy = self._live.get(k)
            if policy is None:
                policy = self._live[k] = self.member_factory(self.selector.pool[k])
            answer = policy.decide(replace(obs, jobs=tuple(views)))
            answers.update((v.id, answer[v.id]) for v in views if v.id in answer)
        return _share_spot(obs, answers)

    def settle(self, realised: MarketData) -> None:
        """Settle every job whose hard deadline lies within ``realised``: the market data of
        this simulation as it turned out, handed over once the simulation is over."""
        end = realised.slot_start(realised.n_slots)
        self._settle([a for a in self._assigned.values() if a.job.hard_deadline <= end],
                     realised)

    def _settle(self, due: list[_Assignment], realised: MarketData) -> None:
        due = sorted(due, key=lambda a: (a.job.hard_deadline, a.job.id))
        utilities: dict[str, list[float]] = {a.job.id: [] for a in due}
        for member in self.selector.pool:
            for group in independent_groups([a.job for a in due], realised):
                result = simulate(realised, group, self.member_factory(member))
                for job, outcome in zip(group, result.jobs, strict=True):
                    utilities[job.id].append(outcome.utility)
        for a in due:
            bill = on_demand_bill(a.job, realised.markets)
            losses = round_losses(np.array(utilities[a.job.id]), bill, self.selector.loss_scale)
            self.selector.learn(a.job.id, a.round_, a.played, a.fallback, losses)
            del self._assigned[a.job.id]


def _share_spot(obs: Observation, answers: dict[str, Allocation]) -> dict[str, Allocation]:
    """Members decide without seeing each other's jobs; in spot-priority order, a spot request
    that jobs before it already hold moves to the cheapest allowed market with room (the
    current one first). When there is none, the spot is cut to what is left, and the job idles
    if that leaves it under ``N_min`` (the simulator would have refused the request)."""
    left = np.array(obs.availability_now)
    out: dict[str, Allocation] = {}
    for view in obs.jobs:
        choice = answers.get(view.id)
        if choice is None:
            continue
        if choice.spot > 0 and left[choice.market] < choice.spot:
            current = view.current.market if view.current is not None else -1
            room = [(float(obs.price_now[i]), i != current, i)
                    for i, m in enumerate(obs.markets)
                    if view.job.may_use(m.key) and left[i] >= choice.spot]
            if room:
                choice = Allocation(min(room)[2], choice.spot, choice.on_demand)
            else:
                choice = Allocation(choice.market, int(left[choice.market]), choice.on_demand)
                if choice.total < view.job.n_min:
                    continue
        left[choice.market] -= choice.spot
        out[view.id] = choice
    return out


def independent_groups(jobs: list[Job], data: MarketData) -> list[list[Job]]:
    """Jobs split, in order, into groups whose allowed markets are pairwise disjoint: such jobs
    never compete for capacity, so replaying a group at once equals replaying each alone."""
    groups: list[tuple[list[Job], set[str]]] = []
    for job in jobs:
        markets = set(job.allowed_markets) if job.allowed_markets is not None else set(data.index)
        for members, used in groups:
            if not used & markets:
                members.append(job)
                used |= markets
                break
        else:
            groups.append(([job], markets))
    return [members for members, _ in groups]


def _realised(obs: Observation) -> MarketData:
    """The closed slots ``0 .. slot-1`` as market data on the observation's own slot grid."""
    return MarketData.from_slots(
        obs.markets, obs.time - obs.slot * obs.slot_seconds, obs.slot_seconds,
        np.array(obs.price_history), np.array(obs.availability_history),
    )
