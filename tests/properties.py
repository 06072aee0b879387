"""Hypothesis profiles: a few examples in the developer loop, every example in CI.

``dev`` (the default, or ``HYPOTHESIS_PROFILE=dev``) runs a tenth of each property's examples;
``ci`` (``pytest --hypothesis-profile=ci``, as ``deploy/test.sh`` runs the suite) runs them all.
A property declares its full count with :func:`examples`.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None, max_examples=10)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

FULL = settings.get_profile("ci").max_examples
"""Examples per property in the ``ci`` profile (Hypothesis's default, 100)."""


def examples(full: int) -> int:
    """Examples to run of a property whose full count is ``full``: all of them under ``ci``,
    the loaded profile's share of them (at least 3) otherwise."""
    return max(min(full, 3), full * settings.default.max_examples // FULL)
