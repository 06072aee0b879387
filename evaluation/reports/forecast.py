"""Present forecast accuracy on market data: rich tables, a JSON report and plots.

The configured model and each baseline forecast every market by progressive validation
(:mod:`solver.forecast.evaluation`); errors are reported per market and horizon.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from evaluation.reports.plotting import date_axis, legend_outside, save_figure
from evaluation.reports.tables import add_key_column, add_number_columns, report_table
from solver.forecast import (
    DEFAULT_AVAILABILITY_MODEL,
    DEFAULT_HORIZONS,
    DEFAULT_PRICE_MODEL,
    MarketFactory,
    SeriesScores,
    baseline_factories,
    evaluate_series,
    forecast_from,
    market_factory,
    slot_seasonality,
)
from solver.forecast.evaluation import check_horizons, mean_over_markets
from solver.market import MarketData

MODEL = "model"
"""The name the configured model is reported under, beside the baselines' names."""


def run_forecast_report(
    markets: MarketData,
    horizons: Sequence[int] = DEFAULT_HORIZONS,
    json_path: Path | None = None,
    plots_dir: Path | None = None,
    progress: Callable[[int], None] | None = None,
    *,
    price_model: str = DEFAULT_PRICE_MODEL,
    availability_model: str = DEFAULT_AVAILABILITY_MODEL,
    console: Console | None = None,
) -> dict[str, Any]:
    """Evaluate the model and the baselines on every market, print the tables, write the JSON
    report and plots when asked, and return the report; ``progress`` is told of each of the
    :func:`forecast_steps` done."""
    horizons = check_horizons(horizons)
    console = console or Console()
    factories = {MODEL: market_factory(price_model, availability_model), **baseline_factories()}
    season = slot_seasonality(markets.origin, markets.slot_seconds)
    scores: dict[str, dict[str, SeriesScores]] = {name: {} for name in factories}
    for name, factory in factories.items():
        for row, market in enumerate(markets.markets):
            scores[name][market.key] = evaluate_series(
                markets.price[row], markets.availability[row],
                factory(season, horizons[-1]), horizons,
            )
            if progress:
                progress(1)
    unpriced = unpriced_markets(markets)
    if unpriced:
        scores = {name: {key: _without_price(s) if key in unpriced else s
                         for key, s in by_market.items()} for name, by_market in scores.items()}
        console.print(f"no spot prices in {', '.join(unpriced)}: the price is the same in "
                      "every slot, so price forecasts are not scored there", soft_wrap=True)
    report = _report(markets, horizons, scores, price_model, availability_model)
    title = f"{price_model} price, {availability_model} availability"
    for key in scores[MODEL]:
        console.print(_table(f"{key} ({title})", {n: s[key] for n, s in scores.items()}))
    console.print(_table(
        f"mean over {len(markets.markets)} markets ({title})",
        {n: _mean_scores(s) for n, s in scores.items()},
    ))
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(_finite(report), indent=2) + "\n")
        console.print(f"wrote {json_path}", highlight=False, soft_wrap=True)
    if plots_dir is not None:
        for path in plot_report(plots_dir, markets, horizons, scores, factories[MODEL], title):
            console.print(f"wrote {path}", highlight=False, soft_wrap=True)
    return report


def forecast_steps(markets: MarketData) -> int:
    """The steps of a report: each forecaster (the model and the baselines) on each market."""
    return (1 + len(baseline_factories())) * len(markets.markets)


def unpriced_markets(markets: MarketData) -> list[str]:
    """The markets whose spot price never changes (a trace without prices, priced by a
    constant): nothing to forecast."""
    return [m.key for row, m in enumerate(markets.markets)
            if np.allclose(markets.price[row], markets.price[row][0], rtol=1e-9, atol=0.0)]


def _without_price(scores: SeriesScores) -> SeriesScores:
    """``scores`` with the price errors unscored (``NaN``)."""
    return replace(scores, price_mae={h: math.nan for h in scores.price_mae},
                   price_mape={h: math.nan for h in scores.price_mape}, price_error=math.nan)


