"""Building connector workers from options, the command's errors, and the account check that
stops the aws connector before its first decision."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    PartialCredentialsError,
)
from typer.testing import CliRunner

from connectors.aws import AwsConnector, AwsOptions
from connectors.base import FatalError, TransientError
from connectors.sim import SimConnector
from connectors.worker import ConnectorWorker, WorkerOptions, build_connector, parse_image_ids
from solver.synthetic import SyntheticMarketSpec
from solver.traces import load_traces
from streams.cli import app
from streams.settings import Settings, write_catalogue
from tests.connectors.helpers import committed, decision, publish, read_all

REPO = Path(__file__).resolve().parents[2]


def test_image_ids_apply_to_every_region_or_to_one():
    assert parse_image_ids(["ami-1", "us-west-2=ami-2"]) == {"*": "ami-1", "us-west-2": "ami-2"}
    with pytest.raises(ValueError, match="expected AMI or REGION=AMI"):
        parse_image_ids(["us-west-2="])


@pytest.mark.parametrize(("args", "message"), [
    (["nope"], "No such command 'nope'"),
    (["log", "--image-id", "ami-1"], "No such option: --image-id"),  # aws's, not log's
    (["sim", "--json"], "No such option: --json"),
    (["aws"], "expected an AMI"),
    (["aws", "--image-id", "=ami-1"], "expected AMI or REGION=AMI"),
    (["aws", "--image-id", "ami-1", "--region", "us-east-1"],
     "aws: expected the regions and instance types it may launch in: --region and "
     "--allowed-instance-types, or a catalogue (SPOTSCHED_MARKETS_FILE) to take them from"),
])
def test_the_command_rejects_bad_options_clearly(args, message, tmp_path):
    result = CliRunner().invoke(app, ["connector", *args, "--data-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


def test_workers_keep_their_records_in_the_data_directory_per_group(tmp_path):
    settings = Settings(data_dir=tmp_path, slot_seconds=3600)
    options = WorkerOptions("sim", group="g1", sim_market=SyntheticMarketSpec(n_markets=2,
                                                                             days=2))
    worker = ConnectorWorker(settings, options)
    assert isinstance(worker.connector, SimConnector)
    assert sorted(p.name for p in tmp_path.glob("*.sqlite3")) == ["g1.applied.sqlite3",
                                                          "g1.journal.sqlite3"]
    assert options.group_id(Settings()) == "g1"
    assert WorkerOptions("log").group_id(Settings()) == "spotsched-connector-log"


def test_the_aws_connector_reconciles_the_catalogues_regions_by_default(tmp_path, plain_trace):
    catalogue = tmp_path / "markets.json"
    catalogue.write_text(write_catalogue([t.market for t in load_traces([plain_trace])]))
    connector = build_connector(Settings(markets_file=catalogue),
                                WorkerOptions("aws", aws_image_ids={"*": "ami-1"}))
    assert isinstance(connector, AwsConnector)
    assert connector.options.regions == ("us-east-1", "us-west-2")


@pytest.fixture
def plain_trace(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text("timestamp,market,spot_price,available,on_demand_price\n"
                    "0,aws/us-west-2/us-west-2a/p3.2xlarge,1.0,1,3.06\n"
                    "0,aws/us-east-1/us-east-1a/p3.2xlarge,1.0,1,3.06\n"
                    "0,gcp/us-central1/us-central1-a/a2,1.0,1,3.67\n")
    return path


NO_CREDENTIALS = {"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/nonexistent",
                  "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"}
"""An environment in which the AWS chain finds no credentials (no files, no instance role)."""


@pytest.fixture
def no_aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in NO_CREDENTIALS.items():
        monkeypatch.setenv(name, value)


def aws(endpoint: str | None = None, client_for=None) -> AwsConnector:
    return AwsConnector(AwsOptions(image_ids={"*": "ami-1"}, regions=("us-east-1", "us-west-2"),
                                   endpoint_url=endpoint), client_for=client_for)


def test_the_account_check_stops_at_missing_credentials_at_once(no_aws_credentials,
                                                                 moto_endpoint):
    started = time.monotonic()
    with pytest.raises(FatalError, match="EC2 DescribeRegions: no usable AWS credentials"):
        aws(moto_endpoint).check_account()
    assert time.monotonic() - started < 5


def test_the_account_check_stops_at_an_endpoint_out_of_reach(aws_credentials):
    with pytest.raises(FatalError, match="EC2 DescribeRegions: cannot reach the endpoint"):
        aws(f"http://127.0.0.1:{_closed_port()}").check_account()


def test_the_account_check_passes_an_account_that_works(moto_endpoint):
    aws(moto_endpoint).check_account()


class Failing:
    """An EC2 client whose every call raises ``error``."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            raise self.error
        return call


