"""The parameters the ``shapes`` markets are drawn from, and how they were derived from the
public traces.

:data:`CALIBRATION` is :func:`calibrate`'s result on the public traces, rounded and kept here
so that the suite runs without them (re-derive it with ``python -m
evaluation.calibrate_shapes``, which loads the traces and prints the table):

* prices from the SpotLake daily region means of AWS GPU types: a zone's spot price as a share
  of on-demand (the log of each series' mean over the on-demand price of types with a known
  one), the spread of price levels across the regions of one type (the standard deviation of
  the log of each region's mean price around its type's median, types with 3 regions or more),
  and the day-to-day change (the standard deviation of daily log price changes);
* spot availability from the 1-node Can't Be Late traces: the lengths of runs (available) and
  gaps (not), whole ones only (a series' first and last are cut by its ends), as log hours:
  their mean, their standard deviation within a series around the series' mean, and the
  standard deviation of the series' means (how much zones differ);
* capacity from the 16-node Can't Be Late traces and the Bamboo spot-group sizes: the share of
  the time with capacity spent at each quarter of the series' largest count, the series
  weighted alike.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from solver.market import SECONDS_PER_HOUR, MarketTicks

CAPACITY_BINS = 4
"""Capacity levels are counted in quarters of a series' largest count."""


@dataclass(frozen=True)
class ShapeCalibration:
    """Parameters of the ``shapes`` markets (module doc); lengths are ``ln(hours)``."""

    spot_share_log_mean: float
    price_spread_log_sd: float
    daily_log_sd: float
    run_log_mean: float
    run_log_sd: float
    run_zone_sd: float
    gap_log_mean: float
    gap_log_sd: float
    gap_zone_sd: float
    capacity_shares: tuple[float, ...]

    def __post_init__(self) -> None:
        for name in ("price_spread_log_sd", "daily_log_sd", "run_log_sd", "run_zone_sd",
                     "gap_log_sd", "gap_zone_sd"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"shape calibration {name}={value!r}: expected a finite "
                                 "standard deviation >= 0")
        shares = self.capacity_shares
        if len(shares) != CAPACITY_BINS or min(shares) < 0 or abs(sum(shares) - 1) > 1e-3:
            raise ValueError(f"shape calibration capacity_shares={shares!r}: expected "
                             f"{CAPACITY_BINS} shares >= 0 summing to 1")


CALIBRATION = ShapeCalibration(
    spot_share_log_mean=-0.987,
    price_spread_log_sd=0.175,
    daily_log_sd=0.032,
    run_log_mean=-0.421,
    run_log_sd=1.271,
    run_zone_sd=0.453,
    gap_log_mean=-0.587,
    gap_log_sd=1.236,
    gap_zone_sd=0.334,
    capacity_shares=(0.032, 0.154, 0.166, 0.648),
)
"""What :func:`calibrate` derives from the public traces (module doc), rounded."""


def calibrate(prices: Sequence[MarketTicks], priced_types: Collection[str],
              availability: Sequence[MarketTicks],
              capacity: Sequence[tuple[np.ndarray, np.ndarray]]) -> ShapeCalibration:
    """The parameters of :class:`ShapeCalibration` from daily spot ``prices`` (one series per
    region and type; ``priced_types`` those whose on-demand price is known), 0/1
    ``availability`` series, and ``capacity`` series of (times in seconds, counts)."""
    if not prices or not availability or not capacity:
        raise ValueError("shape calibration: expected price, availability and capacity series")
    shares = [math.log(float(np.mean(t.prices)) / t.market.on_demand_price)
              for t in prices if t.market.instance_type in priced_types]
    if not shares:
        raise ValueError(f"shape calibration priced_types={sorted(priced_types)}: expected a "
                         "type of the price series")
    by_type: dict[str, list[float]] = defaultdict(list)
    for t in prices:
        by_type[t.market.instance_type].append(math.log(float(np.mean(t.prices))))
    spread = [v - float(np.median(levels)) for levels in by_type.values() if len(levels) >= 3
              for v in levels]
    changes = np.concatenate([np.diff(np.log(np.maximum(t.prices, 1e-9))) for t in prices])
    runs, gaps = zip(*(run_lengths(t.times, t.available) for t in availability), strict=True)
    run = _log_lengths(runs)
    gap = _log_lengths(gaps)
    levels = np.mean([capacity_shares(times, counts) for times, counts in capacity], axis=0)
    return ShapeCalibration(
        spot_share_log_mean=float(np.mean(shares)),
        price_spread_log_sd=float(np.std(spread)) if spread else 0.0,
        daily_log_sd=float(np.std(changes)),
        run_log_mean=run[0], run_log_sd=run[1], run_zone_sd=run[2],
        gap_log_mean=gap[0], gap_log_sd=gap[1], gap_zone_sd=gap[2],
        capacity_shares=tuple(float(s) for s in levels),
    )


def run_lengths(times: np.ndarray, available: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The hours of each whole run (available) and gap (not) of a series whose values hold
    until the next tick; the first and last stretch, cut by the series' ends, are left out."""
    up = np.asarray(available) > 0
    changes = np.flatnonzero(up[1:] != up[:-1]) + 1
    if len(changes) < 2:
        return np.empty(0), np.empty(0)
    hours = np.diff(np.asarray(times, dtype=float)[changes]) / SECONDS_PER_HOUR
    was_up = up[changes[:-1]]
    return hours[was_up], hours[~was_up]


def _log_lengths(series: Sequence[np.ndarray]) -> tuple[float, float, float]:
    """The mean log length, the within-series standard deviation and that of the series'
    means, over the series with at least two lengths."""
    logs = [np.log(s) for s in series if len(s) >= 2]
    if not logs:
        raise ValueError("shape calibration: expected availability series with whole runs "
                         "and gaps")
    within = np.concatenate([x - x.mean() for x in logs])
    means = np.array([x.mean() for x in logs])
    return float(np.concatenate(logs).mean()), float(within.std()), float(means.std())


def capacity_shares(times: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The share of the time with capacity (count > 0) spent in each quarter of the series'
    largest count, each value held until the next tick."""
    counts = np.asarray(counts, dtype=float)
    held = np.diff(np.asarray(times, dtype=float))
    counts = counts[:-1]
    top = counts.max() if len(counts) else 0.0
    if top <= 0:
        raise ValueError("shape calibration: expected a capacity series with a count > 0")
    up = counts > 0
    bins = np.minimum(np.ceil(counts[up] / top * CAPACITY_BINS) - 1, CAPACITY_BINS - 1)
    weights = np.bincount(bins.astype(int), weights=held[up], minlength=CAPACITY_BINS)
    shares: np.ndarray = weights / weights.sum()
    return shares
