import pickle
import random
from dataclasses import replace

import numpy as np
import pytest

from solver.evaluation.scenarios import (
    CantBeLateSpec,
    FineTuneSpec,
    MultiRegionSpec,
    build_cases,
    cant_be_late_cases,
    fine_tune_case,
    multi_region_cases,
    trainings,
    window_starts,
)
from tests.scenarios import probe_ticks


def test_window_starts_are_the_cant_be_late_draw():
    expected = sorted(random.Random(0).sample(range(0, 20158 - 1145 + 1), 30))
    assert window_starts(20158, 1145, 30, 0) == expected
    with pytest.raises(ValueError, match="windows=3 of 10 slots: expected at most 2"):
        window_starts(11, 10, 3, 0)
    with pytest.raises(ValueError, match="windows=0"):
        window_starts(11, 10, 0, 0)


def test_cant_be_late_cases_confine_one_job_per_market_worth_its_on_demand_bill():
    spec = CantBeLateSpec(tasks=((2.0, 3.0), (2.0, 4.0)), window_ticks=80)
    cases = cant_be_late_cases(probe_ticks(200), 3, 0, spec)
    assert [c.name for c in cases] == [
        "cant-be-late 2h/3h/0.02h", "cant-be-late 2h/3h/0.2h",
        "cant-be-late 2h/4h/0.02h", "cant-be-late 2h/4h/0.2h"]
    episode = cases[1].episodes[0]
    assert episode.data.n_slots == 80 and episode.data.slot_seconds == 195.0
    for job, market in zip(episode.jobs, episode.data.markets, strict=True):
        assert job.allowed_markets == (market.key,)
        assert job.release == episode.data.origin
        assert job.soft_deadline == job.hard_deadline == job.release + 3 * 3600
        assert (job.n_min, job.n_max, job.alpha, job.beta) == (1, 1, 1.0, 0.0)
        # ceil((2 h + 0.2 h) / 195 s) = 41 ticks at 3.06 USD/h.
        assert job.value == pytest.approx(41 * 195 / 3600 * 3.06)
        assert job.miss_penalty == pytest.approx(10 * job.value)
    assert len({j.id for c in cases[:1] for e in c.episodes for j in e.jobs}) == 6


def test_each_episode_carries_forecasters_trained_on_the_trace_before_its_window():
    spec = CantBeLateSpec(tasks=((2.0, 3.0),), overheads_hours=(0.2,), window_ticks=80)
    ticks = probe_ticks(400)
    case = cant_be_late_cases(ticks, 3, 0, spec)[0]
    first = [round((e.data.origin - ticks[0].times[0]) / 195.0) for e in case.episodes]
    assert [e.models.get().learned for e in case.episodes] == first
    copy = case.episodes[0].fresh_models()
    assert copy is not case.episodes[0].models.get() and copy.learned == first[0]


def test_forecasters_trained_market_by_market_elsewhere_are_those_trained_here():
    spec = CantBeLateSpec(tasks=((2.0, 3.0),), overheads_hours=(0.2,), window_ticks=80)
    ticks = probe_ticks(600)
    here = cant_be_late_cases(ticks, 3, 0, spec)[0].episodes
    apart = cant_be_late_cases(ticks, 3, 0, spec)[0].episodes
    here[0].models.get()
    assert trainings(here[:1]) == []
    work = trainings(apart[:2])  # up to the second window: one per market
    assert [(t.market, t.first, t.starts) for _, t in work] == [
        (m, 0, tuple(round((e.data.origin - ticks[0].times[0]) / 195.0) for e in apart[:2]))
        for m in range(2)]
    for history, training in work:
        history.supply(training, pickle.loads(pickle.dumps(training))())
    assert [t.first for _, t in trainings(apart)] == [work[0][1].starts[-1]] * 2
    for a, b in zip(here, apart, strict=True):
        models, trained = a.models.get(), b.models.get()
        assert models.learned == trained.learned
        for f, g in zip(models.forecasters, trained.forecasters, strict=True):
            assert repr(f.outlook(24)) == repr(g.outlook(24))


def test_cant_be_late_rejects_deadlines_outside_the_window():
    with pytest.raises(ValueError, match=r"deadline 9\.0 h: expected within the window"):
        cant_be_late_cases(probe_ticks(200), 1, 0,
                           CantBeLateSpec(tasks=((2.0, 9.0),), window_ticks=80))
    with pytest.raises(ValueError,
                       match=r"work 2 h, deadline 2 h, restart overhead 0.02 h: expected"):
        cant_be_late_cases(probe_ticks(200), 1, 0,
                           CantBeLateSpec(tasks=((2.0, 2.0),), window_ticks=80))


