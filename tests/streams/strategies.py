"""Hypothesis strategies producing valid events of every type."""

from __future__ import annotations

import base64
import string
from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

from streams.contract.events import (
    MAX_AVAILABLE,
    MAX_INSTANCES,
    MAX_OVERHEAD_SECONDS,
    MAX_PRICE,
    MAX_SLOT_SECONDS,
    MIN_PRICE,
    MIN_SLOT_SECONDS,
    AvailabilityTick,
    DeadLetter,
    Envelope,
    EpochClosed,
    JobCancelled,
    JobFinished,
    JobProgress,
    JobSubmitted,
    MarketBoundary,
    MarketForecast,
    PriceTick,
    ProvisioningDecision,
)

times = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
releases = st.datetimes(  # room for deadlines up to 2 * 10**7 s later, before 2100
    min_value=datetime(2000, 1, 1), max_value=datetime(2099, 5, 1), timezones=st.just(UTC)
)
names = st.text(string.ascii_lowercase + string.digits + "-._", min_size=1, max_size=12)
market_keys = st.tuples(names, names, names, names).map("/".join)
job_ids = st.text(min_size=1, max_size=40)
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
decisions = st.builds(
    ProvisioningDecision,
    event_time=times,
    job_id=job_ids,
    epoch=counts,
    slot_start=times,
    slot_seconds=slot_lengths,
    market=market_keys,
    spot=instances,
    on_demand=instances,
    revision=counts,
    policy=names,
    expected_cost_usd=amounts,
    slack_seconds=st.floats(-1e7, 1e7),
    forecast=st.none() | st.dictionaries(names, st.floats(-1e6, 1e6), max_size=4),
    reason=texts,
)
dead_letters = st.builds(
    DeadLetter,
    event_time=times,
    raw=texts,
    source_topic=names,
    partition=st.none() | counts,
    offset=st.none() | counts,
    reason=texts,
    error_type=names,
) | st.builds(
    DeadLetter,
    event_time=times,
    raw=st.binary(max_size=40).map(lambda b: base64.b64encode(b).decode()),
    raw_encoding=st.just("base64"),
    source_topic=names,
    reason=texts,
    error_type=names,
)

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


market_forecasts = st.builds(
    MarketForecast,
    event_time=times,
    market=market_keys,
    slot_seconds=slot_lengths,
    price=st.lists(st.none() | prices, max_size=6).map(tuple),
    availability=st.lists(st.none() | st.floats(0, 1), max_size=6).map(tuple),
    price_error=st.none() | amounts,
    availability_error=st.none() | amounts,
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
    "provisioning_decision": decisions,
    "dead_letter": dead_letters,
    "market_boundary": market_boundaries,
    "market_forecast": market_forecasts,
    "epoch_closed": epochs(),
}
events = st.one_of(*BY_TYPE.values())
