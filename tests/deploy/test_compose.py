"""docker-compose.yml, read without a Docker engine: what it builds and mounts exists in the
repository, and what it configures is what the code reads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from deploy.kafka.devkafka import KAFKA_VERSION
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from streams.settings import Settings, Topics, read_catalogue

REPO = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text())
SERVICES: dict[str, dict] = COMPOSE["services"]


def environment(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {key: str(value) for key, value in env.items()}


def bind_mounts(service: dict) -> list[tuple[str, str]]:
    """``(source, target)`` of the volumes that mount a path from the repository."""
    mounts = []
    for volume in service.get("volumes", []):
        source, target = ((volume["source"], volume["target"]) if isinstance(volume, dict)
                          else volume.split(":")[:2])
        if source.startswith((".", "/")):
            mounts.append((source, target))
    return mounts


def test_the_stack_has_its_services():
    assert {"kafka", "scheduler", "connector", "replay", "feed", "prometheus", "alertmanager",
            "grafana"} <= set(SERVICES)
    assert SERVICES["replay"]["profiles"] == ["replay"]
    assert SERVICES["feed"]["profiles"] == ["live"]
    assert [s for s, spec in SERVICES.items() if "profiles" in spec] == ["replay", "feed"]
    assert SERVICES["scheduler"]["command"][0] == "worker"
    assert SERVICES["connector"]["command"][:2] == ["connector", "log"]
    assert SERVICES["feed"]["command"][:2] == ["feed", "aws"]
    assert SERVICES["kafka"]["image"] == f"apache/kafka:{KAFKA_VERSION}"


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_what_a_service_builds_or_mounts_is_in_the_repository(name):
    service = SERVICES[name]
    build = service.get("build")
    if build is not None:
        context = REPO / (build if isinstance(build, str) else build.get("context", "."))
        dockerfile = context / ("Dockerfile" if isinstance(build, str)
                                else build.get("dockerfile", "Dockerfile"))
        assert dockerfile.is_file(), dockerfile
        ignore = context / ".dockerignore"
        patterns = ignore.read_text().split() if ignore.exists() else []
        for line in dockerfile.read_text().splitlines():
            words = line.split()
            if words[:1] in (["COPY"], ["ADD"]) and not any(w.startswith("--from")
                                                            for w in words):
                for source in words[1:-1]:
                    assert (context / source).exists(), f"{dockerfile}: {source}"
                    if "*" in patterns:  # everything ignored but what is let back in
                        path = source.removeprefix("./").rstrip("/")
                        assert {f"!{path}", f"!{path}/"} & set(patterns), \
                            f".dockerignore leaves {source} out of the build"
    else:
        assert "image" in service, f"{name}: expected an image or a build"
    for source, _ in bind_mounts(service):
        assert not source.startswith("/"), f"{name}: {source} is a machine path"
        assert (REPO / source).exists(), f"{name}: {source} is not in the repository"
    named = set(COMPOSE.get("volumes") or {})
    for volume in service.get("volumes", []):
        source = volume.split(":")[0] if isinstance(volume, str) else volume["source"]
        assert source.startswith((".", "/")) or source in named, f"{name}: {source}"
    for dependency in service.get("depends_on", []):
        assert dependency in SERVICES, f"{name} depends on {dependency}"


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_every_spotsched_variable_is_a_setting(name):
    fields = set(Settings.model_fields)
    for key in environment(SERVICES[name]):
        if not key.startswith("SPOTSCHED_"):
            continue
        field, _, nested = key.removeprefix("SPOTSCHED_").lower().partition("__")
        assert field in fields, f"{name}: {key} is not a setting"
        if nested:
            assert field == "topics" and nested in Topics.model_fields, f"{name}: {key}"


def test_workers_and_replay_agree_on_partitions_and_markets():
    """The replay publishes to the partitions the workers read, from the market they plan
    over."""
    worker = environment(SERVICES["scheduler"])
    replay = SERVICES["replay"]
    args = replay["command"]
    assert args[args.index("--job-partitions") + 1] == worker["SPOTSCHED_JOB_PARTITIONS"]
    assert environment(replay)["SPOTSCHED_MARKET_PARTITIONS"] == \
        worker["SPOTSCHED_MARKET_PARTITIONS"]
    assert not {"--trace", "--synthetic-markets", "--days", "--seed"} & set(args)
    mounts = dict((target, source) for source, target in bind_mounts(SERVICES["scheduler"]))
    catalogue = read_catalogue(REPO / mounts[worker["SPOTSCHED_MARKETS_FILE"]])
    assert catalogue == tuple(t.market for t in synthetic_ticks(SyntheticMarketSpec()))


def test_the_feed_publishes_the_markets_the_workers_plan_over_to_their_partitions():
    """The live feed reads the workers' catalogue and writes to the partitions they read, and
    takes AWS credentials from the environment (never from the compose file)."""
    worker, feed = environment(SERVICES["scheduler"]), environment(SERVICES["feed"])
    assert feed["SPOTSCHED_MARKET_PARTITIONS"] == worker["SPOTSCHED_MARKET_PARTITIONS"]
    assert feed["SPOTSCHED_BOOTSTRAP_SERVERS"] == worker["SPOTSCHED_BOOTSTRAP_SERVERS"]
    catalogues = [dict((t, s) for s, t in bind_mounts(SERVICES[name]))[
        environment(SERVICES[name])["SPOTSCHED_MARKETS_FILE"]] for name in ("scheduler", "feed")]
    assert catalogues[0] == catalogues[1]
    assert all(m.cloud == "aws" for m in read_catalogue(REPO / catalogues[1]))
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        assert feed[key] == f"${{{key}:-}}"
    assert SERVICES["feed"]["depends_on"] == {"scheduler": {"condition": "service_healthy"}}


def test_prometheus_scrapes_the_workers_and_connectors_where_they_serve():
    mounts = {target: source for source, target in bind_mounts(SERVICES["prometheus"])}
    config = yaml.safe_load((REPO / mounts["/etc/prometheus/prometheus.yml"]).read_text())
    for rule_file in config["rule_files"]:
        assert f"/etc/prometheus/{rule_file}" in mounts
    scrapes = {s["job_name"]: s for s in config["scrape_configs"]}
    for job, service in (("spotsched-scheduler", "scheduler"),
                         ("spotsched-connector", "connector"), ("spotsched-feed", "feed")):
        (sd,) = scrapes[job]["dns_sd_configs"]
        assert sd["names"] == [service]
        assert str(sd["port"]) == environment(SERVICES[service])["SPOTSCHED_METRICS_PORT"]
        # /metrics binds loopback by default: a container must serve every interface
        assert environment(SERVICES[service])["SPOTSCHED_METRICS_HOST"] == "0.0.0.0"
    (manager,) = config["alerting"]["alertmanagers"]
    host, port = manager["static_configs"][0]["targets"][0].split(":")
    assert host == "alertmanager" and f"127.0.0.1:{port}:{port}" in SERVICES[host]["ports"]


def test_grafana_loads_the_dashboard_and_its_datasource():
    mounts = {target: source for source, target in bind_mounts(SERVICES["grafana"])}
    provisioning = REPO / mounts["/etc/grafana/provisioning"]
    (provider,) = yaml.safe_load(
        (provisioning / "dashboards" / "spotsched.yml").read_text())["providers"]
    dashboards = REPO / mounts[provider["options"]["path"]]
    home = environment(SERVICES["grafana"])["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert json.loads((dashboards / Path(home).name).read_text())["uid"] == "spotsched"
    (source,) = yaml.safe_load(
        (provisioning / "datasources" / "prometheus.yml").read_text())["datasources"]
    assert re.fullmatch(r"http://prometheus:9090", source["url"])


REQUIRED = re.compile(r"\$\{(?P<name>[A-Z_]+):\?(?P<message>[^}]+)\}")
"""A variable compose refuses to start without (``${NAME:?message}``)."""


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_every_published_port_is_on_loopback(name):
    for port in SERVICES[name].get("ports", []):
        if isinstance(port, dict):
            assert port.get("host_ip") == "127.0.0.1", f"{name}: {port}"
        else:
            assert re.fullmatch(r"127\.0\.0\.1:\d+:\d+(/tcp|/udp)?", str(port)), f"{name}: {port}"


def test_the_workers_need_the_snapshot_key_and_grafana_an_admin_password():
    workers = [name for name, spec in SERVICES.items() if spec.get("command", [""])[0] == "worker"]
    assert workers == ["scheduler"]
    for name in workers:
        key = REQUIRED.fullmatch(environment(SERVICES[name])["SPOTSCHED_SNAPSHOT_KEY"])
        assert key is not None and key["name"] == "SPOTSCHED_SNAPSHOT_KEY", name
        assert "openssl rand -hex 32" in key["message"]
    for name, spec in SERVICES.items():  # no service runs without the key
        assert "SPOTSCHED_INSECURE_UNSIGNED_SNAPSHOTS" not in environment(spec), name
        assert "--insecure-unsigned-snapshots" not in spec.get("command", []), name
    grafana = environment(SERVICES["grafana"])
    password = REQUIRED.fullmatch(grafana["GF_SECURITY_ADMIN_PASSWORD"])
    assert password is not None and password["name"] == "GRAFANA_ADMIN_PASSWORD"
    assert grafana.get("GF_AUTH_ANONYMOUS_ORG_ROLE", "Viewer") == "Viewer"
