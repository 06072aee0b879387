"""The Grafana dashboard and its provisioning, and the metrics documentation."""

from __future__ import annotations

import doctest
import json
import re

import yaml

import tests.observability.exported
from tests.observability.exported import (
    OPERATIONS,
    REPO,
    connector_series,
    documented_connector_names,
    exported_series,
    metric_names,
    pipeline_registry,
    variable_query_names,
)

GRAFANA = REPO / "deploy" / "grafana"


def dashboard() -> dict:
    return json.loads((GRAFANA / "dashboards" / "spotsched.json").read_text())


def panels(board: dict) -> list[dict]:
    return [p for top in board["panels"] for p in [top, *top.get("panels", [])]]


def test_metric_names_are_found_in_promql():
    assert doctest.testmod(tests.observability.exported).failed == 0
    assert metric_names('time() - max(a_b) > 2 * max(c{d=~"$e"})') == {"a_b", "c"}
    assert metric_names("histogram_quantile(0.95, sum by (le, x) (rate(h_bucket"
                        "[$__rate_interval]))) * 1e3") == {"h_bucket"}
    assert metric_names('sum(up{job="x"}) == 0 or absent(up{job="x"})') == {"up"}
    assert variable_query_names("label_values(m_total{a='b'}, market)") == {"m_total"}


def test_every_dashboard_query_uses_exported_metrics():
    board = dashboard()
    exported = exported_series()
    queries = [(p["title"], t["expr"]) for p in panels(board) for t in p.get("targets", [])]
    assert len(queries) > 20
    for title, expr in queries:
        names = metric_names(expr)
        assert names, f"{title}: {expr!r} names no metric"
        assert names <= exported, f"{title}: {sorted(names - exported)} are not exported"
    for variable in board["templating"]["list"]:
        query = variable["query"]
        names = variable_query_names(query["query"] if isinstance(query, dict) else query)
        assert names and names <= exported, variable["name"]


def test_every_worker_metric_is_on_the_dashboard():
    text = json.dumps(dashboard())
    for family in pipeline_registry().collect():
        assert family.name in text, family.name


def test_the_dashboard_is_provisioned_from_the_stacks_prometheus():
    board = dashboard()
    (source,) = yaml.safe_load(
        (GRAFANA / "provisioning" / "datasources" / "prometheus.yml").read_text())["datasources"]
    uids = {p["datasource"]["uid"] for p in panels(board) if "datasource" in p}
    uids |= {t["datasource"]["uid"] for p in panels(board) for t in p.get("targets", [])}
    assert uids == {source["uid"]}
    assert source["url"] == "http://prometheus:9090"
    (provider,) = yaml.safe_load(
        (GRAFANA / "provisioning" / "dashboards" / "spotsched.yml").read_text())["providers"]
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards"
    ids = [p["id"] for p in panels(board)]
    assert len(ids) == len(set(ids))


def test_the_operations_guide_documents_every_metric():
    documented = set(re.findall(r"`(spotsched_\w+)`", OPERATIONS.read_text()))
    for family in pipeline_registry().collect():
        name = family.name + ("_total" if family.type == "counter" else "")
        assert name in documented, name
    exported = exported_series()
    unknown = {n for n in documented if n not in exported and f"{n}_count" not in exported}
    assert not unknown, f"documented but not exported: {sorted(unknown)}"
    connector = connector_series()
    assert all(n in connector or f"{n}_count" in connector
               for n in documented_connector_names())