def test_fine_tune_scales_probe_capacity_and_releases_on_slot_starts():
    ticks = probe_ticks(n_ticks=24 * 60 // 3 * 8, tick=180.0)
    spec = FineTuneSpec(window_slots=96, jobs_per_window=5)
    case = fine_tune_case(ticks, 2, 0, spec)
    assert case.name == "fine-tune" and case.n_jobs == 10
    for episode in case.episodes:
        assert episode.data.slot_seconds == 3600.0
        assert set(np.unique(episode.data.availability)) <= {0, 8}
        for j in episode.jobs:
            assert (j.release - episode.data.origin) % 3600 == 0
            assert j.n_max in (2, 4, 8) and j.n_min == j.n_max // 2
            assert j.release < j.soft_deadline <= j.hard_deadline
    assert len({j.id for e in case.episodes for j in e.jobs}) == 10


def test_build_cases_names_an_unknown_scenario():
    with pytest.raises(ValueError, match="scenario='spot': expected one of cant-be-late"):
        build_cases(probe_ticks(200), ["spot"], 1, 0)


def test_multi_region_windows_hold_one_job_free_to_move_per_checkpoint_size():
    ticks = probe_ticks(2000, zones=("us-east-1a", "us-east-2b", "us-west-2a"))
    spec = MultiRegionSpec(deadline_hours=10 * 195 / 3600, overhead_hours=0.05,
                           checkpoints_gb=(0.0, 50.0))
    cases = multi_region_cases(ticks, 3, 0, spec)
    assert [c.name for c in cases] == [
        "multi-region 3 zones 0.361111h/0.541667h/0.05h/0GB",
        "multi-region 3 zones 0.361111h/0.541667h/0.05h/50GB"]
    starts = window_starts(2000, 10, 3, 0)
    for case, gb in zip(cases, (0.0, 50.0), strict=True):
        assert [e.data.origin for e in case.episodes] == [ticks[0].times[s] for s in starts]
        for episode in case.episodes:
            (job,) = episode.jobs
            assert episode.data.n_slots == 10 and len(episode.data.markets) == 3
            assert job.allowed_markets == tuple(m.key for m in episode.data.markets)
            assert job.checkpoint_gb == gb and job.home_region is None
            assert job.hard_deadline - job.release == pytest.approx(10 * 195)
            assert job.workload == pytest.approx(10 * 195 / 3600 / 1.5)
            assert not episode.migration.transfer_time


def test_multi_region_windows_by_index_tile_the_trace_and_zones_are_chosen():
    ticks = probe_ticks(100, zones=("us-east-1a", "us-east-2b", "us-west-2a"))
    spec = MultiRegionSpec(zones=("us-west-2a", "us-east-1a"), window_indices=(7, 2),
                           deadline_hours=10 * 195 / 3600, overhead_hours=0.05,
                           checkpoints_gb=(5.0,), transfer_time=True)
    (case,) = multi_region_cases(ticks, 30, 0, spec)
    assert [e.data.origin for e in case.episodes] == [ticks[0].times[20], ticks[0].times[70]]
    assert [m.zone for m in case.episodes[0].data.markets] == ["us-west-2a", "us-east-1a"]
    assert case.episodes[0].migration.transfer_time
    with pytest.raises(ValueError, match=r"window index 10: expected 0 to 9"):
        multi_region_cases(ticks, 1, 0, replace(spec, window_indices=(10,)))
    with pytest.raises(ValueError, match="multi-region zone='eu-west-1a'"):
        multi_region_cases(ticks, 1, 0, replace(spec, zones=("eu-west-1a",)))
    with pytest.raises(ValueError, match="work plus overhead within the deadline"):
        multi_region_cases(ticks, 1, 0, replace(spec, overhead_hours=1.0))


def test_runs_over_a_window_share_the_outlooks_its_forecasters_make_slot_by_slot():
    spec = CantBeLateSpec(tasks=((2.0, 3.0),), overheads_hours=(0.02, 0.2), window_ticks=80)
    ticks = probe_ticks(400)
    cases = cant_be_late_cases(ticks, 2, 0, spec)
    first, second = cases[0].episodes[0], cases[1].episodes[0]
    tape = first.outlooks()
    assert second.outlooks() is tape  # another case over the same window and forecasters
    assert pickle.loads(pickle.dumps(first)).outlooks() is tape  # as a worker receives it
    assert cases[0].episodes[1].outlooks() is not tape
    views = {t: tape[t] for t in (0, 1, 40)}  # made when read, in any order
    read = {t: repr(views[t].ready()) for t in (40, 1, 0)}
    models = first.fresh_models()
    for t in (0, 1, 40):
        made = models.outlooks(first.data.price[:, :t], first.data.availability[:, :t],
                               first.data.origin).ready()
        assert read[t] == repr(made) == repr(tape[t].ready())
    assert first.models.get().learned == models.learned - 40  # the trained ones untouched
