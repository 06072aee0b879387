"""``spotsched feed aws`` against a local moto EC2 and the real broker: the prices
DescribeSpotPriceHistory returns reach a worker and produce decisions, and a feed killed in the
middle and restarted leaves on the topic exactly the ticks of an uninterrupted run."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
from datetime import UTC, datetime

import numpy as np
import pytest
from aiokafka import AIOKafkaProducer

from connectors.feeds.base import PriceChange
from connectors.feeds.planner import FeedGrid, is_feed_tick, plan
from solver.market import Market, MarketTicks, build_market_data
from solver.synthetic import SYNTHETIC_START, SyntheticMarketSpec, synthetic_ticks
from solver.workload import WorkloadSpec, generate_jobs
from streams.contract import (
    AvailabilityTick,
    JobSubmitted,
    PriceTick,
    ProvisioningDecision,
    dump_event,
)
from streams.kafka.clients import publish_job_events
from streams.kafka.partitions import partition_for
from streams.kafka.topics import ensure_topics
from streams.pipeline.decision_encoder import allocation_rows
from streams.pipeline.trace_events import submission, trace_events
from streams.runners.memory import run_in_memory
from tests.feeds.spot_history import SeededHistory
from tests.kafka.pipeline_harness import REPO, Pipeline

pytestmark = pytest.mark.kafka

SLOT = 3600.0
HOURS = 36
T0 = SYNTHETIC_START
UNTIL = T0 + HOURS * SLOT
GRID = FeedGrid(heartbeat_seconds=600, slot_seconds=SLOT, available=8)
SPEC = SyntheticMarketSpec(seed=3, n_markets=2, days=HOURS / 24 + 0.1, tick_seconds=300)


def seeded_changes() -> dict[Market, list[PriceChange]]:
    """Each synthetic market's price changes, with the price in force an hour before T0."""
    out = {}
    for series in synthetic_ticks(SPEC):
        keep = np.flatnonzero(np.diff(series.prices, prepend=np.nan) != 0)
        changes = [PriceChange(float(series.times[i]), float(series.prices[i])) for i in keep
                   if series.times[i] < UNTIL]
        out[series.market] = [PriceChange(T0 - 3600, changes[0].price), *changes[1:]]
    return out


def seed(history: SeededHistory, changes: dict[Market, list[PriceChange]]) -> None:
    """Serve ``changes`` from the moto server."""
    for market, market_changes in changes.items():
        history.add(market.zone, market.instance_type,
                    [(c.time, c.price) for c in market_changes])


def price_at(changes: list[PriceChange], time: float) -> float:
    return [c.price for c in changes if c.time <= time][-1]


def as_trace(changes: dict[Market, list[PriceChange]]) -> list[MarketTicks]:
    """The same market as a trace: the changes from T0 on, a closing tick at UNTIL, and the
    availability the feed assumes."""
    series = []
    for market, history in changes.items():
        points = [(T0, price_at(history, T0))] + [(c.time, c.price) for c in history
                                                   if c.time > T0]
        points.append((UNTIL, points[-1][1]))
        times, prices = map(np.array, zip(*points, strict=True))
        series.append(MarketTicks(market, times, prices, np.full(len(times), GRID.available)))
    return series


@pytest.fixture
def pipeline(kafka_bootstrap, tmp_path):
    changes = seeded_changes()
    made = Pipeline(kafka_bootstrap, tmp_path, tuple(changes), policy="greedy",
                    market_partitions=2)
    yield made
    made.stop_workers()


def feed(pipeline: Pipeline, endpoint: str, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "streams", "feed", "aws", "--markets-file",
               str(pipeline.markets_file), "--endpoint-url", endpoint,
               "--since", datetime.fromtimestamp(T0, UTC).isoformat(),
               "--until", datetime.fromtimestamp(UNTIL, UTC).isoformat(),
               "--heartbeat-seconds", str(int(GRID.heartbeat_seconds)), "--available",
               str(GRID.available), "--lag-seconds", "0", "--poll-seconds", "1", *extra]
    return subprocess.run(command, env=pipeline.env(), cwd=REPO, capture_output=True,
                          text=True, timeout=300, check=False)


