"""Generate ``docs/results/*.md``: every table on those pages is printed from the JSON of a
real ``spotsched evaluate`` run, stamped with its command, the commit and the date.

    python bench/results.py [--windows 30] [--page NAME ...] [--out docs/results]
                            [--workers N] [--no-cache]

Each page is a list of evaluations of the public traces (``SPOTSCHED_TRACES_DIR``, default
``../shared/traces``); ``--windows`` sets the seeded windows of each (the evaluations with
fixed windows keep theirs). The evaluations use ``spotsched evaluate``'s cache, so a re-run of
unchanged code reads them back in seconds. ``--page`` picks pages (default: every one).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.reports.evaluation import case_rows, forecast_rows  # noqa: E402

TRACES = os.environ.get("SPOTSCHED_TRACES_DIR", "../shared/traces")
SIX_ZONES = f"{TRACES}/skynomad-artifact/aws_p3.2xlarge_availability_and_spot_price_" \
    "2023-02-15_to_2023-04-02.csv.gz"
SIXTEEN_NODES = tuple(
    f"{TRACES}/skypilot-spot-traces/availability/16-node/aws-08-27-2023/{zone}_v100_1.json"
    for zone in ("us-east-2b", "us-west-2a", "us-west-2c"))
ONE_NODE = f"{TRACES}/skypilot-spot-traces/availability/1-node/aws-02-15-2023"
TUNING = tuple(f"{ONE_NODE}/{z}_v100_1.json" for z in ("us-east-1a", "us-east-2b", "us-west-2a"))
HELD_OUT = tuple(f"{ONE_NODE}/{z}_v100_1.json" for z in ("us-east-1c", "us-east-1d",
                                                          "us-west-2b"))
PLANNERS = tuple(a for p in ("uniform-progress", "prediction-free", "chc", "risk-aware",
                             "policy-selection", "optimum") for a in ("--policy", p))

V100_TASK = ("--trace", SIX_ZONES, "--scenario", "multi-region",
             *(a for z in ("us-east-1c", "us-east-2b", "us-west-2a") for a in ("--zone", z)),
             *(a for i in ("3", "5", "7", "8", "14") for a in ("--window-index", i)),
             "--checkpoint-gb", "50")
"""SkyNomad's V100 task: three zones in three regions, the artifact's windows, 50 GB."""

CHOSEN = tuple(a for p in ("risk-aware", "risk-aware:choose=evidence", "optimum")
               for a in ("--policy", p))

EVIDENCE = tuple(a for p in ("risk-aware", "risk-aware:choose=evidence", "chc", "prediction-free",
                             "greedy", "optimum") for a in ("--policy", p))


@dataclass(frozen=True)
class Verdict:
    """The target a run's cases are held to: ``policy`` costs at most ``tolerance`` times the
    cheapest of its ``members`` and at most ``baseline``'s bill, with no hard miss."""

    policy: str
    members: tuple[str, ...]
    baseline: str
    tolerance: float = 1.02


@dataclass(frozen=True)
class Run:
    """One ``spotsched evaluate`` run: a heading, what it shows, and its arguments; ``seeded``
    runs take the generator's ``--windows``; ``verdicts``: targets summed up per case."""

    heading: str
    about: str
    args: tuple[str, ...]
    seeded: bool = True
    verdicts: tuple[Verdict, ...] = ()

    def command(self, windows: int) -> list[str]:
        """The arguments after ``spotsched``."""
        return ["evaluate", *self.args, *(["--windows", str(windows)] if self.seeded else [])]


EVIDENCE_VERDICTS = tuple(Verdict(p, ("risk-aware", "chc", "prediction-free"), "greedy")
                          for p in ("risk-aware", "risk-aware:choose=evidence"))
"""``risk-aware`` and its evidence chooser against its members (its routing table, the window
program as ``chc``, the rule as ``prediction-free``) and ``greedy``."""


