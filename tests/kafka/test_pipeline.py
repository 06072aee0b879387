"""The pipeline on a real broker, with real worker processes."""

from __future__ import annotations

import asyncio
import itertools
import math
import re
import signal

import pytest

from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from streams.contract import JobSubmitted, PriceTick, dump_event
from streams.kafka.clients import publish_replay
from streams.pipeline.decision_encoder import allocation_rows
from streams.settings import read_catalogue
from tests.kafka.console import check_against_the_contract, console_records
from tests.kafka.pipeline_harness import (
    Pipeline,
    publish_raw,
    rows_from_jsonl,
    wait_for,
)
from tests.kafka.pipeline_harness import synthetic_events as harness_events
from tests.kafka.pipeline_harness import synthetic_expectation as harness_expectation
from tests.traces_dir import needs_traces, traces_dir

pytestmark = [pytest.mark.kafka, pytest.mark.slow]  # worker processes, a replay each

SPEC = SyntheticMarketSpec(seed=5, n_markets=3, days=8)
N_JOBS = 12


def synthetic_expectation(pipeline: Pipeline, tmp_path) -> list[tuple]:
    return harness_expectation(pipeline, tmp_path, SPEC, N_JOBS)


def synthetic_events():
    return harness_events(SPEC, N_JOBS)


@needs_traces
def test_a_real_trace_through_kafka_gives_the_in_process_decisions(pipelines, tmp_path):
    folder = traces_dir() / "skypilot-spot-traces/availability/1-node/aws-10-26-2022"
    traces = [str(folder / "us-west-2a_v100_1.json"), str(folder / "us-west-2b_v100_1.json")]
    trace_args = [a for t in traces for a in ("--trace", t)]
    catalogue_file = tmp_path / "markets.json"
    catalogue_file.write_text(_run_cli(tmp_path, "markets", *trace_args))
    pipeline = pipelines(read_catalogue(catalogue_file), policy="uniform-progress")
    inproc = tmp_path / "inproc.jsonl"
    pipeline.spotsched("replay", *trace_args, "--n-jobs", "15", "--policy", pipeline.policy,
                       "--decisions", str(inproc))
    expected = rows_from_jsonl(inproc)
    assert len(expected) > 100
    pipeline.wait_until_joined(pipeline.start_worker())
    pipeline.spotsched("replay", *trace_args, "--n-jobs", "15", "--bootstrap-servers",
                       pipeline.bootstrap)
    assert pipeline.wait_for_rows(expected) == expected
    assert pipeline.dead_letters() == []


def test_invalid_events_are_dead_lettered_while_valid_ones_flow(pipelines, tmp_path):
    events = synthetic_events()
    catalogue = synthetic_ticks(SPEC)
    pipeline = pipelines([t.market for t in catalogue])
    expected = synthetic_expectation(pipeline, tmp_path)
    pipeline.wait_until_joined(pipeline.start_worker())
    market = catalogue[0].market.key
    first = events[0].event_time
    ticks, jobs = pipeline.topics.market_ticks, pipeline.topics.job_events
    mars = "aws/mars-1/mars-1a/p3.2xlarge"
    bad = [
        (ticks, market, b"{not json"),
        (ticks, market, b'{"type": "price_tick", "event_time": 1, "market": "'
         + market.encode() + b'", "spot_price": NaN}'),
        (ticks, mars, dump_event(PriceTick(event_time=first, market=mars, spot_price=1.0))),
        (ticks, market, b'{"type": "availability_tick", "event_time": 1, "market": "'
         + market.encode() + b'", "available": 1, "colour": "blue"}'),
        (jobs, "x", b'{"type": "job_submitted", "job_id": "x"}'),
        (jobs, "x", b"\xff\xfe"),
    ]
    asyncio.run(publish_raw(pipeline, bad))
    asyncio.run(publish_replay(pipeline.settings, iter(events)))
    assert pipeline.wait_for_rows(expected) == expected
    # After the replay: a tick older than its market's last one, and a job already too late.
    late = PriceTick(event_time=first, market=market, spot_price=1.0)
    past = JobSubmitted(event_time=first, job_id="too-late", workload=1.0, release=first,
                        soft_deadline=first.timestamp() + 3600,
                        hard_deadline=first.timestamp() + 3600)
    asyncio.run(publish_raw(pipeline, [(ticks, market, dump_event(late)),
                                        (jobs, "too-late", dump_event(past))]))
    letters = wait_for(lambda: pipeline.dead_letters(), lambda ls: len(ls) >= 8)
    reasons = " | ".join(d.reason for d in letters)
    for expected_reason in ("not valid JSON", "spot_price", "expected a market of the catalogue",
                            "colour", "JobSubmitted.workload", "not valid UTF-8", "late tick",
                            "hard_deadline"):
        assert expected_reason in reasons, reasons
    assert all(d.original() for d in letters)
    assert allocation_rows(pipeline.decisions()) == expected
    # What the service wrote, as Kafka's console consumer shows it, against the schemas.
    for topic in (pipeline.topics.decisions, pipeline.topics.forecasts,
                  pipeline.topics.market_boundaries, pipeline.topics.dead_letters):
        check_against_the_contract(console_records(pipeline.bootstrap, topic,
                                                   len(pipeline.read(topic))))


