"""What the stages of one runner wrote for one another (:class:`Written`), so that a stage
reading back what a stage of the same runner wrote (a forecast, a boundary report, an epoch
marker) takes the event it was encoded from instead of decoding it again, and a scheduler
plans on the outlook a forecaster made instead of converting it back from its wire form.

Decoding an event's bytes gives back an event equal to the one they were encoded from,
field by field and type by type (:func:`~streams.contract.dump_event` writes every field,
and JSON numbers round-trip), and an outlook converts back exactly and is never changed once
made: reading from here or decoding gives the same event and outlook, so a message some other
process wrote, or one forgotten since, is simply decoded. Only the events a stage encoded are
kept, never bytes a stage relays as they came in. The newest :data:`MAX_WRITTEN_EVENTS` of
each are kept.

The runner owns its :class:`Written` and builds its stages with it; a snapshot names it rather
than holding it (:mod:`streams.pipeline.snapshot`), and the restoring runner supplies its own.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from solver.forecast.outlook import MarketOutlook
from streams.contract import Envelope, Outlook

K = TypeVar("K")
V = TypeVar("V")

MAX_WRITTEN_EVENTS = 4096
"""Events kept: an epoch's forecasts and boundary reports of 1,000 markets, with room for the
next epoch's."""


class Newest(Generic[K, V]):
    """The values put last, by key: the newest ``capacity``."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._kept: dict[K, V] = {}

    def put(self, key: K, value: V) -> None:
        kept = self._kept
        kept.pop(key, None)
        kept[key] = value
        if len(kept) > self.capacity:
            del kept[next(iter(kept))]

    def get(self, key: K) -> V | None:
        """The value put last under ``key``, if it is still kept."""
        return self._kept.get(key)

    def __len__(self) -> int:
        return len(self._kept)


class MadeOutlooks:
    """The outlooks the forecasters made, by the wire model made of each (the newest
    ``capacity``)."""

    def __init__(self, capacity: int) -> None:
        self._made: Newest[int, tuple[Outlook, MarketOutlook]] = Newest(capacity)
        """By the model's id; the model is held, so its id stays its own."""

    def remember(self, model: Outlook, outlook: MarketOutlook) -> None:
        """``model`` is the wire form of ``outlook``."""
        self._made.put(id(model), (model, outlook))

    def outlook(self, model: Outlook) -> MarketOutlook:
        """The outlook ``model`` is the wire form of: the one made, if remembered."""
        made = self._made.get(id(model))
        if made is not None and made[0] is model:
            return made[1]
        return MarketOutlook.from_wire(model.model_dump())

    def __len__(self) -> int:
        return len(self._made)


class Written:
    """What the stages of one runner wrote for one another (module doc): the events written to
    the topics stages read, by the bytes they were written as, and the outlooks behind the
    forecasts among them."""

    def __init__(self, capacity: int = MAX_WRITTEN_EVENTS) -> None:
        self.events: Newest[bytes, Envelope] = Newest(capacity)
        self.outlooks = MadeOutlooks(capacity)
