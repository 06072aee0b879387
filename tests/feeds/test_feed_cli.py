"""``spotsched feed aws``: bad options and catalogues end in one line, before any connection."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from connectors.feeds.catalogue import feed_markets
from solver.market import Market
from streams.cli import app

runner = CliRunner()
CATALOGUE = Path(__file__).resolve().parents[2] / "deploy" / "synthetic-markets.json"


@pytest.mark.parametrize(("args", "message"), [
    (["--zone", "us-east-1a"], "error: --zone and --instance-type: expected both (every zone "
     "gets every type) or neither (the catalogue's markets)"),
    (["--markets-file", str(CATALOGUE), "--heartbeat-seconds", "700"], "error: --heartbeat-seconds "
     "700: expected a divisor of the slot length 3600 s, so every slot boundary is a heartbeat"),
    (["--markets-file", str(CATALOGUE), "--since", "yesterday"], "error: --since 'yesterday': "
     "expected an ISO-8601 time with Z or an offset, e.g. 2025-01-06T00:00:00Z"),
    (["--markets-file", str(CATALOGUE), "--since", "2026-01-02T00:00:00Z", "--until",
      "2026-01-01T00:00:00Z"], "error: --until 2026-01-01T00:00:00+00:00: expected a time "
     "after --since 2026-01-02T00:00:00+00:00"),
    (["--markets-file", str(CATALOGUE), "--poll-seconds", "0"],
     "error: --poll-seconds 0.0: expected a number of seconds > 0"),
    (["--markets-file", str(CATALOGUE), "--max-attempts", "0"],
     "error: --max-attempts 0: expected at least 1"),
    (["--markets-file", str(CATALOGUE), "--available", "-1"],
     "error: --available -1: expected a count >= 0"),
    (["--markets-file", str(CATALOGUE), "--region", "eu-west-1"], "error: markets: expected at "
     "least one aws market in regions eu-west-1 among the 4 aws markets given"),
    (["--zone", "us-east-1a", "--instance-type", "a100_40gb_8"], "error: instance type "
     "'a100_40gb_8': expected a type with a known on-demand price: pass --on-demand-price "
     "a100_40gb_8=USD_PER_HOUR or --prices FILE"),
])
def test_bad_options_end_in_one_line(args, message, monkeypatch):
    monkeypatch.delenv("SPOTSCHED_MARKETS_FILE", raising=False)
    result = runner.invoke(app, ["feed", "aws", *args], catch_exceptions=False)
    assert result.exit_code == 2
    assert " ".join(result.output.split()).startswith(message)
    assert "Traceback" not in result.output


def test_markets_from_the_catalogue_or_from_zones_and_types():
    catalogue = (Market("aws", "us-east-1", "us-east-1a", "p3.2xlarge", 3.0),
                 Market("gcp", "us-central1", "us-central1-a", "a2-highgpu-1g", 3.67),
                 Market("aws", "us-west-2", "us-west-2a", "p3.2xlarge", 3.0))
    assert feed_markets("aws", catalogue) == [catalogue[0], catalogue[2]]
    assert feed_markets("aws", catalogue, regions=["us-west-2"]) == [catalogue[2]]
    flags = feed_markets("aws", None, ["us-east-1a", "us-east-1c"], ["p3.2xlarge", "x.big"],
                         on_demand_prices={"x.big": 1.5})
    assert [(m.key, m.on_demand_price) for m in flags] == [
        ("aws/us-east-1/us-east-1a/p3.2xlarge", 3.06), ("aws/us-east-1/us-east-1a/x.big", 1.5),
        ("aws/us-east-1/us-east-1c/p3.2xlarge", 3.06), ("aws/us-east-1/us-east-1c/x.big", 1.5)]
    with pytest.raises(ValueError, match="expected a catalogue"):
        feed_markets("aws", None)
