"""spotsched's pure core: markets, jobs, forecasters, policies and the trace-driven simulator.

Nothing here touches Kafka, Faust, Prometheus, the clock, the environment or the network;
the same inputs and seed always give the same decisions.
"""
