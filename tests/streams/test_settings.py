"""Settings: safe defaults, one-line errors naming the setting, never a secret."""

import json
import socket
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, Counter
from typer.testing import CliRunner

from solver.policies.spec import RECOMMENDED
from streams.cli import app
from streams.runtime import serve_metrics
from streams.settings import Settings, load_settings

SECRET = "s3cret-pa55word"


def test_metrics_bind_loopback_unless_told_otherwise(monkeypatch):
    monkeypatch.delenv("SPOTSCHED_METRICS_HOST", raising=False)
    assert Settings().metrics_host == "127.0.0.1"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    registry = CollectorRegistry()
    Counter("probe", "A probe", registry=registry).inc()
    server = serve_metrics(load_settings(metrics_port=port), registry)
    try:
        assert server.server_address == ("127.0.0.1", port)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as page:
            assert b"probe_total 1.0" in page.read()
    finally:
        server.shutdown()
    assert serve_metrics(load_settings(metrics_port=0), registry) is None


@pytest.mark.parametrize(("overrides", "message"), [
    ({"ssl_cafile": "/nowhere/ca.pem"},
     "ssl_cafile (SPOTSCHED_SSL_CAFILE) = '/nowhere/ca.pem': expected an existing file"),
    ({"bootstrap_servers": "kafka"},
     "bootstrap_servers (SPOTSCHED_BOOTSTRAP_SERVERS) = 'kafka': expected host:port"),
    ({"metrics_port": 70000},
     "metrics_port (SPOTSCHED_METRICS_PORT) = 70000: expected less than or equal to 65535"),
    ({"max_future_skew_seconds": -1.0},
     "max_future_skew_seconds (SPOTSCHED_MAX_FUTURE_SKEW_SECONDS) = -1.0: expected greater"),
    ({"sasl_password": 12345}, "sasl_password (SPOTSCHED_SASL_PASSWORD): expected a valid"),
    ({"instance_id": "pod 1"},
     "instance_id (SPOTSCHED_INSTANCE_ID) = 'pod 1': expected 1 to 249 letters, digits"),
    ({"snapshot_key": "0123456789abcdef,12345"},
     "snapshot_key (SPOTSCHED_SNAPSHOT_KEY): expected keys of at least 16 characters"),
])
def test_bad_settings_fail_in_one_line_naming_the_setting(overrides, message):
    with pytest.raises(ValueError) as info:
        load_settings(**overrides)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    assert "12345" not in str(info.value)


def test_the_snapshot_keys_sign_with_the_first_and_are_none_only_when_told_to_run_without():
    for unset in (Settings(), Settings(snapshot_key="")):
        with pytest.raises(ValueError, match=r"^snapshot_key \(SPOTSCHED_SNAPSHOT_KEY\) is not "
                           r"set: .* --insecure-unsigned-snapshots "
                           r"\(SPOTSCHED_INSECURE_UNSIGNED_SNAPSHOTS=true\)"):
            unset.snapshot_keys()
    assert Settings(insecure_unsigned_snapshots=True).snapshot_keys() == ()
    keys = Settings(snapshot_key="new-key-0123456789, old-key-0123456789").snapshot_keys()
    assert keys == (b"new-key-0123456789", b"old-key-0123456789")


def test_a_missing_ca_file_is_one_line_from_every_client_command(tmp_path):
    jobs = tmp_path / "jobs.json"
    jobs.write_text(json.dumps([{"id": "j", "workload": 1.0, "release": 1.8e9,
                                 "soft_deadline": 1.8e9 + 3600, "hard_deadline": 1.8e9 + 7200}]))
    env = {"SPOTSCHED_SECURITY_PROTOCOL": "SASL_SSL", "SPOTSCHED_SASL_MECHANISM": "PLAIN",
           "SPOTSCHED_SASL_USERNAME": "spotsched", "SPOTSCHED_SASL_PASSWORD": SECRET,
           "SPOTSCHED_SSL_CAFILE": str(tmp_path / "missing-ca.pem")}
    runner = CliRunner()
    for command in (["submit", str(jobs)], ["cancel", "j"], ["decisions"],
                    ["connector", "log", "--data-dir", str(tmp_path)],
                    ["replay", "--bootstrap-servers", "127.0.0.1:1", "--n-jobs", "1",
                     "--days", "3"]):
        result = runner.invoke(app, command, env=env)
        lines = result.output.strip().splitlines()
        assert result.exit_code == 2, (command, result.output)
        assert lines == [f"error: ssl_cafile (SPOTSCHED_SSL_CAFILE) = "
                         f"'{tmp_path / 'missing-ca.pem'}': expected an existing file "
                         "(no such file)"], command
        assert SECRET not in result.output


def test_the_default_policy_is_a_valid_online_spec_read_without_loading_the_policies():
    import subprocess
    import sys

    from solver.policies import check_spec

    assert str(check_spec(RECOMMENDED, online=True)) == RECOMMENDED
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys; from streams.settings import load_settings; "
         "load_settings(); print('solver.policies.base' in sys.modules)"],
        capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "False"


def test_an_empty_instance_id_is_unset(monkeypatch):
    monkeypatch.setenv("SPOTSCHED_INSTANCE_ID", "")  # as a compose file passes an unset one
    assert Settings().instance_id is None
