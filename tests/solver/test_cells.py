import pickle
import random

import pytest

from solver.evaluation.cells import Cell, EvaluationPlan, play_cell, run
from solver.evaluation.evaluate import EvaluationSettings
from solver.evaluation.scenarios import CantBeLateSpec, cant_be_late_cases, trainings
from solver.policies import PolicySpec
from tests.scenarios import probe_ticks

SMALL_CBL = CantBeLateSpec(tasks=((2.0, 3.0),), overheads_hours=(0.02, 0.2), window_ticks=80)


@pytest.fixture(scope="module")
def cases():
    return cant_be_late_cases(probe_ticks(400), 3, 0, SMALL_CBL)


def test_a_plan_cuts_each_case_into_episodes_and_whole_cases_for_learners(cases):
    plan = EvaluationPlan(tuple(cases), ("greedy", "risk-aware", "policy-selection"), 0,
                          forecast_values=True)
    cells = plan.cells()
    assert len(cells) == len(set(cells))
    for k, case in enumerate(cases):
        mine = [c for c in cells if c.case == k]
        assert {c.episode for c in mine if c.spec.name == "greedy"} == {0, 1, 2}
        assert [c.episode for c in mine if c.spec.name == "policy-selection"] == [None]
        # risk-aware in the table plans on the learned distributions, as the study's
        # distribution column does: one cell each, not two.
        planners = {(c.spec, c.episode) for c in mine if c.spec.name in ("risk-aware", "chc")}
        assert len(planners) == 2 * 3 * len(case.episodes)
        assert Cell(k, case.name, 0, PolicySpec.of("risk-aware", forecast="distribution")) in mine
    assert plan.episodes(cells[0]) == (cases[0].episodes[cells[0].episode],)


@pytest.mark.slow
def test_cells_merge_alike_whatever_order_they_are_played_in(cases):
    plan = EvaluationPlan(tuple(cases[1:]), ("greedy", "risk-aware", "policy-selection",
                                             "optimum"), 0)
    cells = plan.cells()
    shuffled = cells[:]
    random.Random(3).shuffle(shuffled)
    played = {c: play_cell(c, plan.episodes(c), plan.seed, plan.settings) for c in shuffled}
    assert _plain(plan.merge(played)) == _plain(run(plan))
    with pytest.raises(KeyError):
        plan.merge({c: r for c, r in played.items() if c is not cells[-1]})


def _plain(evaluation):
    """An evaluation's results with each regret trace as its list of values."""
    return [(r.policies, r.pool, r.member_costs, r.member_misses, r.unproven_optimum,
             r.selection, r.regret.regret if r.regret else None) for r in evaluation.cases]


def test_a_cell_plays_the_same_on_episodes_sent_to_another_process(cases):
    """A worker gets pickled episodes, their forecasters trained by the sender."""
    plan = EvaluationPlan(tuple(cases[1:]), ("risk-aware", "policy-selection"), 0)
    for cell in plan.cells():
        episodes = plan.episodes(cell)
        sent = pickle.loads(pickle.dumps(episodes))
        assert [e.models.get().learned for e in sent] == [
            e.models.get().learned for e in episodes]
        there, here = play_cell(cell, sent, 0), play_cell(cell, episodes, 0)
        assert there.jobs == here.jobs
        if here.learning is not None:
            assert there.learning.regret.regret == here.learning.regret.regret
            assert there.learning.member_costs == here.learning.member_costs


def test_forecasters_are_trained_only_when_first_read():
    case = cant_be_late_cases(probe_ticks(400), 3, 0, SMALL_CBL)[0]
    assert [t.first for _, t in trainings(case.episodes)] == [0, 0]  # nothing learned yet
    last = case.episodes[-1].models.get()
    assert last.learned > 0 and trainings(case.episodes) == []


def test_a_cell_names_the_forecasts_it_plans_on(cases):
    point = EvaluationSettings(forecast="point")
    plan = EvaluationPlan(tuple(cases[:1]), ("risk-aware", "greedy"), 0, point)
    assert {str(c.spec) for c in plan.cells()} == {"risk-aware:forecast=point", "greedy"}
    assert plan.cells()[0].label == "cant-be-late 2h/3h/0.02h w00 risk-aware:forecast=point"