@dataclass(frozen=True)
class Page:
    """A results page: its file name (without ``.md``), title, introduction and runs."""

    name: str
    title: str
    about: str
    runs: tuple[Run, ...]


@dataclass(frozen=True)
class Stamp:
    """Where a table comes from: the command, the commit, when, and how long it took."""

    command: str
    commit: str
    date: str
    seconds: float
    load: str


PAGES = (
    Page("cant-be-late", "Can't Be Late on six AWS zones",
         "One single-instance job per zone and window, confined to its zone, on the six "
         "p3.2xlarge zones of the SkyNomad trace; the six cases of [the scenario]"
         "(../evaluation.md#scenarios). `vs optimum` is the mean cost over the hindsight "
         "optimum's on the same windows.",
         (Run("Learned forecast distributions (the default)",
              "Every policy online and causal; the planners on the distributions their "
              "forecasters learn from the trace before each window.",
              ("--trace", SIX_ZONES, "--scenario", "cant-be-late")),)),
    Page("held-out", "Can't Be Late: tuning zones and held-out zones",
         "The policies' parameters were chosen on three of the six zones; the other three "
         "were not looked at while tuning ([method](../evaluation.md#tuning-and-reporting)). "
         "Here each group alone, from the Can't Be Late availability traces of the same "
         "weeks, which carry no prices: spot costs 30 % of the on-demand price.",
         (Run("Held-out zones: us-east-1c, us-east-1d, us-west-2b",
              "The zones the parameters were not chosen on.",
              ("--scenario", "cant-be-late", *(a for z in HELD_OUT for a in ("--trace", z)),
               *PLANNERS)),
          Run("Tuning zones: us-east-1a, us-east-2b, us-west-2a",
              "The zones the parameters were chosen on, for contrast.",
              ("--scenario", "cant-be-late", *(a for z in TUNING for a in ("--trace", z)),
               *PLANNERS)))),
    Page("resample", "Can't Be Late on a market that follows the model",
         "The six zones' availability redrawn from the capacity model fitted to the whole "
         "trace (`--resample 1`), prices kept: the forecasters learn the very model that drew "
         "the market, so `risk-aware`'s distance to the optimum here is about what any causal "
         "policy must lose to the market's uncertainty ([method](../evaluation.md"
         "#planning-or-information-a-market-that-follows-the-model)).",
         (Run("Redrawn availability, seed 1",
              "A rule without forecasts, the recommended planner and the optimum.",
              ("--trace", SIX_ZONES, "--scenario", "cant-be-late", "--resample", "1",
               "--policy", "prediction-free", "--policy", "risk-aware",
               "--policy", "optimum")),)),
    Page("value-of-forecasts", "Can't Be Late: the value of forecasts",
         "The planners on perfect forecasts, on the learned forecasts read as certain "
         "(`point`) and on the learned distributions, with the hindsight optimum for scale, on "
         "the six zones ([method](../evaluation.md#value-of-forecasts)).",
         (Run("Perfect, point and distribution forecasts",
              "`risk-aware` and `chc` on each kind of forecast; the table above each study "
              "gives the optimum.",
              ("--trace", SIX_ZONES, "--scenario", "cant-be-late", "--value-of-forecasts",
               "--policy", "risk-aware", "--policy", "optimum")),)),
    Page("multi-region", "Multi-region: SkyNomad's task",
         "One single-instance job free to move between zones, its checkpoint's moves billed "
         "for egress ([the scenario](../evaluation.md#the-multi-region-scenario)).",
         (Run("The V100 task of SkyNomad's artifact",
              "Three zones in three regions, the artifact's windows 3, 5, 7, 8 and 14, a 50 GB "
              "checkpoint; the completion slot is billed.",
              V100_TASK, seeded=False),
          Run("Six zones, 0 / 50 / 500 GB checkpoints",
              "Every zone of the trace, seeded windows, a case per checkpoint size.",
              ("--trace", SIX_ZONES, "--scenario", "multi-region")))),
    Page("fine-tune", "Fine-tuning jobs competing for spot",
         "Eight competing multi-instance fine-tuning jobs per week-long window on the six "
         "zones, hourly slots ([the scenario](../evaluation.md#scenarios)); the hindsight "
         "optimum is left out (an integer program of minutes per window).",
         (Run("Learned forecast distributions",
              "Every policy but the optimum.",
              ("--trace", SIX_ZONES, "--scenario", "fine-tune")),)),
    Page("scarce", "Scarce capacity: elastic jobs colliding",
         "Twelve competing elastic jobs per 48-hour window on three 16-node AWS V100 "
         "availability traces ([the scenario](../evaluation.md#scenarios)); spot at 30 % of "
         "the on-demand price where the trace has none; no optimum.",
         (Run("Learned forecast distributions",
              "Every policy but the optimum, and three settings of `prediction-free`'s σ.",
              ("--scenario", "scarce", *(a for t in SIXTEEN_NODES for a in ("--trace", t)),
               "--policy", "uniform-progress", "--policy", "prediction-free",
               "--policy", "prediction-free:sigma=0.75", "--policy", "prediction-free:sigma=0.5",
               "--policy", "chc", "--policy", "risk-aware", "--policy", "policy-selection")),)),
    Page("shapes-evidence", "Market shapes: the planner chosen on evidence",
         "`risk-aware` routing each job by its table and choosing each class of job's planner "
         "by a backtest on the market's recent past (`choose=evidence`, [how](../solver.md"
         "#how-the-planner-is-chosen)), with its members and `greedy`, on the 24 shapes of "
         "synthetic market ([the suite](../evaluation.md#shapes-a-suite-of-market-shapes)). "
         "`vs optimum` is the mean cost over the hindsight optimum's on the same windows; "
         "for the fleets, whose soft deadlines are priced, mean utility says more.",
         (Run("The tuning half of the market seeds",
              "The seeds the evidence chooser's settings were chosen on.",
              ("--scenario", "shapes", "--seeds", "tune", *EVIDENCE),
              verdicts=EVIDENCE_VERDICTS),
          Run("The margin, on the tuning half",
              "The sweep that chose `margin` = 0.25 (`risk-aware`'s default): across the "
              "shapes, 0.5 the highest mean utility over the optimum's, 0.25 within 0.01 of it "
              "at a lower mean cost over the optimum's.",
              ("--scenario", "shapes", "--seeds", "tune",
               *(a for m in ("0.1", "0.15", "0.25", "0.5") for a in (
                   "--policy", f"risk-aware:choose=evidence,margin={m}")),
               "--policy", "optimum")))),
    Page("evidence-traces", "The planner chosen on evidence, on the public traces",
         "`risk-aware` by its routing table and on evidence (`choose=evidence`, [how](../solver"
         ".md#how-the-planner-is-chosen)), with the hindsight optimum, on every scenario of "
         "the public traces: the markets the routing table was tuned on, where the evidence "
         "should keep its routes.",
         (Run("The V100 task of SkyNomad's artifact",
              "As on [multi-region.md](multi-region.md): three zones, the artifact's windows, a "
              "50 GB checkpoint.",
              (*V100_TASK, *CHOSEN), seeded=False),
          Run("Multi-region, six zones", "0 / 50 / 500 GB checkpoints.",
              ("--trace", SIX_ZONES, "--scenario", "multi-region", *CHOSEN)),
          Run("Can't Be Late, six zones", "One job per zone and window, confined to its zone.",
              ("--trace", SIX_ZONES, "--scenario", "cant-be-late", *CHOSEN)),
          Run("Fine-tuning", "Eight competing fine-tuning jobs per week on the six zones.",
              ("--trace", SIX_ZONES, "--scenario", "fine-tune", *CHOSEN)),
          Run("Scarce capacity", "Twelve competing elastic jobs on three 16-node traces.",
              ("--scenario", "scarce", *(a for t in SIXTEEN_NODES for a in ("--trace", t)),
               *CHOSEN)))),
    Page("shapes-evidence-held-out", "Market shapes, held out: the planner chosen on evidence",
         "The policies of [the tuning half's page](shapes-evidence.md) on the other half of "
         "the market seeds, not looked at while choosing the evidence chooser's settings: the "
         "figures to report.",
         (Run("The held-out half of the market seeds",
              "`risk-aware` by its table and on evidence, its members, `greedy`, the optimum.",
              ("--scenario", "shapes", "--seeds", "held-out", *EVIDENCE),
              verdicts=EVIDENCE_VERDICTS),
          Run("The lone job, 30 windows",
              "A lone job's bill is one window's luck (one job, where a fleet has 20): its eight "
              "shapes again over 30 windows, the evaluation's default.",
              ("--scenario", "shapes", "--seeds", "held-out", "--workload", "one",
               "--windows", "30", *EVIDENCE), seeded=False, verdicts=EVIDENCE_VERDICTS))),
)


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub markdown table, numbers right-aligned."""
    align = ["---" if c == columns[0] else "---:" for c in columns]
    lines = [columns, align, *rows]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


def case_section(entry: Mapping[str, Any]) -> str:
    """A case of an evaluation's JSON: its table, then what the JSON says under it."""
    columns, rows = case_rows(entry)
    parts = [f"#### {entry['name']}", "", markdown_table(columns, rows)]
    notes = []
    if entry.get("optimum_unproven_jobs"):
        notes.append(f"`optimum`: {entry['optimum_unproven_jobs']} jobs planned by a search a "
                     "solver limit stopped; the true optimum may be cheaper.")
    members = entry.get("selection_members")
    if members:
        notes.append(f"`{entry['selection']}`'s members in its shadows, mean cost USD (hard "
                     "misses): " + ", ".join(
                         f"{m} {s['mean_cost_usd']:,.2f} ({s['hard_deadline_misses']})"
                         for m, s in members.items()) + ".")
    if notes:
        parts += ["", *notes]
    if "value_of_forecasts" in entry:
        parts += ["", "Value of forecasts: mean cost USD (hard misses) of each planner on each "
                  "kind of forecast.", "",
                  markdown_table(*forecast_rows(entry["value_of_forecasts"]))]
    return "\n".join(parts)