def client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "no"}}, "DescribeRegions")


ACCOUNT_FAULTS = [
    NoCredentialsError(),
    PartialCredentialsError(provider="env", cred_var="AWS_SECRET_ACCESS_KEY"),
    EndpointConnectionError(endpoint_url="http://127.0.0.1:1"),
    ConnectTimeoutError(endpoint_url="http://127.0.0.1:1"),
    *map(client_error, ["AuthFailure", "UnauthorizedOperation", "InvalidClientTokenId",
                        "SignatureDoesNotMatch", "ExpiredToken", "OptInRequired"]),
]


@pytest.mark.parametrize("error", ACCOUNT_FAULTS, ids=lambda e: type(e).__name__ + str(e)[:30])
async def test_account_faults_stop_the_worker_at_the_check_and_at_any_decision(error):
    connector = aws(client_for=lambda region: Failing(error))
    with pytest.raises(FatalError):
        connector.check_account()
    with pytest.raises(FatalError):
        await connector.apply(decision("job-1", on_demand=1))


@pytest.mark.parametrize("error", [ConnectionClosedError(endpoint_url="http://127.0.0.1:1"),
                                   client_error("RequestLimitExceeded")])
async def test_a_lost_connection_or_throttling_is_left_to_the_decisions(error):
    connector = aws(client_for=lambda region: Failing(error))
    connector.check_account()  # a warning: the decisions retry it
    with pytest.raises(TransientError):
        await connector.apply(decision("job-1", on_demand=1))


class NotOptedIn:
    def describe_regions(self, RegionNames: list[str]) -> dict:
        return {"Regions": [{"RegionName": r, "OptInStatus": "not-opted-in"}
                            for r in RegionNames]}


def test_the_account_check_stops_at_a_region_the_account_has_not_enabled():
    with pytest.raises(FatalError, match="region us-east-1: not enabled for this AWS account"):
        aws(client_for=lambda region: NotOptedIn()).check_account()


@pytest.mark.kafka
def test_the_aws_connector_without_credentials_exits_in_one_line_committing_nothing(
        kafka_settings, no_aws_credentials, tmp_path):
    asyncio.run(publish(kafka_settings, kafka_settings.topics.decisions,
                        [decision(f"job-{n}", on_demand=1) for n in range(5)]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOTSCHED_")}
    env.update({"PYTHONPATH": str(REPO),
                "SPOTSCHED_BOOTSTRAP_SERVERS": kafka_settings.bootstrap_servers,
                "SPOTSCHED_TOPICS__DECISIONS": kafka_settings.topics.decisions,
                "SPOTSCHED_TOPICS__DEAD_LETTERS": kafka_settings.topics.dead_letters})
    done = subprocess.run(
        [sys.executable, "-m", "streams", "connector", "aws", "--image-id", "ami-0abc",
         "--region", "us-east-1", "--region", "us-west-2", "--allowed-instance-types",
         "p3.2xlarge", "--data-dir", str(tmp_path),
         "--group", "no-credentials"],
        env=env, capture_output=True, text=True, timeout=60, check=False)
    ended = time.time()
    assert done.returncode != 0
    # From the connector built (its first log line, past the interpreter's start) to the exit.
    built = re.search(r"^(\S+ \S+) INFO connectors.worker: aws connector:", done.stderr,
                      re.MULTILINE)
    assert built is not None, done.stderr
    took = ended - datetime.strptime(built.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
    assert took < 5, took
    errors = [line for line in (done.stdout + done.stderr).splitlines() if "error" in line.lower()]
    assert errors == ["error: EC2 DescribeRegions: no usable AWS credentials (Unable to locate "
                      "credentials); expected AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                      "AWS_PROFILE, or an instance role"], done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert asyncio.run(read_all(kafka_settings, kafka_settings.topics.dead_letters)) == []
    assert asyncio.run(committed(kafka_settings, "no-credentials")) is None


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
