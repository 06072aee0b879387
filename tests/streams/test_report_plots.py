"""The report charts: what a reader sees at a glance (span, labels, ticks, legends)."""

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from typer.testing import CliRunner

from evaluation.reports.plotting import bar_panel
from solver.market import SECONDS_PER_HOUR
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from solver.traces.jobs_file import load_jobs
from streams.cli import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def seconds(number: float) -> float:
    """Unix seconds of a matplotlib date number."""
    return mdates.num2date(number).timestamp()


def outside_right(ax) -> bool:
    """Whether the axes' legend sits right of the axes, over no data."""
    renderer = FigureCanvasAgg(ax.figure).get_renderer()
    return ax.get_legend().get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1


@pytest.fixture(scope="module")
def replay_figure(tmp_path_factory):
    """The replay chart of the example workload under two policies, and its report."""
    out = tmp_path_factory.mktemp("replay")
    figures: dict[str, Figure] = {}
    save = Figure.savefig

    def record(figure: Figure, path, *args, **kwargs) -> None:
        figures[Path(path).name] = figure
        save(figure, path, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Figure, "savefig", record)
        result = CliRunner().invoke(app, ["replay", "--jobs", str(EXAMPLES / "jobs.json"),
                                          "--policy", "greedy", "--policy", "on-demand",
                                          "--report", str(out)])
    assert result.exit_code == 0, result.output
    return figures["replay.png"], json.loads((out / "report.json").read_text())


def test_replay_spans_the_jobs_not_the_whole_market(replay_figure):
    figure, report = replay_figure
    jobs = load_jobs(EXAMPLES / "jobs.json")
    finishes = [j["completion"] for p in report["policies"].values() for j in p["jobs"]]
    start = min(j.release for j in jobs)
    end = max([j.hard_deadline for j in jobs] + finishes)
    price, availability, jobs_ax, *policies, _ = figure.axes
    low, high = (seconds(x) for x in price.get_xlim())
    assert start - SECONDS_PER_HOUR < low <= start
    assert end <= high < end + SECONDS_PER_HOUR
    assert high - low < report["n_slots"] * SECONDS_PER_HOUR / 2
    for ax in (availability, jobs_ax, *policies):
        assert ax.get_xlim() == price.get_xlim()
    assert policies[-1].get_xlabel() == "time (UTC)"
    assert isinstance(policies[-1].xaxis.get_major_formatter(), mdates.ConciseDateFormatter)


def test_replay_availability_is_a_heat_strip_labelled_by_market(replay_figure):
    figure, report = replay_figure
    availability = figure.axes[1]
    zones = [key.split("/")[2] + " " + key.split("/")[3] for key in report["markets"]]
    assert [t.get_text() for t in availability.get_yticklabels()] == zones
    low, high = (seconds(x) for x in availability.get_xlim())
    (mesh,) = availability.collections
    assert mesh.get_array().shape == (len(zones), round((high - low) / SECONDS_PER_HOUR))
    assert mesh.get_array().min() >= 0 and not availability.get_lines()


def test_replay_marks_every_deadline_and_says_on_demand(replay_figure):
    figure, _ = replay_figure
    price, _, jobs_ax, *policies, _ = figure.axes
    jobs = sorted(load_jobs(EXAMPLES / "jobs.json"), key=lambda j: j.release)
    assert [t.get_text() for t in jobs_ax.get_yticklabels()] == [j.id for j in jobs]
    (marks,) = [line for line in jobs_ax.get_lines() if line.get_label() == "hard deadline"]
    assert sorted(seconds(x) for x in mdates.date2num(marks.get_xdata())) == sorted(
        j.hard_deadline for j in jobs)
    legend = [t.get_text() for t in price.get_legend().get_texts()]
    assert legend[-1] == "on-demand 3.06 USD/h"
    for ax in (price, jobs_ax, *policies):
        assert outside_right(ax)
    for ax in policies:
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["spot", "on-demand"]
        assert all(float(tick).is_integer() for tick in ax.get_yticks())
        assert ax.get_ylabel() == "instances"


def test_replay_shows_each_policy_bill(replay_figure):
    figure, report = replay_figure
    *_, policies_greedy, policies_on_demand, cost = figure.axes
    totals = {p: v["summary"]["total_cost"] for p, v in report["policies"].items()}
    assert [t.get_text() for t in cost.get_yticklabels()] == list(totals)
    assert [t.get_text() for t in cost.texts] == [f"{c:,.2f}" for c in totals.values()]
    assert policies_greedy.get_title(loc="left") == f"greedy: {totals['greedy']:,.2f} USD"
    assert policies_on_demand.get_title(loc="left").startswith("on-demand: ")


@pytest.mark.parametrize(("values", "clipped"), [
    ([600.0, 620.0, 580.0, -5000.0], 3),
    ([155.0, 157.6, 330.5], None),
    ([1.0, 2.0], None),
])
def test_bars_are_all_labelled_and_only_a_dwarfing_one_clipped(values, clipped):
    fig, ax = plt.subplots()
    names = [f"p{k}" for k in range(len(values))]
    bar_panel(ax, names, values, "utility", "tab:green")
    labels = [t.get_text() for t in ax.texts]
    assert labels == [f"{v:,.2f}" + (" (clipped)" if k == clipped else "")
                      for k, v in enumerate(values)]
    low, high = ax.get_xlim()
    for k, value in enumerate(values):
        assert (low <= value <= high) == (k != clipped)
    assert [t.get_text() for t in ax.get_yticklabels()] == names
    plt.close(fig)


def test_forecast_plots_have_units_and_dates(tmp_path, drawn):
    ticks = synthetic_ticks(SyntheticMarketSpec(seed=3, n_markets=2, days=4))
    path = tmp_path / "market.csv"
    lines = ["timestamp,market,spot_price,available,on_demand_price"]
    for series in ticks:
        lines += [f"{int(t)},{series.market.key},{p},{a},3.06"
                  for t, p, a in zip(series.times, series.prices, series.available, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(app, ["forecast-report", "--trace", str(path), "--horizon", "1",
                                      "--horizon", "6", "--plots", str(tmp_path / "plots")])
    assert result.exit_code == 0, result.output
    for name in ("price_mape.png", "availability_brier.png", "availability_log_loss.png"):
        for ax in drawn[name].axes:
            if ax.get_visible():
                assert ax.get_xlabel() == "horizon (slots of 3600 s)"
                assert list(ax.get_xticks()) == [1, 6]
    example = drawn["forecast_example.png"].axes
    start, end = ticks[0].times[0], ticks[0].times[-1]
    day = 24 * SECONDS_PER_HOUR
    for ax in example:
        assert ax.get_xlabel() == "time (UTC)"
        assert isinstance(ax.xaxis.get_major_formatter(), mdates.ConciseDateFormatter)
        assert all(start - day <= seconds(x) <= end + day for x in ax.get_xlim())
    assert example[0].get_ylabel() == "USD per instance-hour"
    assert example[1].get_ylabel() == "probability of spot capacity"
    assert [f"wrote {tmp_path / 'plots' / n}" for n in drawn] == [
        line for line in result.output.splitlines() if line.startswith("wrote ")]
