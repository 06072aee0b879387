"""Workers that act on provisioning decisions.

:mod:`connectors.base` is the interface, :mod:`connectors.runtime` the Kafka worker that
drives any connector; :mod:`connectors.log`, :mod:`connectors.sim` (over
:mod:`connectors.simcloud`) and :mod:`connectors.aws` are the connectors, and
:mod:`connectors.memory` is an in-memory one for tests; :mod:`connectors.limits` refuses the
decisions a connector was not meant to act on. ``docs/connectors.md`` says more.
"""
