"""Prometheus metrics of a market feed, registered on a registry passed in."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

TICK_KINDS = ("price", "availability")


class FeedMetrics:
    """Published ticks, failed fetches and how far the feed has published, by source."""

    def __init__(self, registry: CollectorRegistry, source: str) -> None:
        published = Counter(
            "spotsched_feed_ticks_published_total",
            "Market ticks the feed published, by kind.", ("source", "kind"), registry=registry)
        self.published = {kind: published.labels(source, kind) for kind in TICK_KINDS}
        self.skipped = Counter(
            "spotsched_feed_ticks_skipped_total",
            "Planned ticks not published because the market already has a later tick.",
            ("source",), registry=registry).labels(source)
        self.fetch_failures = Counter(
            "spotsched_feed_fetch_failures_total",
            "Failed price history requests (each attempt).", ("source",),
            registry=registry).labels(source)
        self.watermark = Gauge(
            "spotsched_feed_watermark_timestamp_seconds",
            "Event time up to which the feed has published every market.", ("source",),
            registry=registry).labels(source)