@pytest.mark.slow  # a worker, and the feed run twice
def test_aws_prices_reach_a_worker_and_a_restarted_feed_repeats_and_skips_nothing(
        pipeline, history, moto_endpoint):
    changes = seeded_changes()
    seed(history, changes)
    trace = as_trace(changes)
    jobs = generate_jobs(build_market_data(trace, SLOT), 6,
                         WorkloadSpec(seed=3, workload_range=(2.0, 10.0)))
    asyncio.run(publish_job_events(pipeline.settings,
                                   [submission(j, j.release) for j in jobs]))
    pipeline.wait_until_joined(pipeline.start_worker())

    crashed = feed(pipeline, moto_endpoint, "--crash-after-ticks", "211")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-3000:]
    restarted = feed(pipeline, moto_endpoint)
    assert restarted.returncode == 0, restarted.stderr[-3000:]
    assert "resuming after" in restarted.stderr

    published = [t for t in pipeline.read(pipeline.topics.market_ticks) if is_feed_tick(t)]
    for market, market_changes in changes.items():
        mine = [dump_event(t) for t in published if t.market == market.key]
        whole = [dump_event(t) for t in plan(market, market_changes, (T0, -1), UNTIL, GRID)]
        assert mine == whole, f"{market.key}: {len(mine)} ticks on the topic, {len(whole)} planned"

    catalogue = tuple(changes)
    events = sorted(trace_events(trace, jobs), key=lambda e: not isinstance(e, JobSubmitted))
    expected = allocation_rows(run_in_memory(iter(events), catalogue, SLOT, "greedy"))
    assert len(expected) > 20
    assert pipeline.wait_for_rows(expected) == expected
    decisions = [d for d in pipeline.decisions() if isinstance(d, ProvisioningDecision)
                 and d.action != "release"]
    by_key = {m.key: c for m, c in changes.items()}
    for decision in decisions:
        assert decision.market_view is not None
        seen = decision.market_view.spot_price_now
        in_force = price_at(by_key[decision.market], decision.slot_start.timestamp())
        assert seen == pytest.approx(in_force, rel=1e-9), decision
    assert {d.market_view.spot_available_now for d in decisions if d.market_view} == {
        GRID.available}
    assert pipeline.dead_letters() == []


def test_price_ticks_carry_the_catalogue_on_demand_price(pipeline, history, moto_endpoint):
    seed(history, seeded_changes())
    done = feed(pipeline, moto_endpoint, "--until",
                datetime.fromtimestamp(T0 + SLOT, UTC).isoformat())
    assert done.returncode == 0, done.stderr[-3000:]
    ticks = [t for t in pipeline.read(pipeline.topics.market_ticks) if isinstance(t, PriceTick)]
    off_grid = [c for history_of in seeded_changes().values() for c in history_of
                if T0 < c.time <= T0 + SLOT and c.time % GRID.heartbeat_seconds]
    assert len(ticks) == 2 * (1 + SLOT / GRID.heartbeat_seconds) + len(off_grid)
    assert {t.on_demand_price for t in ticks} == {3.06}


def test_an_unreachable_ec2_endpoint_ends_in_one_error_line(pipeline, aws_credentials):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    failed = feed(pipeline, f"http://127.0.0.1:{port}", "--max-attempts", "2")
    assert failed.returncode == 1
    assert "Traceback" not in failed.stdout + failed.stderr
    assert failed.stdout == ""  # the error goes to standard error, after the retries' warnings
    message = " ".join(failed.stderr.strip().splitlines()[-1].split())
    assert message == (
        "error: aws spot price history failed 2 times, giving up; last: EC2 "
        f"DescribeSpotPriceHistory in us-east-1: cannot reach http://127.0.0.1:{port} "
        "(EndpointConnectionError)")
    warned = [line for line in failed.stderr.splitlines() if "retrying in" in line]
    assert len(warned) == 1


def test_connector_reports_share_the_partition_and_the_feed_never_publishes_behind_them(
        pipeline, history, moto_endpoint):
    """A connector publishes availability ticks keyed by market with the default partitioner;
    they land in the feed's partition, and the feed skips its own ticks older than them."""
    changes = seeded_changes()
    seed(history, changes)
    market = next(iter(changes))
    report = AvailabilityTick(event_time=T0 + 1800, market=market.key, available=0,
                              reason="refused")

    async def publish_like_a_connector() -> int:
        producer = AIOKafkaProducer(bootstrap_servers=pipeline.bootstrap, acks="all")
        await producer.start()
        try:
            sent = await producer.send_and_wait(pipeline.topics.market_ticks, dump_event(report),
                                                key=report.key.encode())
            return sent.partition
        finally:
            await producer.stop()

    asyncio.run(ensure_topics(pipeline.settings))
    assert asyncio.run(publish_like_a_connector()) == partition_for(market.key, 2)
    done = feed(pipeline, moto_endpoint, "--until",
                datetime.fromtimestamp(T0 + SLOT, UTC).isoformat())
    assert done.returncode == 0, done.stderr[-3000:]
    on_topic = [t for t in pipeline.read(pipeline.topics.market_ticks) if t.market == market.key]
    assert on_topic[0] == report
    planned = plan(market, changes[market], (T0, -1), T0 + SLOT, GRID)
    assert on_topic[1:] == [t for t in planned if t.event_time >= report.event_time]
    assert len(on_topic[1:]) < len(planned)
