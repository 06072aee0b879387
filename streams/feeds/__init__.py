"""Live market feeds: price sources behind one interface (:mod:`streams.feeds.base`) and the
runner that turns their price history into market ticks on Kafka (:mod:`streams.feeds.runner`).
How the ticks are chosen is in :mod:`streams.feeds.planner`."""
