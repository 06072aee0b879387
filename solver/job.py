"""Fine-tuning jobs, their value of finishing, allocations and per-job outcomes."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase

from solver.market import SECONDS_PER_HOUR
from solver.migration import Place
from solver.timefmt import iso_utc

TIME_FIELDS = frozenset({"release", "soft_deadline", "hard_deadline"})
"""The fields of a job that are Unix seconds."""

FINISH_TOLERANCE = 1e-12
"""Share of a job's workload below which what is left counts as done: sums of slot-sized
pieces of work that are exact in hours need not be exact in floating point."""


@dataclass(frozen=True, slots=True)
class Job:
    """A deadline-bound job.

    Times are Unix seconds. ``workload`` is in work units (e.g. reference GPU-hours);
    throughput is ``H(n) = alpha * n + beta`` work units per hour for ``n >= 1`` instances and
    ``H(0) = 0``. Value of finishing at ``T``: ``value`` up to the soft deadline, falling linearly
    to ``value_at_hard_deadline`` at the hard deadline, and ``-miss_penalty`` after it (or never).
    ``restart_overhead`` is the running-but-unproductive time, in seconds, paid whenever the
    job's instance configuration changes or it restarts after a loss.

    Where it may run: ``allowed_markets`` (market keys) and ``market_patterns`` (fnmatch
    patterns on market keys, e.g. ``gcp/us-*`` or ``*/a3-highgpu-*``; resolved to keys when a
    scheduler admits the job, :meth:`resolved`), both when given; ``allow_spot``. What moving
    costs (:mod:`solver.migration`): its checkpoint of ``checkpoint_gb`` GB, first in its
    ``home_region`` (``cloud/region``) if given. ``max_hourly_usd`` caps the hourly bill of
    every allocation, at the prices in force when it is decided.
    """

    id: str
    workload: float
    release: float
    soft_deadline: float
    hard_deadline: float
    n_min: int = 1
    n_max: int = 1
    alpha: float = 1.0
    beta: float = 0.0
    value: float = 0.0
    value_at_hard_deadline: float = 0.0
    miss_penalty: float = 0.0
    restart_overhead: float = 0.0
    allowed_markets: tuple[str, ...] | None = None
    allow_spot: bool = True
    checkpoint_gb: float = 0.0
    home_region: str | None = None
    max_hourly_usd: float | None = None
    market_patterns: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        def fail(name: str, expected: str) -> None:
            raise ValueError(f"job {self.id!r} {name}={self._shown(name)}: expected {expected}")

        if not self.id:
            fail("id", "a non-empty identifier")
        for name in ("workload", "release", "soft_deadline", "hard_deadline", "alpha", "beta",
                     "value", "value_at_hard_deadline", "miss_penalty", "restart_overhead"):
            if not math.isfinite(getattr(self, name)):
                fail(name, "a finite number")
        if self.workload <= 0:
            fail("workload", "a positive amount of work")
        if self.soft_deadline <= self.release:
            fail("soft_deadline", f"a time after release={self._shown('release')}")
        if self.hard_deadline < self.soft_deadline:
            fail("hard_deadline",
                 f"a time at or after soft_deadline={self._shown('soft_deadline')}")
        if self.n_min < 1:
            fail("n_min", "at least 1 instance")
        if self.n_max < self.n_min:
            fail("n_max", f"at least n_min={self.n_min}")
        if self.throughput(self.n_min) <= 0:
            fail("beta", f"a value giving positive throughput at n_min={self.n_min}")
        if self.restart_overhead < 0:
            fail("restart_overhead", "a non-negative number of seconds")
        if self.miss_penalty < 0:
            fail("miss_penalty", "a non-negative amount")
        if self.value_at_hard_deadline > self.value:
            fail("value_at_hard_deadline", f"at most value={self.value!r}")
        if not (math.isfinite(self.checkpoint_gb) and self.checkpoint_gb >= 0):
            fail("checkpoint_gb", "a finite size >= 0 in GB")
        if self.max_hourly_usd is not None and not (
                math.isfinite(self.max_hourly_usd) and self.max_hourly_usd > 0):
            fail("max_hourly_usd", "a positive finite USD per hour, or none")
        if self.home_region is not None:
            home = Place.parse(self.home_region, f"job {self.id!r} home_region")
            if home.zone is not None:
                fail("home_region", "'cloud/region' (a region, not a zone)")
        if self.market_patterns is not None and (
                not self.market_patterns or not all(self.market_patterns)):
            fail("market_patterns", "a non-empty list of non-empty patterns, or none")

    def _shown(self, name: str) -> str:
        """A field's value for a message: times as ISO-8601 UTC."""
        value = getattr(self, name)
        return iso_utc(value) if name in TIME_FIELDS else repr(value)

    def throughput(self, n: int) -> float:
        """Work units per hour with ``n`` instances."""
        return self.alpha * n + self.beta if n > 0 else 0.0

    def value_at(self, completion: float | None) -> float:
        """``V(T)``; ``None`` means the job never finished."""
        if completion is None or completion > self.hard_deadline:
            return -self.miss_penalty
        if completion <= self.soft_deadline:
            return self.value
        share = (completion - self.soft_deadline) / (self.hard_deadline - self.soft_deadline)
        return self.value + share * (self.value_at_hard_deadline - self.value)

    def hours_to_finish(self, remaining: float, n: int) -> float:
        """Productive hours ``n`` instances need for ``remaining`` work."""
        return remaining / self.throughput(n)

    def hours_needed(self, remaining: float, n: int, overhead: float | None = None) -> float:
        """Hours until ``n`` instances finish ``remaining`` work from now: ``overhead`` seconds
        of restart (default: one whole restart overhead), then the productive hours."""
        overhead_hours = (self.restart_overhead_hours if overhead is None
                          else overhead / SECONDS_PER_HOUR)
        return overhead_hours + self.hours_to_finish(remaining, n)

    def seconds_needed(self, remaining: float, n: int, overhead: float | None = None) -> float:
        """:meth:`hours_needed` in seconds."""
        return SECONDS_PER_HOUR * self.hours_needed(remaining, n, overhead)

    def on_demand_finish(self, now: float, remaining: float) -> float:
        """When on-demand at ``n_max``, started at ``now`` (one restart overhead paid), would
        finish ``remaining`` work: the earliest finish that cannot be taken away."""
        return now + self.seconds_needed(remaining, self.n_max)

    def slack(self, now: float, remaining: float) -> float:
        """Seconds to spare at ``now``: the hard deadline minus :meth:`on_demand_finish`."""
        return self.hard_deadline - self.on_demand_finish(now, remaining)

    def target_deadline(self, now: float, remaining: float) -> float:
        """The soft deadline while on-demand at ``n_max`` can still meet it, else the hard
        one: the deadline the rule-based policies aim at."""
        finish = self.on_demand_finish(now, remaining)
        return self.soft_deadline if finish <= self.soft_deadline else self.hard_deadline

    def may_use(self, market_key: str) -> bool:
        if self.allowed_markets is not None:
            return market_key in self.allowed_markets
        patterns = self.market_patterns
        return patterns is None or any(fnmatchcase(market_key, p) for p in patterns)

    def resolved(self, market_keys: Sequence[str]) -> Job:
        """This job with ``allowed_markets`` the keys among ``market_keys`` that its patterns
        match (and that its allowed markets list, when given); a pattern matching none of
        ``market_keys`` is an error naming it."""
        if self.market_patterns is None:
            return self
        for pattern in self.market_patterns:
            if not any(fnmatchcase(key, pattern) for key in market_keys):
                raise ValueError(f"job {self.id!r} market_patterns: {pattern!r} matches none "
                                 f"of the markets {list(market_keys)}")
        keys = tuple(k for k in market_keys
                     if any(fnmatchcase(k, p) for p in self.market_patterns)
                     and (self.allowed_markets is None or k in self.allowed_markets))
        if not keys:
            raise ValueError(f"job {self.id!r} market_patterns={list(self.market_patterns)} "
                             f"and allowed_markets={list(self.allowed_markets or ())}: "
                             "expected at least one market both allow")
        return replace(self, allowed_markets=keys)

    def within_cap(self, hourly_usd: float) -> bool:
        """True when an allocation billing ``hourly_usd`` an hour keeps to the job's cap."""
        cap = self.max_hourly_usd
        return cap is None or hourly_usd <= cap * (1 + 1e-12)

    def affordable_count(self, price: float) -> int:
        """How many instances at ``price`` USD an hour the cap allows (``n_max`` without one)."""
        cap = self.max_hourly_usd
        if cap is None or price <= 0:
            return self.n_max
        return min(self.n_max, math.floor(cap * (1 + 1e-12) / price))

    @property
    def home(self) -> Place | None:
        """Where the job's checkpoint is at admission (module :mod:`solver.migration`)."""
        return None if self.home_region is None else Place.parse(self.home_region)

    @property
    def restart_overhead_hours(self) -> float:
        return self.restart_overhead / SECONDS_PER_HOUR


