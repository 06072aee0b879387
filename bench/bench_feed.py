"""Ticks a live feed publishes and the cost of planning them.

For a month of ten markets with a price change every ~20 minutes, prints the number of ticks
per market and day for several heartbeats, and how long planning them takes (the runner plans
a round of every market each poll). Run: ``python bench/bench_feed.py``.
"""

from __future__ import annotations

import time

import numpy as np
from rich.console import Console
from rich.table import Table

from connectors.feeds.base import PriceChange
from connectors.feeds.planner import FeedGrid, plan
from solver.market import Market

DAYS = 30
MARKETS = 10
SLOT = 3600.0
START = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def history(rng: np.random.Generator) -> list[PriceChange]:
    gaps = rng.exponential(1200.0, size=int(DAYS * 86400 / 1200 * 1.2))
    times = START - 60 + np.cumsum(gaps)
    times = times[times < START + DAYS * 86400]
    prices = np.round(rng.uniform(0.9, 1.9, size=len(times)), 4)
    return [PriceChange(START - 60, 1.0)] + [PriceChange(float(t), float(p))
                                             for t, p in zip(times, prices, strict=True)]


def main() -> None:
    rng = np.random.default_rng(0)
    markets = [Market("aws", "us-east-1", f"us-east-1{chr(97 + i)}", "p3.2xlarge", 3.06)
               for i in range(MARKETS)]
    histories = [history(rng) for _ in markets]
    table = Table("heartbeat s", "ticks per market-day", "ticks (10 markets, 30 d)",
                  "planning µs per tick", title="feed ticks and planning cost")
    for heartbeat in (60, 300, 900, 3600):
        grid = FeedGrid(heartbeat_seconds=heartbeat, slot_seconds=SLOT, available=8)
        started = time.perf_counter()
        ticks = sum(len(plan(m, h, (START, -1), START + DAYS * 86400, grid))
                    for m, h in zip(markets, histories, strict=True))
        seconds = time.perf_counter() - started
        table.add_row(str(heartbeat), f"{ticks / MARKETS / DAYS:,.0f}", f"{ticks:,}",
                      f"{1e6 * seconds / ticks:.1f}")
    Console().print(table)


if __name__ == "__main__":
    main()
