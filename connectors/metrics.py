"""Prometheus metrics of one connector worker, registered on a registry passed in."""

from __future__ import annotations

from typing import Literal

from prometheus_client import CollectorRegistry, Counter, Histogram

FailureKind = Literal["invalid", "permanent", "exhausted", "error"]
"""Why a decision was dead-lettered: not a decision at all, a permanent error, a transient
error that outlived its retries, or an exception the connector raised unexpectedly."""

FAILURE_KINDS: tuple[FailureKind, ...] = ("invalid", "permanent", "exhausted", "error")

Outcome = Literal["applied", "skipped", "dead_lettered"]
"""What became of a message of the decisions topic: applied and recorded, skipped as already
applied, or dead-lettered."""

OUTCOMES: tuple[Outcome, ...] = ("applied", "skipped", "dead_lettered")


class ConnectorMetrics:
    """Counters and the apply-time histogram, labelled by connector name."""

    def __init__(self, registry: CollectorRegistry, connector: str) -> None:
        labels = ("connector",)
        decisions = Counter(
            "spotsched_connector_decisions_total",
            "Messages of the decisions topic handled, by outcome.", (*labels, "outcome"),
            registry=registry,
        )
        self.decisions = {outcome: decisions.labels(connector, outcome) for outcome in OUTCOMES}
        failed = Counter(
            "spotsched_connector_decisions_failed_total",
            "Messages dead-lettered instead of applied, by kind of failure.",
            (*labels, "kind"), registry=registry,
        )
        self.failed = {kind: failed.labels(connector, kind) for kind in FAILURE_KINDS}
        self.retries = Counter(
            "spotsched_connector_retries_total",
            "Retries of decisions after transient errors.", labels, registry=registry,
        ).labels(connector)
        self.apply_seconds = Histogram(
            "spotsched_connector_apply_seconds",
            "Time to apply one decision (each attempt).", labels, registry=registry,
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 15.0, 60.0),
        ).labels(connector)


Limit = Literal["market", "region", "instance_type", "instances_per_job", "instances"]
"""The limit a refused decision broke (:mod:`connectors.limits`)."""

LIMITS: tuple[Limit, ...] = ("market", "region", "instance_type", "instances_per_job",
                             "instances")


class RefusalMetrics:
    """Decisions refused for breaking the connector's limits, by limit."""

    def __init__(self, registry: CollectorRegistry, connector: str) -> None:
        refused = Counter(
            "spotsched_connector_decisions_refused_total",
            "Decisions refused (and dead-lettered) for breaking the connector's limits, by "
            "limit.", ("connector", "limit"), registry=registry,
        )
        self.refused = {limit: refused.labels(connector, limit) for limit in LIMITS}
