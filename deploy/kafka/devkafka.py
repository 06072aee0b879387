"""Single-node Apache Kafka (KRaft) for development and tests.

The broker's jars come from Maven Central through ``deploy/kafka/pom.xml`` and are cached
once per version; each broker then runs from its own data directory with its own ports.
Topic auto-creation is left at Kafka's default (enabled), as in a stock broker. Given a
:class:`SaslSsl`, the client listener requires SASL/PLAIN over TLS (the broker talks to itself
the same way); the controller listener stays plaintext on loopback.

    python deploy/kafka/devkafka.py --port 9092      # run until Ctrl-C (or: spotsched dev kafka)
    python deploy/kafka/devkafka.py --fetch-only     # only fetch the jars
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import ctypes
import hashlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

KAFKA_VERSION = "4.0.2"
HOME_ENV = "SPOTSCHED_KAFKA_HOME"
DEPLOY_DIR = Path(__file__).resolve().parent
JVM_OPTS = ("-Xms256m", "-Xmx512m", "-Djava.awt.headless=true")


class DevKafkaError(RuntimeError):
    """The development broker could not be fetched, started or reached."""


def kafka_home() -> Path:
    """Cache directory of the Kafka jars: ``$SPOTSCHED_KAFKA_HOME`` or a per-version default."""
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "spotsched" / f"kafka-{KAFKA_VERSION}"


def _require(tool: str, hint: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise DevKafkaError(f"`{tool}` not found on PATH: {hint}")
    return path


def fetch_jars(home: Path) -> Path:
    """Fetch the broker's and the console tools' jars once, with Maven, into a directory of
    ``home`` named after the POM's digest (a changed POM fetches afresh); return it."""
    digest = hashlib.sha256((DEPLOY_DIR / "pom.xml").read_bytes()).hexdigest()[:12]
    libs = home / f"libs-{digest}"
    if libs.is_dir():
        return libs
    _require("java", "a Java 17+ runtime is needed to run Kafka")
    mvn = _require("mvn", "Maven is needed to fetch the Kafka jars")
    home.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="staging-", dir=home))
    cmd = [
        mvn, "-q", "-B", "-f", str(DEPLOY_DIR / "pom.xml"),
        "dependency:copy-dependencies", "-DincludeScope=runtime",
        f"-Dkafka.version={KAFKA_VERSION}", f"-DoutputDirectory={staging}",
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        output = (done.stdout + done.stderr).strip()
        raise DevKafkaError(f"fetching Kafka {KAFKA_VERSION} with Maven failed:\n{output}")
    try:
        staging.rename(libs)
    except OSError:  # another process finished first
        shutil.rmtree(staging, ignore_errors=True)
    return libs


def free_port(*taken: int) -> int:
    """A loopback TCP port that was free a moment ago and is none of ``taken``."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port: int = sock.getsockname()[1]
        if port not in taken:
            return port


def port_is_free(port: int) -> bool:
    """Whether a server could listen on loopback ``port`` now. Like the broker, the check sets
    SO_REUSEADDR, so a port whose last server crashed (connections in TIME-WAIT) is free."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@dataclass(frozen=True)
class SaslSsl:
    """A client listener that requires SASL/PLAIN over TLS.

    ``keystore`` (PKCS12) holds the broker's key and a certificate for 127.0.0.1 signed by the
    CA of ``ca_file`` (PEM, what clients trust); ``truststore`` (PKCS12) holds that CA for the
    broker's own connections. ``users`` maps user names to passwords; the first is the
    broker's own.
    """

    keystore: Path
    truststore: Path
    store_password: str
    ca_file: Path
    users: Mapping[str, str]

    def client_options(self, user: str) -> dict[str, Any]:
        """aiokafka options of a client logging in as ``user``."""
        return {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN",
                "sasl_plain_username": user, "sasl_plain_password": self.users[user],
                "ssl_context": ssl.create_default_context(cafile=str(self.ca_file))}

    def broker_config(self) -> dict[str, str]:
        """``server.properties`` entries of the listener named SASL_SSL."""
        (admin, password), *_ = self.users.items()
        accounts = " ".join(f'user_{name}="{secret}"' for name, secret in self.users.items())
        jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'username="{admin}" password="{password}" {accounts};')
        return {
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas,
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(self.keystore),
            "ssl.keystore.password": self.store_password,
            "ssl.key.password": self.store_password,
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.location": str(self.truststore),
            "ssl.truststore.password": self.store_password,
        }


