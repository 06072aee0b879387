"""A real Prometheus with the project's rules scrapes a real worker during a replay in which
one job cannot finish by its hard deadline: the deadline-at-risk alert must fire for it."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from solver.market import build_market_data
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from tests.kafka.pipeline_harness import REPO, Pipeline

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.slow,  # a worker, a replay and Prometheus evaluating its rules
    pytest.mark.skipif(shutil.which("prometheus") is None,
                       reason="prometheus not found: install Debian's 'prometheus' package "
                              "(deploy/install-test-deps.sh does)"),
]

SPEC = SyntheticMarketSpec(seed=7, n_markets=2, days=2)
H = 3600.0


@dataclass
class ScrapedPipeline(Pipeline):
    """A pipeline whose workers serve /metrics on ``metrics_port``."""

    metrics_port: int = 0

    def env(self) -> dict[str, str]:
        return {**super().env(), "SPOTSCHED_METRICS_PORT": str(self.metrics_port)}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


class Prometheus:
    """A Prometheus server scraping one target every second with the project's rules."""

    def __init__(self, workdir: Path, target: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = workdir / "prometheus.yml"
        config.write_text(json.dumps({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(REPO / "deploy" / "prometheus" / "rules.yml")],
            "scrape_configs": [{"job_name": "spotsched-scheduler",
                                "static_configs": [{"targets": [target]}]}],
        }))
        self.log = workdir / "prometheus.log"
        self.process = subprocess.Popen(
            ["prometheus", f"--config.file={config}",
             f"--storage.tsdb.path={workdir / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log.open("wb"), stderr=subprocess.STDOUT)

    def query(self, promql: str) -> list[dict]:
        answer = get_json(f"{self.url}/api/v1/query?"
                          + urllib.parse.urlencode({"query": promql}))
        return answer["data"]["result"]

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"prometheus exited:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2):
                    return
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"prometheus not ready:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def write_jobs(path: Path) -> None:
    """``doomed`` needs 500 h by a deadline 3 days away; ``safe`` fits easily."""
    data = build_market_data(synthetic_ticks(SPEC), H)
    start, end = data.origin, data.slot_start(data.n_slots)
    path.write_text(json.dumps([
        {"id": "doomed", "workload": 500.0, "release": start, "soft_deadline": end + 12 * H,
         "hard_deadline": end + 24 * H},
        {"id": "safe", "workload": 4.0, "release": start, "soft_deadline": start + 12 * H,
         "hard_deadline": start + 24 * H},
    ]))


def test_deadline_at_risk_fires_from_a_real_prometheus(kafka_bootstrap, tmp_path):
    catalogue = tuple(t.market for t in synthetic_ticks(SPEC))
    pipeline = ScrapedPipeline(kafka_bootstrap, tmp_path, catalogue, policy="on-demand",
                               metrics_port=free_port())
    jobs = tmp_path / "jobs.json"
    write_jobs(jobs)
    prometheus = Prometheus(tmp_path, f"127.0.0.1:{pipeline.metrics_port}")
    try:
        pipeline.wait_until_joined(pipeline.start_worker())
        prometheus.wait_ready()
        pipeline.spotsched("replay", "--synthetic-markets", str(SPEC.n_markets), "--days",
                           str(SPEC.days), "--seed", str(SPEC.seed), "--jobs", str(jobs),
                           "--bootstrap-servers", kafka_bootstrap)
        firing = 'ALERTS{alertname="JobDeadlineAtRisk", alertstate="firing"}'
        deadline = time.monotonic() + 120
        alerts: list[dict] = []
        while time.monotonic() < deadline and not alerts:
            assert pipeline.workers[0].poll() is None, pipeline.worker_logs()
            alerts = prometheus.query(firing)
            time.sleep(1.0)
        assert [a["metric"]["job_id"] for a in alerts] == ["doomed"], (
            f"{alerts}\n{prometheus.query('spotsched_job_deadline_risk_ratio')}\n"
            f"{pipeline.worker_logs()}")
        assert alerts[0]["metric"]["severity"] == "warning"
        (risk,) = prometheus.query('spotsched_job_deadline_risk_ratio{job_id="doomed"}')
        assert float(risk["value"][1]) == 1.0
        (ended,) = prometheus.query('spotsched_jobs_ended_total{outcome="finished"}')
        assert float(ended["value"][1]) == 1.0  # "safe" finished and left
        assert prometheus.query('spotsched_job_slack_seconds{job_id="safe"}') == []
    finally:
        prometheus.stop()
        pipeline.stop_workers()
