"""Kafka/Faust adapters around the solver: event contract, agents, replay, CLI."""
