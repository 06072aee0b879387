"""Markets and jobs the tests run policies on: small random ones drawn by Hypothesis, seeded
synthetic markets with their generated workload, and seeded probe traces."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from hypothesis import strategies as st

from solver.job import Job
from solver.market import Market, MarketData, MarketTicks, build_market_data
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from solver.workload import WorkloadSpec, generate_jobs
from tests.solver.helpers import HOUR, flat_data, job


@st.composite
def scenarios(draw: st.DrawFn, markets: tuple[int, int] = (1, 2),
              slots: tuple[int, int] = (4, 10), price: tuple[float, float] = (0.2, 2.5),
              available: int = 3, jobs: tuple[int, int] = (1, 3),
              workload: tuple[float, float] = (0.2, 6.0), max_instances: int = 3,
              release_offsets: tuple[float, ...] = (0.0,), soft_before_hard: bool = False,
              values: tuple[float, ...] = (20.0,), miss_penalty: float = 10.0,
              overheads: tuple[float, ...] = (0.0, 300.0, 4000.0),
              ) -> tuple[MarketData, list[Job]]:
    """Markets whose prices and spot counts change only at slot boundaries, and jobs released
    within them: ``markets`` × ``slots`` slots (inclusive ranges) of prices in ``price`` and
    up to ``available`` instances of spot; ``jobs`` jobs of ``workload`` hours on
    1..``max_instances`` instances, released at a boundary plus one of ``release_offsets``
    seconds and due at a later boundary (the soft deadline there too, or with
    ``soft_before_hard`` an hour before it at times)."""
    n_markets, n_slots = draw(st.integers(*markets)), draw(st.integers(*slots))
    size = n_markets * n_slots
    prices = draw(st.lists(st.floats(*price), min_size=size, max_size=size))
    counts = draw(st.lists(st.integers(0, available), min_size=size, max_size=size))
    data = flat_data(np.reshape(prices, (n_markets, n_slots)),
                     np.reshape(counts, (n_markets, n_slots)))
    drawn = []
    for k in range(draw(st.integers(*jobs))):
        release = draw(st.integers(0, n_slots - 2)) * HOUR + draw(st.sampled_from(release_offsets))
        hard = draw(st.integers(int(release // HOUR) + 1, n_slots)) * HOUR
        soft = draw(st.sampled_from([hard, max(release + 1, hard - HOUR)])
                    if soft_before_hard else st.just(hard))
        n_max = draw(st.integers(1, max_instances))
        drawn.append(job(f"j{k}", workload=draw(st.floats(*workload)), release=release,
                         soft=soft, hard=hard, n_min=draw(st.integers(1, n_max)), n_max=n_max,
                         value=draw(st.sampled_from(values)), miss_penalty=miss_penalty,
                         restart_overhead=draw(st.sampled_from(overheads))))
    return data, drawn


LARGER = {"markets": (1, 3), "slots": (4, 24), "price": (0.1, 3.0), "available": 4,
          "jobs": (1, 4), "workload": (0.2, 12.0), "max_instances": 4, "values": (0.0,),
          "miss_penalty": 0.0}
"""Up to three markets for a day and four jobs of up to twelve hours, worth nothing: for
properties of policies cheap enough to run on them."""


class Synthetic(NamedTuple):
    """A synthetic market's ticks, their slots and jobs generated over them."""

    ticks: list[MarketTicks]
    data: MarketData
    jobs: list[Job]


def synthetic(seed: int, n_markets: int, days: float, n_jobs: int,
              tick_seconds: float = 300.0, slot: float = 3600.0, **workload: Any) -> Synthetic:
    """The synthetic market of ``seed`` (``n_markets`` markets for ``days``, a tick every
    ``tick_seconds``) in slots of ``slot`` seconds, and ``n_jobs`` jobs drawn from the same
    seed (``workload``: other fields of their :class:`WorkloadSpec`)."""
    ticks = synthetic_ticks(SyntheticMarketSpec(seed=seed, n_markets=n_markets, days=days,
                                                tick_seconds=tick_seconds))
    data = build_market_data(ticks, slot)
    return Synthetic(ticks, data, generate_jobs(data, n_jobs, WorkloadSpec(seed=seed, **workload)))


def probe_ticks(n_ticks=1400, tick=195.0, zones=("us-east-1a", "us-west-2b"), seed=0):
    """A 0/1 probe trace with a price step series per zone."""
    rng = np.random.default_rng(seed)
    times = 1_700_000_000.0 + tick * np.arange(n_ticks)
    return [MarketTicks(Market("aws", zone[:-1], zone, "p3.2xlarge", 3.06), times,
                        np.round(rng.uniform(0.9, 1.8, n_ticks), 2),
                        (rng.random(n_ticks) < 0.6).astype(int))
            for zone in zones]


def write_probe_trace(path, hours=30, zones=("us-east-1a", "us-west-2b")):
    """A small SkyNomad-format trace: 195 s probes with 0/1 availability and a spot price."""
    rng = np.random.default_rng(1)
    lines = ["timestamp_utc,zone,instance_type,tick,available,spot_price_usd_per_hour"]
    n = int(hours * 3600 / 195)
    for zone in zones:
        for tick in range(n):
            seconds = 1_676_498_896 + 195 * tick
            stamp = np.datetime64(seconds, "s").astype(str) + "Z"
            lines.append(f"{stamp},{zone},p3.2xlarge,{tick},{int(rng.random() < 0.7)},"
                         f"{1.0 + 0.2 * (tick // 200 % 3):.4f}")
    path.write_text("\n".join(lines) + "\n")
    return path
