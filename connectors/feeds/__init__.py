"""Live market feeds: price sources behind one interface (:mod:`connectors.feeds.base`) and the
runner that turns their price history into market ticks on Kafka (:mod:`connectors.feeds.runner`).
How the ticks are chosen is in :mod:`connectors.feeds.planner`."""
