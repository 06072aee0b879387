"""Seeded synthetic spot markets drawn from a :class:`ShapeCalibration`: the markets of the
``shapes`` scenario.

Each zone is one p3.2xlarge market (on-demand 3.06 USD/h) ticking every
:data:`TICK_SECONDS`, zones three to a region over :data:`REGIONS` in order. A zone's spot
price is its level (on-demand × ``exp(spot_share_log_mean + price_spread_log_sd · N)``, at
most on-demand) times a daily log random walk of step ``daily_log_sd``, held for the day.
Its availability alternates runs and gaps of log-normal hours (the zone's log mean drawn
around the calibrated one with the zone spread, then each length around it), at least one
tick each; each run holds a capacity count drawn from the calibrated quarter of the largest
count, uniformly within it. Everything follows from the seed.
"""

from __future__ import annotations

import math

import numpy as np

from solver.evaluation.shape_calibration import CALIBRATION, CAPACITY_BINS, ShapeCalibration
from solver.market import Market, MarketTicks, hours_to_slots
from solver.synthetic import SYNTHETIC_START

TICK_SECONDS = 300.0
INSTANCE_TYPE = "p3.2xlarge"
ON_DEMAND_USD_PER_HOUR = 3.06
ZONES_PER_REGION = 3
REGIONS = ("us-east-1", "us-west-2", "eu-west-1", "us-east-2", "eu-central-1",
           "ap-northeast-1", "us-west-1", "ap-southeast-1", "eu-north-1", "ca-central-1")
MAX_ZONES = ZONES_PER_REGION * len(REGIONS)
"""The most zones a shape's market can have: every zone of every region."""
SECONDS_PER_DAY = 86400.0


def zone_names(zones: int) -> list[tuple[str, str]]:
    """``(region, zone)`` of ``zones`` zones, three to a region."""
    if not 1 <= zones <= MAX_ZONES:
        raise ValueError(f"zones={zones!r}: expected 1 to {MAX_ZONES}")
    return [(REGIONS[z // ZONES_PER_REGION], REGIONS[z // ZONES_PER_REGION] + "abc"[
        z % ZONES_PER_REGION]) for z in range(zones)]


def shape_market(zones: int, capacity: int, hours: float, seed: np.random.SeedSequence,
                 calibration: ShapeCalibration = CALIBRATION) -> list[MarketTicks]:
    """``zones`` markets over ``hours`` hours (and a closing tick), at most ``capacity``
    instances each, drawn from ``calibration`` with ``seed`` (module doc)."""
    if capacity < 1:
        raise ValueError(f"capacity={capacity!r}: expected at least 1 instance")
    if not hours > 0:
        raise ValueError(f"hours={hours!r}: expected a positive length")
    n_ticks = hours_to_slots(hours, TICK_SECONDS, math.ceil) + 1
    times = SYNTHETIC_START + TICK_SECONDS * np.arange(n_ticks)
    out = []
    for (region, zone), child in zip(zone_names(zones), seed.spawn(zones), strict=True):
        rng = np.random.default_rng(child)
        market = Market("aws", region, zone, INSTANCE_TYPE, ON_DEMAND_USD_PER_HOUR)
        prices = _prices(rng, times, calibration)
        available = _availability(rng, n_ticks, capacity, calibration)
        out.append(MarketTicks(market, times.copy(), prices, available))
    return out


def _prices(rng: np.random.Generator, times: np.ndarray, c: ShapeCalibration) -> np.ndarray:
    level = ON_DEMAND_USD_PER_HOUR * math.exp(c.spot_share_log_mean
                                             + c.price_spread_log_sd * rng.standard_normal())
    day = ((times - times[0]) // SECONDS_PER_DAY).astype(int)
    walk = np.cumsum(np.concatenate([[0.0], c.daily_log_sd * rng.standard_normal(day[-1])]))
    prices: np.ndarray = np.round(np.minimum(level * np.exp(walk[day]),
                                             ON_DEMAND_USD_PER_HOUR), 4)
    return prices


def _availability(rng: np.random.Generator, n_ticks: int, capacity: int,
                  c: ShapeCalibration) -> np.ndarray:
    run_mean = c.run_log_mean + c.run_zone_sd * rng.standard_normal()
    gap_mean = c.gap_log_mean + c.gap_zone_sd * rng.standard_normal()
    up_hours = math.exp(run_mean + c.run_log_sd ** 2 / 2)
    down_hours = math.exp(gap_mean + c.gap_log_sd ** 2 / 2)
    up = bool(rng.random() < up_hours / (up_hours + down_hours))
    available = np.zeros(n_ticks, dtype=np.int64)
    shares = np.array(c.capacity_shares) / sum(c.capacity_shares)
    t = 0
    while t < n_ticks:
        mean, sd = (run_mean, c.run_log_sd) if up else (gap_mean, c.gap_log_sd)
        hours = math.exp(mean + sd * rng.standard_normal())
        length = hours_to_slots(hours, TICK_SECONDS)
        if up:
            quarter = int(rng.choice(CAPACITY_BINS, p=shares))
            share = (quarter + rng.random()) / CAPACITY_BINS
            available[t:t + length] = max(1, math.ceil(share * capacity))
        t += length
        up = not up
    return available