def random_cluster_id() -> str:
    """A cluster id in Kafka's format: a random UUID, URL-safe base64 without padding."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


async def _probe(bootstrap: str, timeout: float, options: Mapping[str, Any]) -> int:
    """Number of live brokers reported by a metadata request to ``bootstrap``."""
    admin = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap, request_timeout_ms=max(1000, int(timeout * 1000)),
        **options)
    try:
        await admin.start()
        return len((await admin.describe_cluster())["brokers"])
    finally:
        await admin.close()


def wait_ready(
    bootstrap: str, timeout: float = 60.0, process: subprocess.Popen[bytes] | None = None,
    client_options: Mapping[str, Any] | None = None,
) -> None:
    """Block until ``bootstrap`` accepts connections and answers a metadata request (made with
    ``client_options``, e.g. credentials).

    Raises DevKafkaError after ``timeout`` seconds, or at once if ``process`` exits.
    Runs its own event loop, so it must not be called from a coroutine.
    """
    host, _, port = bootstrap.rpartition(":")
    deadline = time.monotonic() + timeout
    reason = "no answer"
    while True:
        if process is not None and process.poll() is not None:
            raise DevKafkaError(f"Kafka exited with code {process.returncode} before it was ready")
        try:
            with socket.create_connection((host, int(port)), timeout=1.0):
                pass
            if asyncio.run(_probe(bootstrap, min(5.0, timeout), client_options or {})) > 0:
                return
            reason = "the metadata lists no live broker"
        except OSError as exc:
            reason = exc.strerror or str(exc)
        except (KafkaError, TimeoutError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
        if time.monotonic() >= deadline:
            raise DevKafkaError(
                f"no Kafka broker ready at {bootstrap} after {timeout:g} s: {reason}"
            )
        time.sleep(0.2)


def _die_with_parent() -> None:
    """Have Linux send SIGTERM to the broker should this process die first."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class KafkaBroker:
    """One single-node KRaft broker (combined broker and controller) on loopback."""

    def __init__(self, libs: Path, data_dir: Path, port: int | None = None,
                 sasl_ssl: SaslSsl | None = None) -> None:
        self.libs = libs
        self.data_dir = data_dir.resolve()
        self.port = port or free_port()
        # A given client port may be free right now (its last broker crashed), so the
        # system could hand it out again: the controller must not land on it.
        self.controller_port = free_port(self.port)
        self.sasl_ssl = sasl_ssl
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def listener(self) -> str:
        """The client listener's name and security protocol."""
        return "PLAINTEXT" if self.sasl_ssl is None else "SASL_SSL"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def logs_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def config_path(self) -> Path:
        return self.data_dir / "server.properties"

    def write_config(self) -> Path:
        """Write ``server.properties`` for this broker's ports and data directory."""
        client = self.listener
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": (
                f"{client}://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}"
            ),
            "advertised.listeners": f"{client}://127.0.0.1:{self.port}",
            "listener.security.protocol.map": f"{client}:{client},CONTROLLER:PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": client,
            "log.dirs": str(self.data_dir / "kraft"),
            "num.partitions": "1",
            "offsets.topic.num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            # A restarted single-node broker re-registers only once its old session has
            # expired (KAFKA-19130), so keep the session short.
            "broker.heartbeat.interval.ms": "500",
            "broker.session.timeout.ms": "3000",
            **(self.sasl_ssl.broker_config() if self.sasl_ssl else {}),
        }
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        return self.config_path

    def _java(self, main_class: str, *args: str, short_lived: bool = False) -> list[str]:
        """The java command line for ``main_class``; a short-lived tool skips the slow JIT tier."""
        return [
            _require("java", "a Java 17+ runtime is needed to run Kafka"),
            *JVM_OPTS,
            *(["-XX:TieredStopAtLevel=1"] if short_lived else []),
            f"-Dkafka.logs.dir={self.logs_dir}",
            f"-Dlog4j2.configurationFile={DEPLOY_DIR / 'log4j2.properties'}",
            "-cp", f"{self.libs}/*",
            main_class, *args,
        ]  # fmt: skip

    def format_storage(self) -> None:
        """Format the metadata log with a fresh cluster id, unless already formatted."""
        if (self.data_dir / "kraft" / "meta.properties").exists():
            return
        cmd = self._java(
            "kafka.tools.StorageTool", "format",
            "--config", str(self.config_path), "--cluster-id", random_cluster_id(),
            short_lived=True,
        )  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            output = (done.stdout + done.stderr).strip()
            raise DevKafkaError(f"formatting Kafka storage failed:\n{output}\n{self.log_tail()}")

    def client_options(self) -> dict[str, Any]:
        """aiokafka options of a client of this broker (the broker's own user under SASL)."""
        if self.sasl_ssl is None:
            return {}
        return self.sasl_ssl.client_options(next(iter(self.sasl_ssl.users)))

    def start(self, timeout: float = 90.0) -> None:
        """Configure, format and launch the broker, then wait until it serves metadata."""
        if not port_is_free(self.port):
            raise DevKafkaError(f"port {self.port} on 127.0.0.1 is already in use")
        self.write_config()
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        self.format_storage()
        with open(self.logs_dir / "console.log", "ab") as console:
            self.process = subprocess.Popen(
                self._java("kafka.Kafka", str(self.config_path)),
                stdin=subprocess.DEVNULL,
                stdout=console,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        try:
            wait_ready(self.bootstrap, timeout, self.process, self.client_options())
        except DevKafkaError as exc:
            self.stop()
            raise DevKafkaError(f"{exc}\n{self.log_tail()}") from None

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the broker: SIGTERM for a clean shutdown, SIGKILL after ``timeout`` seconds."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def log_tail(self, lines: int = 30) -> str:
        """The broker's first logged error and last log lines, for error messages."""
        parts = []
        for name in ("server.log", "console.log"):
            path = self.logs_dir / name
            text = path.read_text(errors="replace").splitlines() if path.exists() else []
            first_error = next((i for i, line in enumerate(text) if "] ERROR " in line), None)
            if first_error is not None and first_error < len(text) - lines:
                parts.append(f"--- {path}: first error ---")
                parts.extend(text[first_error : first_error + 2])
            if text:
                parts.append(f"--- {path}: last lines ---")
                parts.extend(text[-lines:])
        return "\n".join(parts) or f"(no broker log in {self.logs_dir})"

    def __enter__(self) -> KafkaBroker:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def serve(port: int = 9092, data_dir: Path | None = None) -> None:
    """Run a broker on ``127.0.0.1:port`` until Ctrl-C or SIGTERM.

    With no ``data_dir`` the broker's data lives in a temporary directory removed on exit;
    a given ``data_dir`` is kept and reused by the next run.
    """
    libs = fetch_jars(kafka_home())
    scratch = None
    if data_dir is None:
        scratch = data_dir = Path(tempfile.mkdtemp(prefix="spotsched-kafka-"))
    broker = KafkaBroker(libs, data_dir, port)
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        started = time.monotonic()
        broker.start()
        print(
            f"Kafka {KAFKA_VERSION} ready at {broker.bootstrap} "
            f"({time.monotonic() - started:.1f} s; logs in {broker.logs_dir}); Ctrl-C stops it.",
            flush=True,
        )
        code = broker.process.wait() if broker.process else None
        raise DevKafkaError(f"Kafka exited with code {code}\n{broker.log_tail()}")
    except KeyboardInterrupt:
        print("stopping Kafka ...", flush=True)
    finally:
        broker.stop()
        signal.signal(signal.SIGTERM, previous)
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: run a development broker, or only fetch its jars."""
    parser = argparse.ArgumentParser(
        prog="python deploy/kafka/devkafka.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--port", type=int, default=9092, help="client port (default 9092)")
    parser.add_argument("--data-dir", type=Path, help="keep the broker's data here")
    parser.add_argument("--fetch-only", action="store_true", help="fetch the jars and exit")
    args = parser.parse_args(argv)
    try:
        if args.fetch_only:
            print(fetch_jars(kafka_home()))
        else:
            serve(args.port, args.data_dir)
    except DevKafkaError as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    main()
