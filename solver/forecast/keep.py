"""How much of the spot a market's boundaries show its slots keep, from closed slots.

A boundary shows the capacity in force when the slot starts; the slot's realised availability
is the least it held, so a run that ends inside the slot shows at its boundary and is lost in
it (a job asking for that spot is refused or preempted, the slot's work lost). On a grid of the
trace's own ticks the two agree and every shown spot is kept; on slots longer than a market's
runs often are, much of it is not (the public one-node V100 traces at hourly slots keep about
half of the spot shown after a slot without any).
"""

from __future__ import annotations

import numpy as np

KEEP_HOURS = 168.0
"""How much closed history the share is learned from: a week."""

PRIOR_KEPT = 1.0
"""Shown-and-kept slots the share starts from: with no history a boundary is trusted, and a
grid on which every shown spot was kept keeps a share of exactly 1."""


def kept_share(shown: np.ndarray, realised: np.ndarray, instances: int) -> float:
    """The share of the slots whose boundary showed at least ``instances`` spot instances that
    kept them through the slot, from closed slots (``(markets, slots)`` or one market's series:
    the availability each boundary showed and the slot's realised availability), every market
    pooled."""
    shown = np.asarray(shown)
    realised = np.asarray(realised)
    if shown.shape != realised.shape:
        raise ValueError(f"shown {shown.shape} and realised {realised.shape}: expected arrays "
                         "of one shape")
    offered = shown >= instances
    kept = np.count_nonzero(offered & (realised >= instances))
    return float((kept + PRIOR_KEPT) / (np.count_nonzero(offered) + PRIOR_KEPT))
