"""A broker that requires SASL/PLAIN over TLS: the worker, the replay, submit, cancel,
decisions and a connector all work with credentials; a wrong password, a TLS/plaintext
mismatch and a missing CA file each fail in one line naming the setting; no secret is ever
printed or logged."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from deploy.kafka.devkafka import KafkaBroker, fetch_jars, kafka_home
from solver.market import build_market_data
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from streams.contract import JobCancelled, JobSubmitted, parse_event
from streams.pipeline.decision_encoder import allocation_rows
from streams.settings import Settings
from tests.kafka.pipeline_harness import REPO, SNAPSHOT_KEY, Pipeline, rows_from_jsonl
from tests.kafka.tls import make_sasl_ssl

pytestmark = pytest.mark.kafka

SPEC = SyntheticMarketSpec(seed=8, n_markets=2, days=4)
USER = "spotsched"


@dataclass(frozen=True)
class Secure:
    broker: KafkaBroker
    password: str
    ca_file: Path

    def env(self, **changes: str) -> dict[str, str]:
        return {"SPOTSCHED_SECURITY_PROTOCOL": "SASL_SSL", "SPOTSCHED_SASL_MECHANISM": "PLAIN",
                "SPOTSCHED_SASL_USERNAME": USER, "SPOTSCHED_SASL_PASSWORD": self.password,
                "SPOTSCHED_SSL_CAFILE": str(self.ca_file), **changes}


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory):
    password = f"pw-{uuid.uuid4().hex}"
    material = make_sasl_ssl(tmp_path_factory.mktemp("tls"),
                             {"admin": f"admin-{uuid.uuid4().hex}", USER: password},
                             f"store-{uuid.uuid4().hex}")
    broker = KafkaBroker(fetch_jars(kafka_home()), tmp_path_factory.mktemp("kafka-sasl"),
                         sasl_ssl=material)
    with broker:
        yield Secure(broker, password, material.ca_file)


@dataclass
class SecurePipeline(Pipeline):
    """A pipeline whose clients and workers log in with ``credentials`` (environment)."""

    credentials: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        return {**super().env(), **self.credentials}

    @property
    def settings(self) -> Settings:
        c = self.credentials
        return super().settings.model_copy(update={
            "security_protocol": c["SPOTSCHED_SECURITY_PROTOCOL"],
            "sasl_mechanism": c["SPOTSCHED_SASL_MECHANISM"],
            "sasl_username": c["SPOTSCHED_SASL_USERNAME"],
            "sasl_password": Settings(sasl_password=c["SPOTSCHED_SASL_PASSWORD"]).sasl_password,
            "ssl_cafile": Path(c["SPOTSCHED_SSL_CAFILE"])})


def run(env: dict[str, str], cwd: Path, *args: str, timeout: float = 120
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streams", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.slow  # a worker, two replays, the console commands and a connector
def test_every_client_works_with_credentials_and_never_shows_them(secure, tmp_path):
    catalogue = tuple(t.market for t in synthetic_ticks(SPEC))
    pipeline = SecurePipeline(secure.broker.bootstrap, tmp_path, catalogue, policy="greedy",
                              credentials=secure.env())
    replay = ["--synthetic-markets", str(SPEC.n_markets), "--days", str(SPEC.days), "--seed",
              str(SPEC.seed), "--n-jobs", "6", "--policy", "greedy"]
    inproc = tmp_path / "inproc.jsonl"
    outputs = [pipeline.spotsched("replay", *replay, "--decisions", str(inproc))]
    expected = rows_from_jsonl(inproc)
    assert len(expected) > 20
    try:
        pipeline.wait_until_joined(pipeline.start_worker())
        outputs.append(pipeline.spotsched("replay", *replay, "--bootstrap-servers",
                                          secure.broker.bootstrap))
        assert pipeline.wait_for_rows(expected) == expected
        shown = run(pipeline.env(), tmp_path, "decisions", "--json")
        outputs += [shown.stdout, shown.stderr]
        assert shown.returncode == 0, shown.stderr
        assert allocation_rows([parse_event(line) for line in shown.stdout.splitlines()]) == (
            expected)
        data = build_market_data(synthetic_ticks(SPEC), 3600.0)
        later = data.origin + 10 * 86_400
        jobs = tmp_path / "jobs.json"
        jobs.write_text(json.dumps([{"id": "later", "workload": 2.0, "release": later,
                                     "soft_deadline": later + 7200,
                                     "hard_deadline": later + 9000}]))
        for command in (["submit", str(jobs)], ["cancel", "later"]):
            done = run(pipeline.env(), tmp_path, *command)
            outputs += [done.stdout, done.stderr]
            assert done.returncode == 0, done.stdout + done.stderr
        events = pipeline.read(pipeline.topics.job_events)
        assert any(isinstance(e, JobSubmitted) and e.job_id == "later" for e in events)
        assert any(isinstance(e, JobCancelled) and e.job_id == "later" for e in events)
        outputs.append(_run_log_connector(pipeline, tmp_path, len(pipeline.decisions())))
    finally:
        pipeline.stop_workers()
    outputs.append((tmp_path / "worker-0.log").read_text())
    everything = "\n".join(outputs)
    assert "Worker ready" in everything and "applied " in everything
    assert secure.password not in everything


def _run_log_connector(pipeline: SecurePipeline, tmp_path: Path, decisions: int) -> str:
    """Run the log connector until it has applied ``decisions`` decisions; its output."""
    log = tmp_path / "connector.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "streams", "connector", "log", "--data-dir",
         str(tmp_path / "connector"), "--group", f"{pipeline.app_id}-log"],
        env=pipeline.env(), cwd=tmp_path, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    try:
        while log.read_text().count("applied ") < decisions:
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, (
                f"{log.read_text().count('applied ')} of {decisions} applied\n"
                + log.read_text()[-3000:])
            time.sleep(0.5)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert process.returncode == 0, log.read_text()[-3000:]
    return log.read_text()


@pytest.mark.parametrize(("mistake", "expected"), [
    ("wrong password", "sasl_username/sasl_password (SPOTSCHED_SASL_USERNAME, "
                       "SPOTSCHED_SASL_PASSWORD): the broker at {secure} refused user "
                       "'spotsched' with SASL PLAIN"),
    ("plaintext to TLS", "security_protocol (SPOTSCHED_SECURITY_PROTOCOL) = PLAINTEXT: "
                         "the listener at {secure} speaks TLS; expected SSL or SASL_SSL"),
    ("TLS to plaintext", "security_protocol (SPOTSCHED_SECURITY_PROTOCOL) = SASL_SSL: "
                         "the TLS handshake with {plain} failed"),
    ("missing CA file", "ssl_cafile (SPOTSCHED_SSL_CAFILE) = '{missing}': expected an "
                        "existing file (no such file)"),
])
@pytest.mark.parametrize("command", ["submit", "worker", "decisions"])
def test_each_mistake_is_one_line_naming_the_setting(secure, kafka_bootstrap, tmp_path,
                                                     mistake, expected, command):
    missing = tmp_path / "no-ca.pem"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOTSCHED_")}
    env.update({"PYTHONPATH": str(REPO), "SPOTSCHED_BROKER_TIMEOUT_SECONDS": "20",
                "SPOTSCHED_BOOTSTRAP_SERVERS": kafka_bootstrap,
                "SPOTSCHED_SNAPSHOT_KEY": SNAPSHOT_KEY})
    env.update({
        "wrong password": secure.env(SPOTSCHED_SASL_PASSWORD=f"wrong-{uuid.uuid4().hex}",
                                     SPOTSCHED_BOOTSTRAP_SERVERS=secure.broker.bootstrap),
        "plaintext to TLS": {"SPOTSCHED_BOOTSTRAP_SERVERS": secure.broker.bootstrap},
        "TLS to plaintext": secure.env(SPOTSCHED_BOOTSTRAP_SERVERS=kafka_bootstrap),
        "missing CA file": secure.env(SPOTSCHED_SSL_CAFILE=str(missing)),
    }[mistake])
    catalogue = tmp_path / "markets.json"
    catalogue.write_text('{"aws/r/z/t": 3.0}')
    jobs = tmp_path / "jobs.json"
    jobs.write_text('[{"id": "j", "workload": 1.0, "release": 1.9e9, "soft_deadline": 1.90001e9,'
                    ' "hard_deadline": 1.90002e9}]')
    args = {"submit": ["submit", str(jobs)], "decisions": ["decisions"],
            "worker": ["worker", "--markets-file", str(catalogue), "--data-dir", str(tmp_path)]}
    done = run(env, tmp_path, *args[command], timeout=60)
    output = (done.stdout + done.stderr).strip()
    assert done.returncode == (2 if mistake == "missing CA file" else 3), output  # input, broker
    assert "\n" not in output and "Traceback" not in output, output
    assert output.startswith("error: ") and expected.format(
        secure=secure.broker.bootstrap, plain=kafka_bootstrap, missing=missing) in output, output
    for secret in {secure.password, env.get("SPOTSCHED_SASL_PASSWORD", secure.password)}:
        assert secret not in output
