"""Online policy selection: one pool member per job, the choice learned online.

Rounds are jobs. When a job first appears, the learner draws a member from the pool with a
seeded RNG, and that member decides for the job until it ends. Members cannot see each other's
jobs, so a spot request that jobs earlier in spot-priority order already hold moves to the
cheapest allowed market with room left (else it is cut to what is left).

**Counterfactuals, incrementally.** Beside live play, every member runs a *shadow*: an
:class:`~solver.engine.Engine` with every job the policy has seen, all under that member,
advanced in lockstep with the live slots (decided at each boundary with the boundary's values
and the shared outlooks, settled with each closed slot). Once every shadow is done with a job
(finished, or past its hard deadline), member ``k``'s utility ``u_k`` for it is read off its
shadow and becomes the loss

    ``clip((max_i u_i - u_k) / (loss_scale * C), 0, 1)``

with ``C`` the job's on-demand bill (``n_max`` instances in the cheapest allowed market for the
whole workload plus one restart overhead): the round's best member loses 0, one
``loss_scale × C`` worse loses 1. Shadows see only what the live policy saw: job submissions
and the market, not progress reports or cancellations.

The learner is full-information :class:`~solver.experts.Hedge` (every member's loss is known)
with an anytime rate scaled by ``rate``, or :class:`~solver.experts.Exp3` on the played
member's loss only.

**Fallback.** ``forecast_error(obs)`` (default: the larger of the outlooks' mean running price
error, as a share, and mean availability Brier score) is read at every boundary; while it
exceeds ``error_threshold``, new jobs go to the ``fallback`` member whatever the weights.

Learning state (learner, RNG, regret trace) lives in a :class:`Selector`, which may outlive one
policy instance (e.g. across the windows of an evaluation case).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from solver.engine import Engine
from solver.experts import LEARNERS, Exp3, Hedge, RegretTrace, Round
from solver.forecast.tracking import combined_error
from solver.job import Allocation, Allocations, Job
from solver.market import Market
from solver.observation import JobView, Observation
from solver.policies.base import PolicyBase
from solver.policies.protocol import Policy, planner_of, planner_reason_of
from solver.policies.spec import PolicySpec, format_pool, parse_pool

DEFAULT_POOL = (
    PolicySpec("risk-aware"),
    PolicySpec("prediction-free"),
    PolicySpec.of("prediction-free", sigma=0.75),
    PolicySpec.of("prediction-free", sigma=0.5),
    PolicySpec("uniform-progress"),
)
"""The risk-aware planner and prediction-free rules over safety shares ``σ``."""

FALLBACK = PolicySpec("prediction-free")
"""The member new jobs go to while forecasts are poor."""

DEFAULT_POOL_TEXT = format_pool(DEFAULT_POOL)
FALLBACK_TEXT = format_pool((FALLBACK,))
"""The default pool and fallback as a spec writes them."""

Build = Callable[..., Policy]
"""Builds a policy from a spec and context (the registry's ``make_policy``)."""


def on_demand_bill(job: Job, markets: Sequence[Market]) -> float:
    """``n_max`` on-demand instances in the cheapest allowed market for the whole workload
    plus one restart overhead, USD."""
    price = min(m.on_demand_price for m in markets if job.may_use(m.key))
    return job.n_max * price * job.hours_needed(job.workload, job.n_max)


def round_losses(utilities: np.ndarray, bill: float, loss_scale: float) -> np.ndarray:
    """Every member's loss in ``[0, 1]`` for one job from their utilities (module doc)."""
    losses: np.ndarray = np.clip((utilities.max() - utilities) / (loss_scale * bill), 0.0, 1.0)
    return losses


def outlook_error(obs: Observation) -> float:
    """The outlooks' running forecast error over markets
    (:func:`~solver.forecast.tracking.combined_error`; 0 while nothing was scored)."""
    outlooks = [obs.outlooks[m] for m in range(len(obs.markets))]
    error = combined_error([o.price_error for o in outlooks],
                           [o.availability_error for o in outlooks])
    return 0.0 if math.isnan(error) else error


@dataclass(frozen=True, slots=True)
class Settlement:
    """One settled round: the job, the member it ran under (``fallback``: sent there by the
    fallback rule), and every member's loss, bill and whether it met the hard deadline."""

    job_id: str
    played: int
    fallback: bool
    losses: np.ndarray
    costs: np.ndarray
    met: np.ndarray


class Selector:
    """The learning state of policy selection over ``pool``: the learner (``"hedge"`` or
    ``"exp3"``, its anytime rate scaled by ``rate``), the seeded RNG, the loss scale (module
    doc) and the regret trace."""

    def __init__(
        self,
        pool: Sequence[PolicySpec] = DEFAULT_POOL,
        learner: str = "hedge",
        rate: float = 4.0,
        seed: int = 0,
        loss_scale: float = 0.1,
    ) -> None:
        if not (math.isfinite(loss_scale) and loss_scale > 0):
            raise ValueError(f"loss_scale={loss_scale!r}: expected a positive share of the "
                             "on-demand bill")
        self.loss_scale = loss_scale
        self.pool = tuple(pool)
        if not self.pool:
            raise ValueError("pool: expected at least one member")
        labels = [str(m) for m in self.pool]
        if len(set(labels)) != len(labels):
            raise ValueError(f"pool: duplicate members in {labels}")
        if learner not in LEARNERS:
            raise ValueError(f"learner={learner!r}: expected one of {', '.join(LEARNERS)}")
        self.learner: Hedge | Exp3 = LEARNERS[learner](len(self.pool), rate)
        self.rng = np.random.default_rng(seed)
        self.trace = RegretTrace(len(self.pool))
        self.settled: list[Settlement] = []

    @classmethod
    def of(cls, spec: PolicySpec, seed: int = 0) -> Selector:
        """The learning state a ``policy-selection`` spec asks for: its pool, learner, rate,
        loss scale and seed (``seed`` where it names none), the defaults for what it leaves
        out."""
        declared = PolicySelection.parameter_types()
        params: dict[str, Any] = {"seed": seed} | {
            k: declared[k](v) for k, v in spec.kwargs.items()
            if k in ("pool", "learner", "rate", "loss_scale", "seed")}
        if "pool" in params:
            params["pool"] = parse_pool(params["pool"])
        return cls(**params)

    def index(self, member: PolicySpec) -> int:
        labels = [str(m) for m in self.pool]
        if str(member) not in labels:
            raise ValueError(f"expected a member of the pool {labels}")
        return labels.index(str(member))

    def learn(self, round_: Round, settlement: Settlement) -> None:
        """Record one settled round and update the learner (EXP3 only on its own draws)."""
        self.trace.record(round_.probabilities, settlement.losses)
        if settlement.played == round_.played or not isinstance(self.learner, Exp3):
            self.learner.update(round_, settlement.losses)
        self.settled.append(settlement)

    def member_costs(self) -> np.ndarray:
        """Each member's mean bill over the settled rounds (its shadow's jobs)."""
        if not self.settled:
            return np.full(len(self.pool), math.nan)
        costs: np.ndarray = np.mean([s.costs for s in self.settled], axis=0)
        return costs


@dataclass(slots=True)
class _Assignment:
    job: Job
    round_: Round
    played: int
    fallback: bool


class PolicySelection(PolicyBase):
    """Plays the member drawn for each job and learns from the members' shadows (module
    doc). Members are built by ``build`` (the registry) with ``member_context`` (e.g. the
    realised data an oracle member needs)."""

    name = "policy-selection"
    tags = frozenset({"learns"})
    context = ("selector", "build", "member_context", "forecast_error")

    def __init__(
        self,
        build: Build,
        learner: str = "hedge",
        rate: float = 4.0,
        loss_scale: float = 0.1,
        error_threshold: float = math.inf,
        seed: int = 0,
        pool: str | Sequence[PolicySpec] = DEFAULT_POOL_TEXT,
        fallback: str | PolicySpec = FALLBACK_TEXT,
        selector: Selector | None = None,
        member_context: dict[str, Any] | None = None,
        forecast_error: Callable[[Observation], float] = outlook_error,
    ) -> None:
        if math.isnan(error_threshold):
            raise ValueError(f"error_threshold={error_threshold!r}: expected a number")
        if isinstance(pool, str):
            pool = parse_pool(pool)
        if isinstance(fallback, str):
            (fallback,) = parse_pool(fallback)
        self.selector = selector if selector is not None else Selector(
            pool, learner, rate, seed, loss_scale)
        self.learner = learner
        self.rate = rate
        self.loss_scale = loss_scale
        self.seed = seed
        self.pool = format_pool(self.selector.pool)
        self.fallback = format_pool((fallback,))
        self.forecast_error = forecast_error
        self.error_threshold = error_threshold
        self._make = build
        self._member_context = member_context or {}
        for member in self.selector.pool:  # a member that cannot be built fails here
            try:
                build(member, **self._member_context)
            except ValueError as exc:
                raise ValueError(f"pool member {member}: {exc}") from None
        try:
            self.fallback_member = self.selector.index(fallback)
        except ValueError as exc:
            raise ValueError(f"fallback={fallback}: {exc}") from None
        self._live: dict[int, Policy] = {}
        self._shadows: list[Engine] = []
        self._shadowed = -1
        self._assigned: dict[str, _Assignment] = {}  # live jobs, by the member playing them
        self._open: dict[str, _Assignment] = {}  # rounds the shadows have not settled

    def decide(self, obs: Observation) -> Allocations:
        if not self._shadows:
            self._shadows = [Engine(obs.markets, obs.time, obs.slot_seconds, self._member(k))
                             for k in range(len(self.selector.pool))]
        error = self.forecast_error(obs) if math.isfinite(self.error_threshold) else 0.0
        self._assigned = {v.id: self._assigned[v.id] for v in obs.jobs if v.id in self._assigned}
        for view in obs.jobs:
            if view.id not in self._assigned:
                round_ = self.selector.learner.draw(self.selector.rng)
                fallback = error > self.error_threshold
                played = self.fallback_member if fallback else round_.played
                self._assigned[view.id] = self._open[view.id] = _Assignment(
                    view.job, round_, played, fallback)
                for shadow in self._shadows:
                    shadow.add_job(view.job)
        if self._shadowed != obs.slot:  # once a slot, even if asked again about some jobs
            self._shadowed = obs.slot
            for shadow in self._shadows:
                shadow.decide(obs.price_now, obs.availability_now, obs.outlooks)
        groups: dict[int, list[JobView]] = {}
        for view in obs.jobs:
            groups.setdefault(self._assigned[view.id].played, []).append(view)
        answers: dict[str, Allocation] = {}
        for k, views in groups.items():
            policy = self._live.get(k)
            if policy is None:
                policy = self._live[k] = self._member(k)
            answer = policy.decide(replace(obs, jobs=tuple(views)))
            answers.update((v.id, answer[v.id]) for v in views if v.id in answer)
        return _share_spot(obs, answers)

    def planner(self, job_id: str) -> str | None:
        """The planner of the member playing the job (the member's name when it is not made of
        planners; ``None``: a job not seen yet)."""
        assigned = self._assigned.get(job_id)
        member = self._live.get(assigned.played) if assigned is not None else None
        if member is None:
            return None
        return planner_of(member, job_id)

    def planner_reason(self, job_id: str) -> str:
        """Why the member playing the job gave it its planner, where the member says."""
        assigned = self._assigned.get(job_id)
        member = self._live.get(assigned.played) if assigned is not None else None
        return planner_reason_of(member, job_id) if member is not None else ""

    def _member(self, k: int) -> Policy:
        return self._make(self.selector.pool[k], **self._member_context)

    def observe_settled(self, price: np.ndarray, availability: np.ndarray) -> None:
        """Settle every shadow with the slot just closed, then the rounds they are done with."""
        for shadow in self._shadows:
            shadow.settle(price, availability)
        done = [a for a in self._open.values()
                if all(s.job_state(a.job.id).finished for s in self._shadows)]
        for a in sorted(done, key=lambda a: (a.job.hard_deadline, a.job.id)):
            results = [s.job_state(a.job.id).result() for s in self._shadows]
            utilities = np.array([r.utility for r in results])
            bill = on_demand_bill(a.job, self._shadows[0].markets)
            self.selector.learn(a.round_, Settlement(
                a.job.id, a.played, a.fallback,
                round_losses(utilities, bill, self.selector.loss_scale),
                np.array([r.cost for r in results]),
                np.array([r.hard_deadline_met for r in results])))
            del self._open[a.job.id]
            for shadow in self._shadows:
                shadow.forget_job(a.job.id)


def _share_spot(obs: Observation, answers: dict[str, Allocation]) -> dict[str, Allocation]:
    """Members decide without seeing each other's jobs; in spot-priority order, a spot request
    that jobs before it already hold moves to the cheapest allowed market with room (the
    current one first) whose bill keeps to the job's cap. When there is none, the spot is cut
    to what is left, and the job idles if that leaves it under ``N_min`` (the simulator would
    have refused the request)."""
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
                    if view.job.may_use(m.key) and left[i] >= choice.spot
                    and view.job.within_cap(choice.hourly_usd(obs.price_now[i],
                                                              m.on_demand_price))]
            if room:
                choice = Allocation(min(room)[2], choice.spot, choice.on_demand)
            else:
                choice = Allocation(choice.market, int(left[choice.market]), choice.on_demand)
                if choice.total < view.job.n_min:
                    continue
        left[choice.market] -= choice.spot
        out[view.id] = choice
    return out
