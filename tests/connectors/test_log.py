import io

from connectors.base import Applied
from connectors.log import LogConnector
from streams.contract import parse_event
from tests.connectors.helpers import decision


async def test_a_readable_line_says_when_who_what_where_and_why():
    out = io.StringIO()
    connector = LogConnector(out)
    applied = await connector.apply(decision("job-7", epoch=480001, spot=2, on_demand=1,
                                             reason="run 2 spot + 1 on-demand"))
    await connector.close()
    assert applied == Applied()
    assert out.getvalue() == (
        "2024-10-04T01:00:00Z epoch=480001 job=job-7 market=aws/us-east-1/us-east-1a/p3.2xlarge"
        " spot=2 on-demand=1 cost=$0.00 slack=1.0h policy=test key=job-7:480001:0 run: "
        "run 2 spot + 1 on-demand\n")


async def test_json_lines_are_the_decision_events_themselves():
    out = io.StringIO()
    connector = LogConnector(out, json_lines=True)
    decisions = [decision(epoch=480000 + n, on_demand=1) for n in range(3)]
    for d in decisions:
        await connector.apply(d)
    assert [parse_event(line) for line in out.getvalue().splitlines()] == decisions
