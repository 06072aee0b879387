"""The markets a feed covers: a cloud's markets of the catalogue, or zones × instance types."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from solver.market import Market
from solver.traces.prices import on_demand_price, region_of_zone


def feed_markets(
    cloud: str,
    catalogue: Sequence[Market] | None,
    zones: Sequence[str] = (),
    instance_types: Sequence[str] = (),
    regions: Sequence[str] = (),
    on_demand_prices: Mapping[str, float] | None = None,
) -> list[Market]:
    """``zones`` × ``instance_types`` when given (priced from ``on_demand_prices`` or the
    built-in table), else the ``cloud`` markets of ``catalogue``; only ``regions``, if any."""
    if bool(zones) != bool(instance_types):
        raise ValueError("--zone and --instance-type: expected both (every zone gets every "
                         "type) or neither (the catalogue's markets)")
    if zones:
        markets = [Market(cloud, region_of_zone(zone), zone, instance_type,
                          on_demand_price(instance_type, on_demand_prices))
                   for zone in zones for instance_type in instance_types]
    elif catalogue is None:
        raise ValueError("markets: expected a catalogue (--markets-file or "
                         "SPOTSCHED_MARKETS_FILE) or --zone and --instance-type")
    else:
        markets = [m for m in catalogue if m.cloud == cloud]
    chosen = [m for m in markets if not regions or m.region in regions]
    if not chosen:
        where = f" in regions {', '.join(regions)}" if regions else ""
        raise ValueError(f"markets: expected at least one {cloud} market{where} among the "
                         f"{len(markets)} {cloud} markets given")
    return chosen
