"""Moving a job's checkpoint between markets: where it is, how far it goes, what it costs.

A job's newest checkpoint is where the job last made progress (a market's zone); at admission
it is in the job's home region (a region, no zone) if the job names one, else nowhere, so the
first launch moves nothing. A launch in a market whose place differs from the checkpoint's
*moves* it. The move's **locality** is the nearest of

* ``same-zone`` — nothing moves (the same zone, or no checkpoint yet);
* ``same-region`` — another zone of the checkpoint's region (or any zone of a home region);
* ``cross-region`` — another region of the same cloud on the same continent;
* ``cross-continent`` — another region of the same cloud on another continent;
* ``cross-cloud`` — another cloud.

A move adds its **transfer time**, ``checkpoint GB × 8 ÷ bandwidth (Gb/s)`` of the locality
rounded up to whole ``transfer_rounding_seconds``, to the restart overhead of the launch, and
bills its **egress**, ``checkpoint GB × USD/GB`` of the first egress rule matching the pair
of places, in the slot of the launch. A job without a checkpoint (0 GB) moves for free.

:data:`DEFAULT_MIGRATION` is the table the scheduler uses unless given another; its figures
and their sources are in :data:`DEFAULT_TABLE`. A table is read from a mapping of the same
shape (:meth:`MigrationTable.from_mapping`), and one read from a user's file is laid over the
default (:meth:`MigrationTable.overridden_by`): its egress rules are tried first, its
bandwidths and continents replace the default's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import Any

from solver.market import Market

LOCALITIES = ("same-zone", "same-region", "cross-region", "cross-continent", "cross-cloud")
"""Move localities, nearest first."""

MOVING = LOCALITIES[1:]
"""The localities of a move that carries the checkpoint somewhere else."""


@dataclass(frozen=True, slots=True)
class Place:
    """Where a checkpoint is: a cloud's region, and its zone when written by a market."""

    cloud: str
    region: str
    zone: str | None = None

    @staticmethod
    def of(market: Market) -> Place:
        return Place(market.cloud, market.region, market.zone)

    @staticmethod
    def parse(text: str, name: str = "place") -> Place:
        """``cloud/region`` or ``cloud/region/zone``; a one-line error naming ``name``."""
        parts = text.split("/")
        if not 2 <= len(parts) <= 3 or not all(p.strip() == p and p for p in parts):
            raise ValueError(f"{name}={text!r}: expected 'cloud/region' (e.g. aws/us-east-1) "
                             "or 'cloud/region/zone'")
        return Place(*parts)

    @property
    def region_key(self) -> str:
        """``cloud/region``: what egress rules match."""
        return f"{self.cloud}/{self.region}"

    def __str__(self) -> str:
        return self.region_key if self.zone is None else f"{self.region_key}/{self.zone}"


@dataclass(frozen=True, slots=True)
class Move:
    """What a launch costs for the checkpoint: its locality, the transfer time added to the
    restart overhead, and the egress billed."""

    locality: str
    transfer_seconds: float = 0.0
    egress_usd: float = 0.0

    @property
    def moves(self) -> bool:
        """True when the checkpoint goes somewhere else (a migration)."""
        return self.locality != "same-zone"


STAY = Move("same-zone")
"""The launch that moves nothing."""


@dataclass(frozen=True, slots=True)
class EgressRule:
    """USD per GB moved from a place matching ``source`` to one matching ``destination``
    (fnmatch patterns on ``cloud/region``), for the moves of ``locality`` (any moving
    locality when ``None``)."""

    source: str
    usd_per_gb: float
    destination: str = "*"
    locality: str | None = None

    def matches(self, source: Place, destination: Place, locality: str) -> bool:
        return ((self.locality is None or self.locality == locality)
                and fnmatchcase(source.region_key, self.source)
                and fnmatchcase(destination.region_key, self.destination))


