"""The streaming pipeline: its declaration and its three stages, free of Kafka and Faust so
both runners (:mod:`streams.runners`) execute them.

1. :class:`~streams.pipeline.market_stage.MarketStage` (partitioned by market) cuts market
   ticks into slots and, at each boundary a market passes, publishes the market's forecast
   and reports the boundary.
2. :class:`~streams.pipeline.coordinator.EpochCoordinator` (one partition) waits until every
   catalogue market has passed a boundary, then writes the markets' forecasts of it and the
   epoch marker into every scheduler partition.
3. :class:`~streams.pipeline.scheduler.PartitionScheduler` (one per job-events partition)
   drives a :class:`solver.engine.Engine` with its jobs' events, the forecasts and the epochs,
   and answers provisioning decisions (:mod:`streams.pipeline.decision_encoder`).

:mod:`streams.pipeline.declaration` says which topic feeds which stage and where each output
goes. Every stage is a deterministic function of its partition's log, so rebuilding one from
the log restores it exactly; stages ignore what they have already seen.
:class:`~streams.pipeline.driver.Driver` feeds them messages and turns whatever a message
makes them raise into a dead letter.
"""
