"""``spotsched decisions``: tail the provisioning decisions."""

from __future__ import annotations

from typing import Annotated

import typer

from streams.cli.app import app
from streams.cli.common import broker_logging, one_shot_settings, run_on_broker
from streams.cli.errors import console
from streams.cli.options import Broker


@app.command()
def decisions(
    bootstrap_servers: Broker = None,
    json_lines: Annotated[bool, typer.Option("--json", help="One JSON event per line.")] = False,
    follow: Annotated[bool, typer.Option(
        "--follow", help="Keep waiting for new decisions.")] = False,
    group: Annotated[str | None, typer.Option(
        help="Consumer group: resume where it left off.")] = None,
) -> None:
    """Tail provisioning decisions as a table or JSON lines.

    Each decision's slot start (UTC), job, market, instances, expected cost, slack, planner and
    reason. A decision written again after a worker's restart (the same idempotency key) is
    marked as a replay: connectors apply each key once. --json prints the events as they are,
    with their idempotency keys."""
    from streams.cli.reports.decisions import REPLAY_MARK, SeenKeys, decisions_table
    from streams.contract import ProvisioningDecision, dump_event
    from streams.contract.printable import printable
    from streams.kafka.clients import read_decisions

    settings = one_shot_settings(follow, bootstrap_servers=bootstrap_servers)
    broker_logging()

    async def tail() -> None:
        rows: list[ProvisioningDecision] = []
        seen = SeenKeys()
        async for d in read_decisions(settings, group, idle_timeout=None if follow else 3.0):
            if json_lines:
                typer.echo(dump_event(d).decode())
            elif follow:
                mark = f" {REPLAY_MARK} replay" if seen.replay(d) else ""
                console.print(printable(
                    f"{d.slot_start:%Y-%m-%d %H:%M}{mark} {d.job_id} {d.market} spot={d.spot} "
                    f"on-demand={d.on_demand} ${d.expected_cost_usd:.2f} "
                    f"[{d.planner or d.policy}] {d.reason}"),
                              highlight=False, markup=False, soft_wrap=True)
            else:
                rows.append(d)
        if not json_lines and not follow:
            console.print(decisions_table(rows, console))

    run_on_broker(tail())