@dataclass(frozen=True)
class MigrationTable:
    """Bandwidth per moving locality, egress rules (the first match wins), the continent of
    each region-name prefix, and the rounding of transfer times (module doc). With
    ``transfer_time`` off, moves cost egress only (no time)."""

    bandwidth_gbps: Mapping[str, float]
    egress: tuple[EgressRule, ...]
    continents: Mapping[str, str]
    transfer_rounding_seconds: float = 60.0
    transfer_time: bool = True
    _rates: dict[tuple[Place, Place], tuple[str, float, float]] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        missing = [loc for loc in MOVING if loc not in self.bandwidth_gbps]
        unknown = sorted(set(self.bandwidth_gbps) - set(MOVING))
        if missing or unknown:
            raise ValueError(f"migration table bandwidth_gbps={dict(self.bandwidth_gbps)!r}: "
                             f"expected one positive Gb/s for each of {', '.join(MOVING)}")
        for locality, gbps in self.bandwidth_gbps.items():
            if not (math.isfinite(gbps) and gbps > 0):
                raise ValueError(f"migration table bandwidth_gbps[{locality!r}]={gbps!r}: "
                                 "expected a positive number of Gb/s")
        for rule in self.egress:
            if not (math.isfinite(rule.usd_per_gb) and rule.usd_per_gb >= 0):
                raise ValueError(f"migration table egress rule {rule.source!r} -> "
                                 f"{rule.destination!r}: usd_per_gb={rule.usd_per_gb!r}: "
                                 "expected a number >= 0")
            if rule.locality is not None and rule.locality not in MOVING:
                raise ValueError(f"migration table egress rule {rule.source!r}: locality="
                                 f"{rule.locality!r}: expected one of {', '.join(MOVING)}")
        rounding = self.transfer_rounding_seconds
        if not (math.isfinite(rounding) and rounding >= 0):
            raise ValueError(f"migration table transfer_rounding_seconds={rounding!r}: "
                             "expected a number of seconds >= 0")

    def continent(self, region: str) -> str:
        """The continent of a region: the table's entry for the whole name, else for its
        prefix before the first ``-``, else the prefix itself."""
        prefix = region.split("-", 1)[0]
        return self.continents.get(region, self.continents.get(prefix, prefix))

    def locality(self, source: Place, destination: Place) -> str:
        if source.cloud != destination.cloud:
            return "cross-cloud"
        if source.region != destination.region:
            same = self.continent(source.region) == self.continent(destination.region)
            return "cross-region" if same else "cross-continent"
        if source.zone is not None and source.zone == destination.zone:
            return "same-zone"
        return "same-region"

    def move(self, source: Place | None, destination: Place, checkpoint_gb: float) -> Move:
        """The move of ``checkpoint_gb`` from ``source`` (``None``: no checkpoint yet) to a
        launch at ``destination``."""
        if source is None:
            return STAY
        locality, seconds_per_gb, usd_per_gb = self._rate(source, destination)
        if locality == "same-zone":
            return STAY
        seconds = seconds_per_gb * checkpoint_gb
        step = self.transfer_rounding_seconds
        if step > 0 and seconds > 0:
            seconds = step * math.ceil(seconds / step - 1e-9)
        return Move(locality, seconds if self.transfer_time else 0.0,
                    usd_per_gb * checkpoint_gb)

    def _rate(self, source: Place, destination: Place) -> tuple[str, float, float]:
        key = (source, destination)
        rate = self._rates.get(key)
        if rate is None:
            locality = self.locality(source, destination)
            if locality == "same-zone":
                rate = (locality, 0.0, 0.0)
            else:
                rule = next((r for r in self.egress
                             if r.matches(source, destination, locality)), None)
                if rule is None:
                    raise ValueError(f"migration table: no egress rule matches {source} -> "
                                     f"{destination} ({locality}); expected a rule for it or "
                                     "a catch-all ('from': '*')")
                rate = (locality, 8.0 / self.bandwidth_gbps[locality], rule.usd_per_gb)
            self._rates[key] = rate
        return rate

    def with_transfer_time(self, on: bool) -> MigrationTable:
        return replace(self, transfer_time=on)

    def overridden_by(self, other: Mapping[str, Any]) -> MigrationTable:
        """This table with a user's table (the mapping of :meth:`from_mapping`, every key
        optional) laid over it: its egress rules first, its bandwidths, continents and rounding
        in place of these."""
        _check_keys(other)
        rules = tuple(_rule(r, k) for k, r in enumerate(_list(other, "egress_usd_per_gb")))
        return MigrationTable(
            bandwidth_gbps={**self.bandwidth_gbps,
                            **_numbers(other.get("bandwidth_gbps", {}), "bandwidth_gbps")},
            egress=rules + self.egress,
            continents={**self.continents, **_names(other.get("continents", {}))},
            transfer_rounding_seconds=float(other.get("transfer_rounding_seconds",
                                                      self.transfer_rounding_seconds)),
            transfer_time=self.transfer_time,
        )

    @staticmethod
    def from_mapping(table: Mapping[str, Any]) -> MigrationTable:
        """A whole table from ``{"bandwidth_gbps": {locality: Gb/s}, "egress_usd_per_gb":
        [{"from": pattern, "to": pattern, "locality": name, "usd_per_gb": USD}, ...],
        "continents": {prefix: continent}, "transfer_rounding_seconds": s}`` (``to`` and
        ``locality`` optional in a rule; sources and dates may ride along as ``"source"``)."""
        _check_keys(table)
        return MigrationTable(
            bandwidth_gbps=_numbers(table.get("bandwidth_gbps", {}), "bandwidth_gbps"),
            egress=tuple(_rule(r, k) for k, r in enumerate(_list(table, "egress_usd_per_gb"))),
            continents=_names(table.get("continents", {})),
            transfer_rounding_seconds=float(table.get("transfer_rounding_seconds", 60.0)),
        )


