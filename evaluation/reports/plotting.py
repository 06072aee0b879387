"""Chart pieces every report shares."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

OUTLIER_RATIO = 4.0
"""A bar is drawn clipped when it is this many times longer than the longest of the others,
which would otherwise shrink to slivers."""


def bar_panel(ax, names: Sequence[str], values: Sequence[float], title: str,
              color: str) -> None:
    """Horizontal bars, each labelled with its value. A bar far off the others (one policy
    losing its deadline penalties, say) is clipped at the axis edge, hatched, with its true
    value printed, so the others' differences stay visible."""
    array = np.asarray(values, dtype=float)
    low, high = _axis(array)
    shown = np.clip(array, low, high)
    bars = ax.barh(list(names), shown, color=color)
    for bar, value, drawn in zip(bars, array, shown, strict=True):
        clipped = drawn != value
        if clipped:
            bar.set_hatch("//")
            bar.set_alpha(0.5)
        ax.annotate(f"{value:,.2f}" + (" (clipped)" if clipped else ""),
                    (max(drawn, 0.0), bar.get_y() + bar.get_height() / 2),
                    xytext=(3, 0), textcoords="offset points", ha="left", va="center",
                    fontsize="small")
    pad = 0.25 * (high - low or abs(high) or 1.0)
    ax.set_xlim(min(low, 0.0) - (pad if low < 0 else 0.0), high + pad)
    ax.set_title(title, fontsize="medium")
    ax.invert_yaxis()
    ax.tick_params(labelsize="small")


def _axis(values: np.ndarray) -> tuple[float, float]:
    """The value range the axis shows: all values, or all but one far outlier."""
    low, high = float(values.min()), float(values.max())
    if len(values) < 3:
        return low, high
    far = int(np.argmax(np.abs(values)))
    rest = np.delete(values, far)
    longest = float(np.abs(rest).max())
    if abs(values[far]) <= OUTLIER_RATIO * longest or longest == 0:
        return low, high
    edge = 0.3 * longest
    low, high = float(min(rest.min(), 0.0)), float(max(rest.max(), 0.0))
    if values[far] < low:
        return low - edge, high
    return low, high + edge


def as_dates(seconds: Sequence[float] | np.ndarray) -> np.ndarray:
    """Unix seconds as ``datetime64`` (UTC), which matplotlib draws on a date axis."""
    return np.round(np.asarray(seconds, dtype=float)).astype(np.int64).astype("datetime64[s]")


def date_axis(ax) -> None:
    """Dates on the x axis, as concise as the span allows, labelled as UTC."""
    import matplotlib.dates as mdates

    locator = mdates.AutoDateLocator(minticks=4, maxticks=10)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.set_xlabel("time (UTC)")


def legend_outside(ax, **options) -> None:
    """The axes' legend to their right, where it covers no data."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
              fontsize="small", **options)


def save_figure(plt, fig, path: Path, top: float = 1.0) -> Path:
    """Lay ``fig`` out (leaving the share of its height above ``top`` to a suptitle), write it
    to ``path`` and close it."""
    fig.tight_layout(rect=(0, 0, 1, top))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