def _report(
    markets: MarketData,
    horizons: tuple[int, ...],
    scores: Mapping[str, Mapping[str, SeriesScores]],
    price_model: str,
    availability_model: str,
) -> dict[str, Any]:
    by_market = {}
    for key, model in scores[MODEL].items():
        by_market[key] = {
            **_fields(model),
            "price_error": model.price_error,
            "availability_error": model.availability_error,
            "baselines": {n: _fields(s[key]) for n, s in scores.items() if n != MODEL},
        }
    return {
        "model": {"price": price_model, "availability": availability_model},
        "slot_seconds": markets.slot_seconds,
        "n_slots": markets.n_slots,
        "horizons": list(horizons),
        "markets": by_market,
        "mean": {n: _fields(_mean_scores(s)) for n, s in scores.items()},
    }


def _fields(scores: SeriesScores) -> dict[str, dict[str, Any]]:
    fields: dict[str, dict[str, Any]] = {
        field: {str(h): v for h, v in getattr(scores, field).items()}
        for field in ("price_mape", "price_mae", "availability_brier", "availability_log_loss")
    }
    fields["calibration"] = {
        str(h): [{"mean_probability": p / n, "frequency": y / n, "slots": int(n)}
                 for p, y, n in counts.tolist() if n]
        for h, counts in scores.calibration.items()}
    return fields


def _mean_scores(scores: Mapping[str, SeriesScores]) -> SeriesScores:
    horizons = next(iter(scores.values())).calibration if scores else {}
    return SeriesScores(
        price_mae=mean_over_markets(scores, "price_mae"),
        price_mape=mean_over_markets(scores, "price_mape"),
        availability_brier=mean_over_markets(scores, "availability_brier"),
        price_error=math.nan,
        availability_error=math.nan,
        availability_log_loss=mean_over_markets(scores, "availability_log_loss"),
        calibration={h: np.sum([s.calibration[h] for s in scores.values()], axis=0)
                     for h in horizons},
    )


def _finite(value: Any) -> Any:
    """The report with NaN as ``null``, so that the file is strict JSON."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


SCORES = (("price_mape", "MAPE %"), ("availability_brier", "Brier"),
          ("availability_log_loss", "log-loss"))
"""The scores a table shows, in its order, with their labels."""


def _table(title: str, scores: Mapping[str, SeriesScores]) -> Table:
    """One row per score and horizon, one column per forecaster: as narrow as the
    forecasters' names, however many horizons (price rows left out when nothing was priced)."""
    table = report_table(title)
    add_key_column(table, "score")
    add_number_columns(table, "slots ahead", *scores)
    for field, label in SCORES:
        by_horizon = [getattr(s, field) for s in scores.values()]
        if all(math.isnan(v) for h in by_horizon for v in h.values()):
            continue
        for k, h in enumerate(by_horizon[0]):
            table.add_row(label if k == 0 else "", str(h),
                          *(_number(values[h], 3) for values in by_horizon),
                          end_section=k == len(by_horizon[0]) - 1)
    return table


