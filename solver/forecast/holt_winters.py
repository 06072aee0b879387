"""Holt's linear trend (river ``HoltWinters`` without a season) on the log price."""

from __future__ import annotations

from river import time_series

from solver.forecast.river_price import RiverLogPrice


class HoltWintersPrice(RiverLogPrice):
    """river's ``HoltWinters(alpha, beta)`` on the log price: a smoothed level plus a smoothed
    trend, so the price forecast follows a constant growth rate and stays positive.

    Unobserved slots are skipped (the model sees only observed prices); horizons count from the
    last observed slot. Until river has the two prices it needs to start, the forecast is the
    last price.
    """

    def __init__(self, alpha: float = 0.8, beta: float | None = 0.05) -> None:
        self.alpha = alpha
        self.beta = beta
        model = time_series.HoltWinters(alpha=alpha, beta=beta)  # type: ignore[no-untyped-call]  # river's HoltWinters is not annotated
        super().__init__(model, warmup=2)