@pytest.mark.parametrize("policy", ["chc:window_hours=12,commitment=2",
                                    "policy-selection:rate=2,learner=exp3,seed=4"])
def test_planners_with_parameters_decide_through_kafka_as_in_process(pipelines, tmp_path,
                                                                      policy):
    catalogue = synthetic_ticks(SPEC)
    pipeline = pipelines([t.market for t in catalogue], policy=policy)
    expected = synthetic_expectation(pipeline, tmp_path)
    pipeline.wait_until_joined(pipeline.start_worker())
    asyncio.run(publish_replay(pipeline.settings, iter(synthetic_events())))
    assert pipeline.wait_for_rows(expected) == expected
    assert pipeline.dead_letters() == []


def test_two_workers_split_the_partitions_and_decide_like_one(pipelines, tmp_path):
    catalogue = synthetic_ticks(SPEC)
    pipeline = pipelines([t.market for t in catalogue], job_partitions=4, market_partitions=4)
    expected = synthetic_expectation(pipeline, tmp_path)
    first, second = pipeline.start_worker(), pipeline.start_worker()
    pipeline.wait_until_joined(first)
    pipeline.wait_until_joined(second)
    asyncio.run(publish_replay(pipeline.settings, iter(synthetic_events())))
    assert pipeline.wait_for_rows(expected) == expected
    logs = [(pipeline.workdir / f"worker-{n}.log").read_text() for n in range(2)]
    # Each worker's own line names the market-ticks partitions it was given: some for both.
    assert all(re.search(r"market-ticks partitions assigned: \[\d", log) for log in logs)


def test_a_killed_worker_restarts_without_losing_state_or_decisions(pipelines, tmp_path):
    catalogue = synthetic_ticks(SPEC)
    pipeline = pipelines([t.market for t in catalogue])
    expected = synthetic_expectation(pipeline, tmp_path)
    events = synthetic_events()
    half = math.ceil(len(events) / 2)
    worker = pipeline.start_worker()
    pipeline.wait_until_joined(worker)
    asyncio.run(publish_replay(pipeline.settings, itertools.islice(events, half)))
    wait_for(pipeline.decisions, lambda ds: len(ds) >= 20)
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=30)
    asyncio.run(publish_replay(pipeline.settings, iter(events[half:])))
    pipeline.wait_until_joined(pipeline.start_worker())
    rows = pipeline.wait_for_rows(expected)
    assert sorted(set(rows)) == expected
    by_key: dict[str, set[bytes]] = {}
    for decision in pipeline.decisions():
        by_key.setdefault(decision.idempotency_key, set()).add(dump_event(decision))
    assert all(len(versions) == 1 for versions in by_key.values())


def _run_cli(cwd, *args: str) -> str:
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "streams", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout
