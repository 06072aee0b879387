"""Hypothesis strategies producing valid events of every type."""

from __future__ import annotations

import base64
import operator
import string
from datetime import UTC, datetime, timedelta
from functools import cache

from hypothesis import strategies as st

from solver.forecast.models import MarketModels
from solver.market import build_market_data
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from streams.contract import (
    AvailabilityTick,
    DeadLetter,
    Envelope,
    EpochClosed,
    JobCancelled,
    JobFinished,
    JobProgress,
    JobSubmitted,
    MarketBoundary,
    MarketView,
    Outlook,
    PriceTick,
    ProvisioningDecision,
    PublishedForecast,
)
from streams.contract.fields import (
    MAX_AVAILABLE,
    MAX_INSTANCES,
    MAX_OVERHEAD_SECONDS,
    MAX_PRICE,
    MAX_SLOT_SECONDS,
    MIN_PRICE,
    MIN_SLOT_SECONDS,
)

times = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
releases = st.datetimes(  # room for deadlines up to 2 * 10**7 s later, before 2100
    min_value=datetime(2000, 1, 1), max_value=datetime(2099, 5, 1), timezones=st.just(UTC)
)
_first = string.ascii_letters + string.digits
names = st.builds(operator.add, st.sampled_from(_first),
                  st.text(_first + "._:@+=-", max_size=11))
market_keys = st.tuples(names, names, names, names).map("/".join)
job_ids = st.builds(operator.add, st.sampled_from(_first),
                    st.text(_first + "._:@+=-/", max_size=39))
texts = st.text(max_size=60)
amounts = st.floats(min_value=0, max_value=1e6)
positives = st.floats(min_value=1e-6, max_value=1e6)
prices = st.floats(min_value=0, max_value=MAX_PRICE)
tick_prices = st.floats(min_value=MIN_PRICE, max_value=MAX_PRICE)
slot_lengths = st.floats(min_value=MIN_SLOT_SECONDS, max_value=MAX_SLOT_SECONDS)
counts = st.integers(min_value=0, max_value=10_000)
instances = st.integers(min_value=0, max_value=MAX_INSTANCES)
available = st.integers(min_value=0, max_value=MAX_AVAILABLE)
seconds = st.integers(min_value=1, max_value=10**7).map(lambda s: timedelta(seconds=s))


@st.composite
def job_submitted(draw: st.DrawFn) -> JobSubmitted:
    release = draw(releases)
    soft = release + draw(seconds)
    n_min = draw(st.integers(1, 64))
    value = draw(amounts)
    return JobSubmitted(
        event_time=draw(times),
        job_id=draw(job_ids),
        workload=draw(positives),
        release=release,
        soft_deadline=soft,
        hard_deadline=soft + draw(st.just(timedelta(0)) | seconds),
        n_min=n_min,
        n_max=draw(st.integers(n_min, 128)),
        alpha=draw(st.floats(0.01, 100)),
        beta=draw(st.floats(0, 100)),
        value=value,
        value_at_hard_deadline=draw(st.floats(-1e6, value)),
        miss_penalty=draw(amounts),
        restart_overhead=draw(st.floats(0, MAX_OVERHEAD_SECONDS)),
        allowed_markets=draw(st.none() | st.lists(market_keys, min_size=1, max_size=4)),
        allow_spot=draw(st.booleans()),
        checkpoint_gb=draw(st.floats(0, 1e6)),
        home_region=draw(st.none() | st.sampled_from(["aws/us-east-1", "gcp/europe-west4"])),
        max_hourly_usd=draw(st.none() | st.floats(0.01, 1e6)),
        market_patterns=draw(st.none() | st.lists(st.sampled_from(["gcp/us-*", "*/a3-*", "*"]),
                                                  min_size=1, max_size=3)),
    )


price_ticks = st.builds(
    PriceTick,
    event_time=times,
    market=market_keys,
    spot_price=tick_prices,
    on_demand_price=st.none() | tick_prices,
)
availability_ticks = st.builds(
    AvailabilityTick,
    event_time=times,
    market=market_keys,
    available=available,
    reason=st.sampled_from([None, "obtained", "refused", "preempted", "probe"]),
)
job_progress = st.builds(
    JobProgress,
    event_time=times,
    job_id=job_ids,
    work_done=amounts,
    remaining_work=st.none() | positives,
)
job_cancelled = st.builds(
    JobCancelled, event_time=times, job_id=job_ids, reason=st.none() | texts
)
job_finished = st.builds(JobFinished, event_time=times, job_id=job_ids)
market_views = st.builds(
    MarketView,
    spot_price_now=prices,
    spot_available_now=available,
    on_demand_price=prices,
    price_forecast=st.none() | st.floats(-1e6, 1e6),
    capacity_probability=st.none() | st.floats(0, 1),
    move_from=st.none() | st.just("aws/us-east-1/us-east-1a"),
    move_locality=st.none() | st.sampled_from(["same-region", "cross-region", "cross-cloud"]),
    move_egress_usd=st.none() | st.floats(0, 1e6),
    move_transfer_seconds=st.none() | st.floats(0, 1e5),
    spot_denied=st.none() | st.booleans(),
)