def verdict_section(verdict: Verdict, evaluation: Mapping[str, Any]) -> str:
    """Per case, ``verdict.policy``'s bill over the optimum's, over its cheapest member's and
    over the baseline's, its hard misses, and whether it meets the target."""
    rows = []
    met = 0
    for entry in evaluation["scenarios"]:
        policies: Mapping[str, Mapping[str, Any]] = entry["policies"]
        if verdict.policy not in policies:
            continue
        cost = {name: float(s["mean_cost_usd"]) for name, s in policies.items()}
        mine = cost[verdict.policy]
        best = min((m for m in verdict.members if m in cost), key=cost.__getitem__)
        optimum = cost.get("optimum", math.nan)
        misses = int(policies[verdict.policy]["hard_deadline_misses"])
        ok = (mine <= verdict.tolerance * cost[best] and mine <= cost[verdict.baseline]
              and misses == 0)
        met += ok
        rows.append([entry["name"], f"{mine / optimum:.3f}", f"{best} {cost[best] / optimum:.3f}",
                     f"{mine / cost[best]:.3f}", f"{mine / cost[verdict.baseline]:.3f}",
                     str(misses), "yes" if ok else "no"])
    columns = ["case", "vs optimum", "cheapest member, vs optimum", "vs that member",
               f"vs {verdict.baseline}", "hard miss", "target met"]
    return "\n".join([
        f"#### `{verdict.policy}`: the target, case by case", "",
        f"Mean cost over the optimum's, over the cheapest of {', '.join(verdict.members)} and "
        f"over `{verdict.baseline}`'s; the target: at most {verdict.tolerance:g} × the "
        f"cheapest member, at most `{verdict.baseline}`, no hard miss. Met in {met} of "
        f"{len(rows)} cases.", "", markdown_table(columns, rows)])


def run_section(run: Run, stamp: Stamp, evaluation: Mapping[str, Any]) -> str:
    """A run's heading, its stamp, its verdicts and a table per case."""
    header = [f"### {run.heading}", "", run.about, "",
              f"Generated by `{stamp.command}` at commit `{stamp.commit}` on {stamp.date} "
              f"({stamp.seconds:,.0f} s, load average {stamp.load}).", ""]
    return "\n".join(header) + "\n" + "\n\n".join(
        [*(verdict_section(v, evaluation) for v in run.verdicts),
         *(case_section(entry) for entry in evaluation["scenarios"])])


def render_page(page: Page, windows: int, generator: str,
                runs: Sequence[tuple[Run, Stamp, Mapping[str, Any]]]) -> str:
    """A results page: title, what it shows, the windows, then every run's tables."""
    head = [f"# {page.title}", "",
            "Generated; do not edit. Every table is printed from the JSON of the "
            f"`spotsched evaluate` command above it (`{generator}` writes this page).", "",
            page.about, "",
            f"Seeded evaluations here ran {windows} window{'s' * (windows != 1)} per case "
            "(the evaluation's default is 30); with few windows the means are noisy. Mean "
            "cost and utility are USD per job; restarts are per job; misses are jobs.", ""]
    return "\n".join(head) + "\n" + "\n\n".join(
        run_section(*r) for r in runs) + "\n"


def git_commit() -> str:
    """The checkout's commit, ``-dirty`` when the code that decides (``solver``, ``streams``)
    differs from it."""
    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=False)

    commit = git("rev-parse", "--short=12", "HEAD").stdout.strip()
    return commit + ("-dirty" if git("diff", "--quiet", "HEAD", "--", "solver",
                                     "streams").returncode else "")


def evaluate(run: Run, windows: int, extra: Sequence[str]) -> tuple[Stamp, dict[str, Any]]:
    """Play ``run`` with this checkout's code; its stamp and JSON summary."""
    args = run.command(windows)
    with tempfile.TemporaryDirectory() as folder:
        summary = Path(folder) / "evaluation.json"
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "streams", *args, *extra, "--json", str(summary)],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"spotsched {shlex.join(args)}: exit status {done.returncode}")
        evaluation = json.loads(summary.read_text())
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return Stamp(f"spotsched {shlex.join(args)}", git_commit(), date, seconds,
                 load), evaluation


def main(argv: Sequence[str] | None = None) -> None:
    names = [p.name for p in PAGES]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", type=int, default=30,
                        help="seeded windows per case (default 30)")
    parser.add_argument("--page", action="append", choices=names,
                        help="a page to generate, repeatable (default: every one)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    parser.add_argument("--workers", type=int, help="spotsched evaluate's --workers")
    parser.add_argument("--no-cache", action="store_true", help="play every cell again")
    options = parser.parse_args(argv)
    if options.windows < 1:
        parser.error(f"--windows {options.windows}: expected a count >= 1")
    extra = [*(["--workers", str(options.workers)] if options.workers else []),
             *(["--no-cache"] if options.no_cache else [])]
    generator = shlex.join(["python", "bench/results.py", "--windows", str(options.windows)])
    options.out.mkdir(parents=True, exist_ok=True)
    for page in PAGES:
        if options.page and page.name not in options.page:
            continue
        runs = [(run, *evaluate(run, options.windows, extra)) for run in page.runs]
        path = options.out / f"{page.name}.md"
        path.write_text(render_page(page, options.windows, generator, runs))
        print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    main()
