"""Poison on a real broker: bad messages into market-ticks and job-events before and during the
replay of a real trace, then a SIGKILL and a restart of the worker, which rebuilds its stages
from logs holding the poison. The replayed jobs get exactly the in-process decisions, every
poison message has a dead letter, and the worker's memory stays bounded."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from streams.settings import read_catalogue
from tests.kafka.pipeline_harness import Pipeline, publish_raw, rows_from_jsonl, wait_for
from tests.traces_dir import needs_traces, traces_dir

pytestmark = [pytest.mark.kafka, pytest.mark.slow, needs_traces]  # a real trace, then a kill

TRACE = ("skynomad-artifact/"
         "aws_p3.2xlarge_availability_and_spot_price_2023-02-15_to_2023-04-02.csv.gz")
RSS_LIMIT_BYTES = 1.5 * 2**30


def poison(market: str, start: float) -> list[tuple[str, str, bytes]]:
    """(topic, key, bytes): what faulty producers send, keyed like real messages."""
    def tick(**fields) -> bytes:
        return json.dumps({"type": "price_tick", "market": market, "event_time": start,
                           "spot_price": 1.0, **fields}).encode()

    def job(**fields) -> bytes:
        return json.dumps({"type": "job_submitted", "job_id": "poison", "event_time": start,
                           "workload": 4.0, "release": start, "soft_deadline": start + 86_400,
                           "hard_deadline": start + 2 * 86_400, **fields}).encode()

    ticks, jobs = "market_ticks", "job_events"
    return [
        (ticks, market, b"[" * 10_000 + b"]" * 10_000),
        (ticks, market, tick(spot_price=1e308)),
        (ticks, market, b'{"type": "price_tick", "spot_price": NaN}'),
        (ticks, market, tick(event_time="9999-12-31T00:00:00Z")),
        (ticks, market, tick(event_time=start + 365 * 86_400)),
        (ticks, market, json.dumps({"type": "availability_tick", "market": market,
                                    "event_time": start, "available": 10**400}).encode()),
        (ticks, market, b'{"market": "' + b"x" * 900_000 + b'"}'),
        (ticks, "aws/mars-1/mars-1a/p3.2xlarge", tick(market="aws/mars-1/mars-1a/p3.2xlarge")),
        (jobs, "poison", job(workload=1e308)),
        (jobs, "poison", b'{"job_id": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        (jobs, "poison", job(hard_deadline=start, soft_deadline=start)),
        (jobs, "nobody", json.dumps({"type": "job_cancelled", "job_id": "nobody",
                                     "event_time": start}).encode()),
        (jobs, "poison", b"\xff\xfe not even text"),
    ]


def peak_rss(process: subprocess.Popen[bytes]) -> int:
    """The highest resident set size of a running process so far, in bytes."""
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for process {process.pid}")


def test_poison_before_and_during_a_real_replay_then_a_kill(kafka_bootstrap, tmp_path):
    trace = str(traces_dir() / TRACE)
    catalogue_file = tmp_path / "markets.json"
    catalogue_file.write_text(subprocess.run(
        [sys.executable, "-m", "streams", "markets", "--trace", trace], check=True,
        capture_output=True, text=True).stdout)
    catalogue = read_catalogue(catalogue_file)
    pipeline = Pipeline(kafka_bootstrap, tmp_path, catalogue, policy="uniform-progress")
    replay = ["--trace", trace, "--n-jobs", "20", "--policy", pipeline.policy]
    inproc = tmp_path / "inproc.jsonl"
    pipeline.spotsched("replay", *replay, "--decisions", str(inproc))
    expected = rows_from_jsonl(inproc)
    assert len(expected) > 100
    topics = {"market_ticks": pipeline.topics.market_ticks,
              "job_events": pipeline.topics.job_events}
    start = 1_676_419_200.0  # 2023-02-15, the trace's first day
    bad = [(topics[t], key, raw) for t, key, raw in poison(catalogue[0].key, start)]
    during = [(topics[t], key, raw) for t, key, raw in poison(catalogue[-1].key, start + 86_400)]
    try:
        asyncio.run(pipeline_topics_and_poison(pipeline, bad))
        first = pipeline.start_worker()
        pipeline.wait_until_joined(first)
        sender = threading.Thread(target=lambda: asyncio.run(publish_raw(pipeline, during)))
        publisher = subprocess.Popen(
            [sys.executable, "-m", "streams", "replay", *replay, "--bootstrap-servers",
             kafka_bootstrap],
            env=pipeline.env(), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        sender.start()
        output, _ = publisher.communicate(timeout=900)
        sender.join(timeout=120)
        assert publisher.returncode == 0, output.decode()[-3000:]
        wait_for(pipeline.decisions, lambda ds: len(ds) >= len(expected) // 3, timeout=600)
        first_rss = peak_rss(first)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        second = pipeline.start_worker()
        pipeline.wait_until_joined(second, timeout=300)
        rows = pipeline.wait_for_rows(expected, timeout=900)
        second_rss = peak_rss(second)
    finally:
        pipeline.stop_workers()
    print(f"worker peak RSS: {first_rss / 2**20:.0f} MiB before the kill, "
          f"{second_rss / 2**20:.0f} MiB after the restart")
    assert sorted(set(rows)) == expected
    letters = pipeline.dead_letters()
    originals = [letter.original() for letter in letters]
    for _, _, raw in bad + during:
        assert any(raw.startswith(o) and o for o in originals), raw[:100]
    assert max(first_rss, second_rss) < RSS_LIMIT_BYTES


async def pipeline_topics_and_poison(pipeline: Pipeline,
                                     messages: list[tuple[str, str, bytes]]) -> None:
    """Create the pipeline's topics, then send the poison: it is the first thing in them."""
    from streams.kafka.topics import ensure_topics

    await ensure_topics(pipeline.settings)
    await publish_raw(pipeline, messages)