TABLE_KEYS = frozenset({"bandwidth_gbps", "egress_usd_per_gb", "continents",
                        "transfer_rounding_seconds", "source"})
RULE_KEYS = frozenset({"from", "to", "locality", "usd_per_gb", "source"})


def _check_keys(table: Mapping[str, Any]) -> None:
    if not isinstance(table, Mapping):
        raise ValueError(f"migration table: {type(table).__name__}: expected an object")
    unknown = sorted(set(table) - TABLE_KEYS)
    if unknown:
        raise ValueError(f"migration table key {unknown[0]!r}: expected one of "
                         f"{', '.join(sorted(TABLE_KEYS))}")


def _list(table: Mapping[str, Any], key: str) -> Sequence[Any]:
    value = table.get(key, [])
    if not isinstance(value, list):
        raise ValueError(f"migration table {key}={value!r}: expected a list of rules")
    return value


def _rule(rule: Any, k: int) -> EgressRule:
    where = f"migration table egress rule {k}"
    if not isinstance(rule, Mapping) or "from" not in rule or "usd_per_gb" not in rule:
        raise ValueError(f"{where}={rule!r}: expected an object with 'from' and 'usd_per_gb'")
    unknown = sorted(set(rule) - RULE_KEYS)
    if unknown:
        raise ValueError(f"{where} key {unknown[0]!r}: expected one of "
                         f"{', '.join(sorted(RULE_KEYS))}")
    price = rule["usd_per_gb"]
    if isinstance(price, bool) or not isinstance(price, int | float):
        raise ValueError(f"{where} usd_per_gb={price!r}: expected a number >= 0")
    for key in ("from", "to", "locality"):
        if key in rule and not isinstance(rule[key], str):
            raise ValueError(f"{where} {key}={rule[key]!r}: expected text")
    return EgressRule(rule["from"], float(price), rule.get("to", "*"), rule.get("locality"))


def _numbers(value: Any, key: str) -> dict[str, float]:
    if not isinstance(value, Mapping) or any(
            isinstance(v, bool) or not isinstance(v, int | float) for v in value.values()):
        raise ValueError(f"migration table {key}={value!r}: expected an object of numbers")
    return {str(k): float(v) for k, v in value.items()}


