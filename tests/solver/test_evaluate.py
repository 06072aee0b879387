import dataclasses

import pytest

from solver.evaluation.cells import EvaluationPlan, run
from solver.evaluation.evaluate import (
    DEFAULT_SETTINGS,
    EvaluationSettings,
    PolicyStats,
    check_policies,
    default_policies,
)
from solver.evaluation.scenarios import (
    CantBeLateSpec,
    FineTuneSpec,
    cant_be_late_cases,
    fine_tune_case,
)
from solver.optimize import SolverLimits
from solver.optimize.competition import competing_groups
from solver.policies.optimum import Optimum
from solver.policies.selection import DEFAULT_POOL
from solver.workload import WorkloadSpec
from tests.scenarios import probe_ticks
from tests.traces_dir import needs_traces, traces_dir

SMALL_CBL = CantBeLateSpec(tasks=((2.0, 3.0),), overheads_hours=(0.2,), window_ticks=80)


def evaluate_case(case, policies, seed=0, settings=DEFAULT_SETTINGS):
    """``case`` played under ``policies`` as an evaluation plays it."""
    return run(EvaluationPlan((case,), check_policies(policies), seed, settings)).cases[0]


def test_cant_be_late_case_statistics_per_policy():
    case = cant_be_late_cases(probe_ticks(400), 4, 0, SMALL_CBL)[0]
    names = ["on-demand", "greedy", "uniform-progress", "prediction-free", "risk-aware",
             "policy-selection", "optimum"]
    result = evaluate_case(case, names)
    assert list(result.policies) == names
    stats = result.policies
    assert all(s.runs == case.n_jobs == 8 for s in stats.values())
    # A Can't Be Late job is worth its on-demand bill: on-demand only has utility 0.
    assert stats["on-demand"].mean_utility == pytest.approx(0.0, abs=1e-9)
    assert all(s.hard_deadline_misses == 0 for s in stats.values())
    best = max(s.mean_utility for s in stats.values())
    assert stats["optimum"].mean_utility == pytest.approx(best)
    assert result.unproven_optimum == 0  # the exact dynamic program
    assert result.regret.rounds == case.n_jobs
    assert result.pool == tuple(str(m) for m in DEFAULT_POOL)
    # Each member's shadow ran every job; the ones also run alone cost the same.
    assert len(result.member_costs) == len(DEFAULT_POOL)
    for member in ("risk-aware", "prediction-free", "uniform-progress"):
        alone = stats[member].mean_cost_usd
        assert result.member_costs[result.pool.index(member)] == pytest.approx(alone)


def test_policy_selection_learns_over_the_pool_its_spec_names():
    case = cant_be_late_cases(probe_ticks(400), 2, 0, SMALL_CBL)[0]
    spec = "policy-selection:pool=prediction-free+greedy,learner=exp3"
    result = evaluate_case(case, [spec, "prediction-free", "greedy"])
    assert result.pool == ("prediction-free", "greedy")
    assert result.selection == str(check_policies([spec])[0])
    assert "pool=prediction-free+greedy" in result.selection
    assert result.regret.rounds == case.n_jobs
    # Each member's shadow bills what the member alone does.
    for k, member in enumerate(result.pool):
        assert result.member_costs[k] == pytest.approx(result.policies[member].mean_cost_usd)


def test_policy_specs_are_checked_and_slow_ones_left_out_by_default():
    with pytest.raises(ValueError, match=r"policy='fastest': expected one of on-demand, "):
        check_policies(["greedy", "fastest"])
    with pytest.raises(ValueError, match=r"named more than once"):
        check_policies(["chc:window_hours=12", "chc:window_hours=12.0"])
    assert [str(s) for s in check_policies(["chc:window_hours=12"])] == ["chc:window_hours=12"]
    assert "chc" in default_policies("cant-be-late")
    assert "optimum" in default_policies("cant-be-late")
    assert "optimum" not in default_policies("fine-tune")
    assert "optimum" not in default_policies("scarce")
    assert "chc" in default_policies("fine-tune")


