"""The versioned event contract: what every message on spotsched's topics holds.

It depends on nothing of the solver, so other systems can use it alone. :mod:`.events` are the
event classes (schema version 2), :mod:`.fields` their field types and bounds, :mod:`.outlook`
the wire form of a market's forecast, :mod:`.codec` reads and
writes them, :mod:`.headers` gives each message its CloudEvents headers and :mod:`.schema` its
JSON Schemas; :mod:`.fast_json` reads and writes the common messages and :mod:`.fast_ticks`
reads the plainly valid market ticks faster, exactly as the standard path does;
:mod:`.printable` escapes what a message says before it is printed. docs/contract.md describes
it for writers in any language.
"""

from streams.contract.codec import (
    MAX_EVENT_BYTES,
    MAX_NESTING,
    EventError,
    describe_validation_error,
    dump_event,
    parse_event,
)
from streams.contract.events import (
    DEAD_LETTER_RAW_BYTES,
    EVENT_TYPES,
    SCHEMA_VERSION,
    Action,
    AvailabilityTick,
    DeadLetter,
    Envelope,
    EpochClosed,
    Event,
    JobCancelled,
    JobEvent,
    JobFinished,
    JobProgress,
    JobSubmitted,
    MarketBoundary,
    MarketView,
    MoveLocality,
    PriceTick,
    ProvisioningDecision,
    PublishedForecast,
    ReleaseCause,
    key_mismatch,
)
from streams.contract.fields import EARLIEST_TIME, LATEST_TIME, MAX_AMOUNT, MAX_PRICE, iso, utc
from streams.contract.headers import cloud_event_headers, source
from streams.contract.outlook import Outlook

__all__ = [
    "DEAD_LETTER_RAW_BYTES", "EARLIEST_TIME", "EVENT_TYPES", "LATEST_TIME", "MAX_AMOUNT",
    "MAX_EVENT_BYTES", "MAX_NESTING", "MAX_PRICE", "SCHEMA_VERSION", "Action",
    "AvailabilityTick", "DeadLetter", "Envelope", "EpochClosed", "Event", "EventError",
    "JobCancelled", "JobEvent", "JobFinished", "JobProgress", "JobSubmitted", "MarketBoundary",
    "MarketView", "MoveLocality", "Outlook", "PriceTick", "ProvisioningDecision",
    "PublishedForecast", "ReleaseCause", "cloud_event_headers", "describe_validation_error",
    "dump_event", "iso", "key_mismatch", "parse_event", "source", "utc",
]