def _names(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError(f"migration table continents={value!r}: expected an object of names")
    return {str(k): v for k, v in value.items()}


DEFAULT_TABLE: dict[str, Any] = {
    "source": "see each entry; list prices for the first 10 TB a month, looked up 2025",
    "bandwidth_gbps": {
        # Checkpoint reads from object storage measured by SkyNomad (arXiv 2601.06520,
        # artifact andylizf/skynomad-artifact sky_spot/migration_model.py, AWS S3, 2025):
        # 9.72 Gb/s within a region, 8.20 across regions, 3.59 across continents. No
        # cross-cloud measurement is cited: the slowest measured figure is assumed.
        "same-region": 9.72,
        "cross-region": 8.20,
        "cross-continent": 3.59,
        "cross-cloud": 3.59,
    },
    "continents": {
        # Region-name prefixes (AWS, GCP) and whole Azure region names.
        "us": "north-america", "ca": "north-america", "mx": "north-america",
        "northamerica": "north-america", "sa": "south-america", "southamerica": "south-america",
        "eu": "europe", "europe": "europe", "il": "middle-east", "me": "middle-east",
        "af": "africa", "africa": "africa", "ap": "asia", "asia": "asia",
        "australia": "oceania",
        "eastus": "north-america", "eastus2": "north-america", "westus": "north-america",
        "westus2": "north-america", "westus3": "north-america", "centralus": "north-america",
        "northcentralus": "north-america", "southcentralus": "north-america",
        "canadacentral": "north-america", "northeurope": "europe", "westeurope": "europe",
        "swedencentral": "europe", "uksouth": "europe", "francecentral": "europe",
        "eastasia": "asia", "southeastasia": "asia", "japaneast": "asia",
        "australiaeast": "oceania", "brazilsouth": "south-america",
    },
    "egress_usd_per_gb": [
        # Within a region object storage reads are free on all three clouds.
        {"from": "*", "locality": "same-region", "usd_per_gb": 0.0},
        # AWS: S3 data transfer out to another region (aws.amazon.com/s3/pricing, as used by
        # the SkyNomad artifact, AWS Pricing API, Nov 2024): 0.01 between us-east-1 and
        # us-east-2, 0.02 from North America and Europe, 0.08 within Asia Pacific; internet
        # (another cloud) 0.09.
        {"from": "aws/us-east-1", "to": "aws/us-east-2", "usd_per_gb": 0.01},
        {"from": "aws/us-east-2", "to": "aws/us-east-1", "usd_per_gb": 0.01},
        {"from": "aws/ap-*", "to": "aws/ap-*", "usd_per_gb": 0.08},
        {"from": "aws/*", "locality": "cross-cloud", "usd_per_gb": 0.09},
        {"from": "aws/*", "usd_per_gb": 0.02},
        # GCP: Cloud Storage data transfer within Google Cloud (cloud.google.com/storage/
        # pricing, 2025): 0.02 between regions of North America or of Europe, 0.08 within
        # Asia, 0.05 between continents (0.08 to or from Asia); internet egress, premium
        # tier, 0.12.
        {"from": "gcp/*", "locality": "cross-cloud", "usd_per_gb": 0.12},
        {"from": "gcp/asia-*", "usd_per_gb": 0.08},
        {"from": "gcp/*", "to": "gcp/asia-*", "usd_per_gb": 0.08},
        {"from": "gcp/*", "locality": "cross-continent", "usd_per_gb": 0.05},
        {"from": "gcp/*", "usd_per_gb": 0.02},
        # Azure: bandwidth between regions (azure.microsoft.com/pricing/details/bandwidth,
        # 2025): 0.02 within North America or Europe, 0.08 within Asia, 0.05 between
        # continents from North America or Europe; internet egress 0.087.
        {"from": "azure/*", "locality": "cross-cloud", "usd_per_gb": 0.087},
        {"from": "azure/*asia*", "usd_per_gb": 0.08},
        {"from": "azure/*", "locality": "cross-continent", "usd_per_gb": 0.05},
        {"from": "azure/*", "usd_per_gb": 0.02},
        # Any other cloud: AWS's rates.
        {"from": "*", "locality": "cross-cloud", "usd_per_gb": 0.09},
        {"from": "*", "usd_per_gb": 0.02},
    ],
    "transfer_rounding_seconds": 60.0,
}
"""The default migration table, with its sources (module doc for its meaning). Transfer times
are counted in whole minutes, rounded up: a copy is never instantaneous, and whole minutes
keep the hindsight program's progress lattice coarse."""

DEFAULT_MIGRATION = MigrationTable.from_mapping(DEFAULT_TABLE)
"""The table the scheduler uses unless given another."""