def _number(value: float, digits: int) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def plot_report(
    directory: Path,
    markets: MarketData,
    horizons: tuple[int, ...],
    scores: Mapping[str, Mapping[str, SeriesScores]],
    model_factory: MarketFactory,
    title: str,
) -> list[Path]:
    """Write ``price_mape.png`` (unless no market has spot prices), ``availability_brier.png``
    and ``availability_log_loss.png`` (error against horizon, model and baselines, per
    market), ``calibration.png`` (forecast
    probability of capacity against how often there was capacity, over every market, per
    horizon) and ``forecast_example.png`` (the model's forecast from the slot
    ``max(horizons)`` before the end, against the truth)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    keys = list(scores[MODEL])
    written = []
    unpriced = unpriced_markets(markets)
    fields = [("price_mape", "price MAPE (%)")] if len(unpriced) < len(keys) else []
    fields += [("availability_brier", "availability Brier score"),
               ("availability_log_loss", "availability log-loss (nats)")]
    for field, label in fields:
        fig, axes = _grid(plt, len(keys))
        for ax, key in zip(axes, keys, strict=False):
            for name, by_market in scores.items():
                values = getattr(by_market[key], field)
                ax.plot(list(values), list(values.values()), marker="o",
                        linewidth=2.5 if name == MODEL else 1.2, label=name)
            ax.set_title(key, fontsize=9)
            ax.set_xticks(horizons)
            ax.set_xlabel(f"horizon (slots of {markets.slot_seconds:g} s)")
            ax.set_ylabel(label)
        legend_outside(axes[min(len(axes), 3) - 1])  # right of the first row
        fig.suptitle(f"{label} by horizon\n{title}", fontsize=11)
        written.append(save_figure(plt, fig, directory / f"{field}.png",
                                   top=1.0 - 0.45 / fig.get_figheight()))
    written.append(_plot_calibration(plt, directory, horizons, scores, title))
    if markets.n_slots > 1:
        written.append(
            _plot_example(plt, directory, markets, horizons[-1], model_factory, title,
                          set(unpriced))
        )
    return written


def _plot_calibration(plt: Any, directory: Path, horizons: tuple[int, ...],
                      scores: Mapping[str, Mapping[str, SeriesScores]], title: str) -> Path:
    fig, axes = _grid(plt, len(horizons))
    for ax, h in zip(axes, horizons, strict=False):
        ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="calibrated")
        for name, by_market in scores.items():
            counts = np.sum([s.calibration[h] for s in by_market.values()], axis=0)
            seen = counts[:, 2] > 0
            ax.plot(counts[seen, 0] / counts[seen, 2], counts[seen, 1] / counts[seen, 2],
                    marker="o", linewidth=2.5 if name == MODEL else 1.2, label=name)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("forecast probability of capacity")
        ax.set_ylabel("share of slots with capacity")
        ax.set_title(f"{h} slot(s) ahead", fontsize=9)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"availability calibration over every market ({title})")
    return save_figure(plt, fig, directory / "calibration.png", top=0.97)


def _plot_example(
    plt: Any, directory: Path, markets: MarketData, horizon: int, model_factory: MarketFactory,
    title: str, unpriced: set[str],
) -> Path:
    season = slot_seasonality(markets.origin, markets.slot_seconds)
    slot = max(0, markets.n_slots - 1 - horizon)
    ahead = min(horizon, markets.n_slots - 1 - slot)
    past = np.arange(max(0, slot - 3 * horizon), slot + 1)
    future = np.arange(slot + 1, slot + 1 + ahead)
    fig, axes = plt.subplots(len(markets.markets), 2, figsize=(12, 2.6 * len(markets.markets)),
                             squeeze=False)
    def when(slots: np.ndarray) -> list[datetime]:
        return [datetime.fromtimestamp(markets.slot_start(int(t)), UTC) for t in slots]

    for row, market in enumerate(markets.markets):
        price, availability = markets.price[row], markets.availability[row]
        forecast = forecast_from(price, availability, model_factory(season, horizon), slot,
                                 ahead)
        left, right = axes[row]
        left.plot(when(past), price[past], color="black", label="observed")
        left.plot(when(future), price[future], color="black", linestyle=":", label="truth")
        if market.key in unpriced:  # a constant: nothing forecast, no scale of rounding errors
            left.set_ylim(0, 2 * price[0] if price[0] > 0 else 1)
            left.set_title(f"{market.key}: spot price (none in the trace: a constant)",
                           fontsize=9)
        else:
            left.plot(when(future), forecast.price, color="tab:blue", label="forecast")
            left.set_title(f"{market.key}: spot price", fontsize=9)
        left.set_ylabel("USD per instance-hour")
        right.step(when(future), (availability[future] > 0).astype(float), where="mid",
                   color="black", linestyle=":", label="capacity (truth)")
        right.plot(when(future), forecast.availability, color="tab:green",
                   label="P(capacity)")
        right.set_ylim(-0.05, 1.05)
        right.set_ylabel("probability of spot capacity")
        right.set_title(f"{market.key}: availability", fontsize=9)
        for ax in (left, right):
            date_axis(ax)
    axes[0][0].legend(fontsize=8)
    axes[0][1].legend(fontsize=8)
    start = when(np.array([slot + 1]))[0]
    fig.suptitle(f"forecast made at {start:%Y-%m-%d %H:%M} UTC against the truth ({title})")
    return save_figure(plt, fig, directory / "forecast_example.png", top=0.97)


def _grid(plt: Any, n: int) -> tuple[Any, list[Any]]:
    columns = min(3, n)
    rows = math.ceil(n / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(max(6.0, 4.5 * columns), 3.2 * rows),
                             squeeze=False)
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]
