"""The SpotLake daily region-mean price loader."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from solver.market import build_market_data
from solver.traces.errors import TraceFormatError
from solver.traces.spotlake_daily import load_spotlake_daily

HEADER = "cloud,region,instance_type,date,open,high,low,close,avg\n"


def write(tmp_path, rows, name="daily.csv.gz"):
    path = tmp_path / name
    text = HEADER + "".join(f"{r}\n" for r in rows)
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    return path


def test_days_become_a_step_function_on_a_daily_grid(tmp_path):
    path = write(tmp_path, [
        "aws,us-east-1,p5.48xlarge,2024-02-02,0,0,0,0,30.0",
        "aws,us-east-1,p5.48xlarge,2024-02-01,0,0,0,0,20.0",
        "aws,us-east-1,p5.48xlarge,2024-02-04,0,0,0,0,40.0",
        "aws,us-east-1,new.type,2024-02-01,0,0,0,0,2.0",
        "aws,us-east-1,new.type,2024-02-04,0,0,0,0,4.0",
        "aws,us-west-2,p5.48xlarge,2024-02-01,0,0,0,0,9.0",
    ])
    series = load_spotlake_daily(path, regions={"us-east-1"}, on_demand_prices={"new.type": 5.0})
    assert [s.market.key for s in series] == ["aws/us-east-1/all/new.type",
                                              "aws/us-east-1/all/p5.48xlarge"]
    assert series[0].market.on_demand_price == 5.0
    assert series[1].market.on_demand_price == 98.32   # from the on-demand table
    data = build_market_data(series, 86400)
    # Days 02-01 .. 02-03 are whole slots; the missing 02-03 repeats the day before.
    assert data.n_slots == 3
    np.testing.assert_allclose(data.price[1], [20.0, 30.0, 30.0])
    np.testing.assert_array_equal(data.availability, np.ones((2, 3)))


def test_a_type_without_an_on_demand_price_gets_its_highest_spot_price(tmp_path):
    path = write(tmp_path, ["aws,eu-west-1,odd.type,2024-02-01,0,0,0,0,2.0",
                            "aws,eu-west-1,odd.type,2024-02-02,0,0,0,0,3.0"], "daily.csv")
    (series,) = load_spotlake_daily(path)
    assert series.market.on_demand_price == 3.0


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (["aws,us-east-1,p5.48xlarge,2024-02-01,0,0,0,0,abc"], "line 2: field 'avg' = 'abc'"),
        (["aws,us-east-1,p5.48xlarge,2024-02-01,0,0,0,0,0"], "field 'avg' = '0'"),
        (["aws,us-east-1,p5.48xlarge,02/01/2024,0,0,0,0,1"],
         "field 'date' = '02/01/2024': expected a day as YYYY-MM-DD"),
        (["aws,us-east-1,p5.48xlarge,2024-02-01,0,0,0,0,1",
          "aws,us-east-1,p5.48xlarge,2024-02-01,0,0,0,0,2"],
         "line 3: field 'date' = '2024-02-01': expected one row per day"),
    ],
)
def test_malformed_rows_are_refused_with_line_field_and_value(tmp_path, rows, message):
    with pytest.raises(TraceFormatError, match=message):
        load_spotlake_daily(write(tmp_path, rows))


def test_a_file_without_the_columns_is_refused(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("timestamp,market,spot_price\n")
    with pytest.raises(TraceFormatError, match="field 'header'"):
        load_spotlake_daily(path)
