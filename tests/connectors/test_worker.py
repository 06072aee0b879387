"""Building connector workers from options, and the command's errors (no broker)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from connectors.aws import AwsConnector
from connectors.sim import SimConnector
from connectors.worker import ConnectorWorker, WorkerOptions, build_connector, parse_image_ids
from solver.synthetic import SyntheticMarketSpec
from streams.cli import app
from streams.settings import Settings, write_catalogue
from streams.traces import load_traces


def test_image_ids_apply_to_every_region_or_to_one():
    assert parse_image_ids(["ami-1", "us-west-2=ami-2"]) == {"*": "ami-1", "us-west-2": "ami-2"}
    with pytest.raises(ValueError, match="expected AMI or REGION=AMI"):
        parse_image_ids(["us-west-2="])


@pytest.mark.parametrize(("args", "message"), [
    (["nope"], "connector='nope': expected one of log, sim, aws"),
    (["aws"], "expected an AMI"),
    (["aws", "--image-id", "=ami-1"], "expected AMI or REGION=AMI"),
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