@pytest.mark.slow  # HiGHS's root node of two four-job programs
def test_optimum_counts_the_jobs_whose_plan_a_solver_limit_left_unproven():
    spec = FineTuneSpec(window_slots=48, jobs_per_window=4, workload=WorkloadSpec(
        workload_range=(8.0, 24.0), n_max_choices=(2, 4), slack_range=(1.3, 2.0)))
    case = fine_tune_case(probe_ticks(n_ticks=20 * 72, tick=180.0), 2, 0, spec)
    stopped = dataclasses.replace(
        EvaluationSettings(), optimum_limits=SolverLimits(node_limit=1, relative_gap=0.0))
    result = evaluate_case(case, ["greedy", "optimum"], 0, stopped)
    # Every group of competing jobs (here each job alone) is planned apart; a job counts when
    # the one node its group's program was allowed did not prove that group's plan.
    unproven = sum(len(group) for episode in case.episodes
                   for group in competing_groups(list(episode.jobs), episode.data)
                   if not Optimum(episode.data, group, limits=stopped.optimum_limits,
                                  migration=episode.migration).plan.optimal)
    assert 0 < result.unproven_optimum == unproven < case.n_jobs
    assert evaluate_case(case, ["greedy"], 0, stopped).unproven_optimum == 0


def test_stats_of_no_runs_are_zero():
    assert PolicyStats.of([]) == PolicyStats(0, 0.0, 0.0, 0.0, 0, 0)


def test_sensitivity_falls_back_when_forecasts_are_poor():
    spec = FineTuneSpec(window_slots=48, jobs_per_window=3, workload=WorkloadSpec(
        workload_range=(8.0, 24.0), n_max_choices=(2, 4), slack_range=(1.3, 2.0)))
    case = fine_tune_case(probe_ticks(n_ticks=20 * 72, tick=180.0), 2, 0, spec)
    settings = dataclasses.replace(EvaluationSettings(), sensitivity_errors=(0.0, 1.0))
    points = run(EvaluationPlan((case,), (), 0, settings, study=0)).sensitivity
    assert [p.error for p in points] == [0.0, 1.0]
    assert points[0].fallback_share == 0.0 and points[1].fallback_share > 0.5
    assert points[0].mean_utility["prediction-free"] == points[1].mean_utility["prediction-free"]
    assert set(points[0].mean_utility) == {"chc", "prediction-free", "policy-selection"}


SKYNOMAD = ("skynomad-artifact/"
            "aws_p3.2xlarge_availability_and_spot_price_2023-02-15_to_2023-04-02.csv.gz")


@pytest.fixture(scope="module")
def skynomad_cases():
    from solver.traces import load_trace

    return cant_be_late_cases(load_trace(traces_dir() / SKYNOMAD), 30, 0)


@pytest.mark.slow  # 30 windows of the real trace, as the reference numbers are
@pytest.mark.traces
@needs_traces
def test_cant_be_late_on_the_real_trace_matches_the_reference_simulator(skynomad_cases):
    low, high = skynomad_cases[0], skynomad_cases[1]  # 48 h / 52 h at 0.02 h and 0.2 h
    assert low.name == "cant-be-late 48h/52h/0.02h" and low.n_jobs == 180
    stats = evaluate_case(low, ["on-demand", "greedy"]).policies
    # on-demand: ⌈(48 h + 72 s overhead) / 195 s⌉ = 887 ticks billed at 3.06 USD/h
    assert stats["on-demand"].mean_cost_usd == pytest.approx(147.02, abs=0.005)
    assert stats["greedy"].mean_cost_usd == pytest.approx(105.53, rel=1e-3)
    few = dataclasses.replace(high, episodes=high.episodes[:10])
    stats = evaluate_case(few, ["on-demand", "uniform-progress", "prediction-free"]).policies
    assert stats["on-demand"].mean_cost_usd == pytest.approx(147.52, abs=0.005)
    assert stats["prediction-free"].mean_cost_usd < stats["uniform-progress"].mean_cost_usd
    assert stats["prediction-free"].hard_deadline_misses == 0