@dataclass(frozen=True, slots=True)
class Allocation:
    """What one job runs in one slot: ``spot`` and ``on_demand`` instances in one market.

    A job's instances are co-located in one market per slot (data-parallel training needs a
    fast interconnect); moving to another market is a reconfiguration.
    """

    market: int
    spot: int = 0
    on_demand: int = 0

    def __post_init__(self) -> None:
        if self.spot < 0 or self.on_demand < 0:
            raise ValueError(
                f"allocation spot={self.spot} on_demand={self.on_demand}: expected counts >= 0"
            )

    @property
    def total(self) -> int:
        return self.spot + self.on_demand

    def hourly_usd(self, spot_price: float, on_demand_price: float) -> float:
        """USD an hour at these prices per instance-hour: what a job's cap bounds."""
        return self.spot * float(spot_price) + self.on_demand * float(on_demand_price)


Allocations = Mapping[str, Allocation]
"""Allocations by job id for one slot; a job left out runs nothing."""


@dataclass(frozen=True, slots=True)
class JobResult:
    """Outcome of one job under one policy. ``cost`` includes ``egress_usd``, the egress of
    its ``migrations`` (launches that moved its checkpoint)."""

    job_id: str
    cost: float
    completion: float | None
    utility: float
    soft_deadline_met: bool
    hard_deadline_met: bool
    preemptions: int
    refusals: int
    restarts: int
    work_done: float
    spot_instance_hours: float
    on_demand_instance_hours: float
    cancelled: bool = False
    migrations: int = 0
    egress_usd: float = 0.0