@st.composite
def decisions(draw: st.DrawFn) -> ProvisioningDecision:
    action = draw(st.sampled_from(["run", "idle", "release"]))
    spot = draw(instances) if action == "run" else 0
    on_demand = draw(instances.filter(lambda n: n > 0) if action == "run" and not spot
                     else instances if action == "run" else st.just(0))
    return ProvisioningDecision(
        event_time=draw(times), job_id=draw(job_ids), epoch=draw(counts),
        slot_start=draw(times), slot_seconds=draw(slot_lengths), market=draw(market_keys),
        spot=spot, on_demand=on_demand, revision=draw(counts), policy=draw(names),
        action=action,
        release_cause=draw(st.sampled_from(["finished", "cancelled", "deadline_missed",
                                            "failed"])) if action == "release" else None,
        expected_cost_usd=draw(amounts), slack_seconds=draw(st.floats(-1e7, 1e7)),
        market_view=None if action == "release" else draw(st.none() | market_views),
        reason=draw(texts))


encoded = st.one_of(
    st.tuples(texts, st.just("text")),
    st.tuples(st.binary(max_size=40).map(lambda b: base64.b64encode(b).decode()),
              st.just("base64")))


@st.composite
def dead_letters(draw: st.DrawFn) -> DeadLetter:
    raw, raw_encoding = draw(st.none() | encoded) or (None, "text")
    key, key_encoding = draw(st.none() | encoded) or (None, "text")
    return DeadLetter(
        event_time=draw(times), raw=raw, raw_encoding=raw_encoding, source_topic=draw(names),
        source_key=key, source_key_encoding=key_encoding, partition=draw(st.none() | counts),
        offset=draw(st.none() | counts), reason=draw(texts), error_type=draw(names))


market_boundaries = st.builds(
    MarketBoundary,
    event_time=times,
    market=market_keys,
    slot_seconds=slot_lengths,
    price=st.none() | prices,
    availability=st.none() | available,
    price_now=prices,
    availability_now=available,
)


@cache
def real_outlooks() -> tuple[Outlook, ...]:
    """Outlooks a forecaster made on a synthetic market, after 0 to 200 slots."""
    data = build_market_data(synthetic_ticks(SyntheticMarketSpec(seed=1, n_markets=2, days=9)),
                             3600.0)
    models = MarketModels(2, data.origin, data.slot_seconds)
    return tuple(Outlook.model_validate(
        models.outlooks(data.price[:, :t], data.availability[:, :t], data.origin)[m].to_wire())
        for t in (0, 1, 30, 200) for m in range(2))


market_forecasts = st.builds(
    PublishedForecast,
    event_time=times,
    market=market_keys,
    slot_seconds=slot_lengths,
    price=st.lists(st.none() | prices, max_size=6).map(tuple),
    availability=st.lists(st.none() | st.floats(0, 1), max_size=6).map(tuple),
    price_error=st.none() | amounts,
    availability_error=st.none() | amounts,
    outlook=st.none() | st.deferred(lambda: st.sampled_from(real_outlooks())),
)


@st.composite
def epochs(draw: st.DrawFn) -> EpochClosed:
    n = draw(st.integers(1, 4))
    closed = draw(st.booleans())
    return EpochClosed(
        event_time=draw(times),
        epoch=draw(counts),
        slot_seconds=draw(slot_lengths),
        markets=tuple(draw(st.lists(market_keys, min_size=n, max_size=n))),
        price=tuple(draw(st.lists(prices, min_size=n, max_size=n))) if closed else None,
        availability=tuple(draw(st.lists(available, min_size=n, max_size=n))) if closed
        else None,
        price_now=tuple(draw(st.lists(prices, min_size=n, max_size=n))),
        availability_now=tuple(draw(st.lists(available, min_size=n, max_size=n))),
    )


BY_TYPE: dict[str, st.SearchStrategy[Envelope]] = {
    "price_tick": price_ticks,
    "availability_tick": availability_ticks,
    "job_submitted": job_submitted(),
    "job_progress": job_progress,
    "job_cancelled": job_cancelled,
    "job_finished": job_finished,
    "provisioning_decision": decisions(),
    "dead_letter": dead_letters(),
    "market_boundary": market_boundaries,
    "market_forecast": market_forecasts,
    "epoch_closed": epochs(),
}
events = st.one_of(*BY_TYPE.values())
