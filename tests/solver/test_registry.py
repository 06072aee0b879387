"""The registry: the one list of policies, the specs it reads and the capabilities it tells."""

import pytest

from solver.evaluation.evaluate import default_policies
from solver.policies import (
    POLICY_NAMES,
    check_spec,
    in_hindsight,
    make_policy,
    policy_class,
    policy_classes,
)
from solver.policies.base import PolicyBase


def test_the_registry_lists_every_policy_once_in_display_order_under_its_class_name():
    assert POLICY_NAMES == ("on-demand", "spot-only", "greedy", "uniform-progress",
                            "eager-failover", "prediction-free", "chc", "risk-aware",
                            "policy-selection", "optimum")
    classes = policy_classes()
    assert list(classes) == list(POLICY_NAMES)
    assert all(issubclass(cls, PolicyBase) and cls.name == name for name, cls in classes.items())


@pytest.mark.parametrize(("spec", "message"), [
    ("nope", "policy='nope': expected one of on-demand, spot-only, greedy"),
    ("risk-aware:markets=x", "policy risk-aware: markets='x': expected a whole number"),
    ("risk-aware:market=3", "policy risk-aware: parameter 'market': expected one of: "
                            "backtest_hours, cadence_hours, choose, confidence, fixed_sigma, "
                            "forecast, margin, markets, resolve_hours, sigma, solves, "
                            "window_hours (did you mean 'markets'?)"),
    ("greedy:sigma=1", "policy greedy: parameter 'sigma': expected one of: none"),
    ("prediction-free:sigma=inf", "policy prediction-free: sigma='inf': expected a finite "
                                  "number"),
    ("chc:commitment=true", "policy chc: commitment='true': expected a whole number"),
    ("risk-aware:markets=0", "policy risk-aware: markets=0: expected at least 1 market to plan "
                             "in"),
])
def test_a_spec_is_refused_with_its_field_value_and_what_was_expected(spec, message):
    with pytest.raises(ValueError) as raised:
        check_spec(spec)
    assert str(raised.value).startswith(message)


def test_a_spec_reads_into_the_types_its_policy_declares():
    spec = check_spec("risk-aware:markets=13,window_hours=12,choose=evidence")
    assert spec.kwargs == {"markets": 13, "window_hours": 12.0, "choose": "evidence"}
    assert str(spec) == "risk-aware:choose=evidence,markets=13,window_hours=12"
    policy = make_policy(spec)
    assert policy.markets == 13 and policy.programs.max_markets == 13


@pytest.mark.parametrize(("spec", "hindsight"), [
    ("optimum", True), ("optimum:time_limit=0", True), ("chc:forecast=oracle", True),
    ("risk-aware:forecast=oracle", True), ("chc", False), ("risk-aware:forecast=point", False),
    ("policy-selection", False), ("greedy", False),
])
def test_hindsight_is_the_tag_or_planning_on_the_realised_market(spec, hindsight):
    assert in_hindsight(check_spec(spec)) == hindsight
    if hindsight:
        with pytest.raises(ValueError, match="expected an online policy"):
            check_spec(spec, online=True)
    else:
        assert check_spec(spec, online=True) == check_spec(spec)


def test_hindsight_policies_are_left_out_only_where_the_scenario_makes_them_slow():
    assert default_policies("cant-be-late") == POLICY_NAMES
    assert default_policies("fine-tune") == tuple(
        p for p in POLICY_NAMES if "hindsight" not in policy_class(p).tags)
    assert "optimum" not in default_policies("scarce")
