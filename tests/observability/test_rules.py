"""The alert rules: promtool's unit tests, annotations, runbooks, and the metrics they use."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml

from tests.observability.exported import OPERATIONS, REPO, exported_series, metric_names

PROMETHEUS_DIR = REPO / "deploy" / "prometheus"
needs_promtool = pytest.mark.skipif(
    shutil.which("promtool") is None,
    reason="promtool not found: install Debian's 'prometheus' package "
           "(deploy/install-test-deps.sh does)")


def alert_rules() -> list[dict]:
    groups = yaml.safe_load((PROMETHEUS_DIR / "rules.yml").read_text())["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def promtool(*args: str) -> str:
    done = subprocess.run(["promtool", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow  # promtool evaluates the rules over hours of test series
@needs_promtool
def test_rules_pass_their_promtool_unit_tests():
    assert "SUCCESS" in promtool("test", "rules", "deploy/prometheus/rules.test.yml")


@needs_promtool
def test_rules_and_the_stacks_prometheus_config_are_valid():
    promtool("check", "rules", "deploy/prometheus/rules.yml")
    promtool("check", "config", "deploy/prometheus/prometheus.yml")


def test_every_alert_is_annotated_and_its_runbook_exists():
    headings = {re.sub(r"[^a-z0-9-]", "", h.lower().replace(" ", "-"))
                for h in re.findall(r"^#+ (.+)$", OPERATIONS.read_text(), re.MULTILINE)}
    for rule in alert_rules():
        annotations = rule["annotations"]
        assert {"summary", "description", "runbook"} <= set(annotations), rule["alert"]
        page, anchor = annotations["runbook"].split("#")
        assert page == "docs/operations.md" and anchor in headings, annotations["runbook"]
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]


def test_every_alert_has_a_unit_test_that_fires_it():
    tests = yaml.safe_load((PROMETHEUS_DIR / "rules.test.yml").read_text())["tests"]
    fired = {case["alertname"] for test in tests for case in test["alert_rule_test"]
             if case.get("exp_alerts")}
    assert fired == {rule["alert"] for rule in alert_rules()}


def test_rules_use_only_exported_metrics():
    exported = exported_series()
    for rule in alert_rules():
        unknown = metric_names(rule["expr"]) - exported
        assert not unknown, f"{rule['alert']}: {sorted(unknown)} are not exported"
