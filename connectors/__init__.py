"""Workers that act on provisioning decisions.

:mod:`connectors.base` is the interface, :mod:`connectors.runtime` the Kafka worker that
drives any connector; :mod:`connectors.log`, :mod:`connectors.sim` (over
:mod:`connectors.simcloud`) and :mod:`connectors.aws` are the connectors, :mod:`connectors.holding`
what a job holds and what changing it launches and terminates; :mod:`connectors.limits`
refuses the decisions a connector was not meant to act on. ``docs/connectors.md`` says more.
"""
