"""Worker and client settings: one frozen object, read at the entry point and passed down.

Every field can be set by flag or by an environment variable ``SPOTSCHED_<FIELD>`` (nested
topic names as ``SPOTSCHED_TOPICS__<NAME>``). Secrets are ``SecretStr`` and never printed.
"""

from __future__ import annotations

import json
import re
import ssl
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from solver.market import SECONDS_PER_HOUR, Market
from solver.policies.spec import RECOMMENDED

if TYPE_CHECKING:
    from solver.policies import PolicySpec

ENV_PREFIX = "SPOTSCHED_"
SECRETS = frozenset({"sasl_password", "snapshot_key"})
"""Settings whose values never appear in messages."""
MIN_KEY_CHARS = 16
"""Shortest snapshot key accepted (``openssl rand -hex 32`` makes one of 64)."""
INSTANCE_ID = re.compile(r"[A-Za-z0-9._-]{1,249}")
"""A worker's ``instance_id``: what Kafka accepts as a ``group.instance.id``."""


class Topics(BaseModel):
    """Topic names; partition counts and retention are documented in the README."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    market_ticks: str = "spotsched.market-ticks"
    job_events: str = "spotsched.job-events"
    decisions: str = "spotsched.decisions"
    forecasts: str = "spotsched.forecasts"
    dead_letters: str = "spotsched.dead-letters"
    market_boundaries: str = "spotsched.market-boundaries"
    market_snapshots: str = "spotsched.snapshots.market"
    coordinator_snapshots: str = "spotsched.snapshots.coordinator"
    scheduler_snapshots: str = "spotsched.snapshots.scheduler"


class Settings(BaseSettings):
    """Everything a worker, the replay producer or a client needs to reach Kafka."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", frozen=True, extra="forbid"
    )

    bootstrap_servers: str = Field("127.0.0.1:9092", description="host:port[,host:port]")
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_cafile: Path | None = None
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    app_id: str = "spotsched"
    topics: Topics = Topics()
    market_partitions: int = Field(4, ge=1, description="Partitions of the market-ticks topic")
    job_partitions: int = Field(
        1, ge=1,
        description="Partitions of job-events and decisions; each plans its jobs on its own",
    )
    slot_seconds: float = Field(SECONDS_PER_HOUR, gt=0, description="Slot length Δ in seconds")
    policy: str = Field(RECOMMENDED,
                        description="Policy spec NAME[:key=value,...] the scheduler runs")
    markets_file: Path | None = Field(
        None, description="JSON catalogue {market key: on-demand USD/h} the scheduler plans over"
    )
    metrics_port: int = Field(0, ge=0, le=65535, description="Port of /metrics; 0 turns it off")
    metrics_host: str = Field(
        "127.0.0.1", min_length=1,
        description="Address /metrics binds to; 0.0.0.0 serves every interface")
    max_future_skew_seconds: float = Field(
        86_400.0, gt=0, le=366 * 86_400.0,
        description="How far ahead of its market's and the stage's event time a tick may be")
    broker_timeout_seconds: float = Field(
        300.0, gt=0,
        description="How long clients wait out an unreachable broker before failing")
    snapshot_every_epochs: int = Field(
        6, ge=1, description="Slots of event time after which a stage's partition is "
        "snapshotted (docs/operations.md)")
    snapshot_every_records: int = Field(
        20_000, ge=1, description="Records after which a stage's partition is snapshotted")
    snapshot_min_interval_seconds: float = Field(
        10.0, ge=0, description="Shortest time between two snapshots of a stage's partition "
        "by its slots of event time while it lags behind its input: a worker catching up on a "
        "backlog snapshots by records")
    snapshot_delay_seconds: float = Field(
        1.0, ge=0, description="How long after the batch that made it due a caught-up stage's "
        "partition is snapshotted by its slots: after the epoch's decisions, not in their way")
    retention_margin_hours: float = Field(
        24.0, ge=0, description="Input kept beyond what the previous snapshot covers, by Kafka "
        "timestamp")
    snapshot_key: SecretStr | None = Field(
        None, description="Key of the snapshots' HMAC, the same on every worker; keys "
        "separated by commas: the first signs, any verifies (docs/operations.md, Trust)")
    insecure_unsigned_snapshots: bool = Field(
        False, description="Run a worker without a snapshot key: its snapshots are written "
        "unsigned and restored unauthenticated, so whoever can write the snapshot topics sets "
        "its stages' state (docs/operations.md, Trust)")
    snapshot_max_bytes: int = Field(
        1024 * 1024 * 1024, ge=1024, description="Most bytes a snapshot's state may inflate to "
        "when restored; a larger one is refused")
    snapshot_max_chunks: int = Field(
        4096, ge=1, description="Most records (of 512 KiB) a snapshot may span on its topic; "
        "a manifest listing more is refused")
    input_retention_hours: float = Field(
        168.0, gt=0, description="retention.ms of the input topics, a bound on their disk "
        "even while snapshots stop")
    session_timeout_seconds: float = Field(
        10.0, ge=1, description="Kafka consumer-group session timeout: how soon a dead "
        "worker's partitions move")
    heartbeat_seconds: float = Field(
        2.0, gt=0, description="Kafka consumer-group heartbeat interval")
    max_poll_interval_seconds: float = Field(
        300.0, gt=0, description="Longest time between two polls before a consumer leaves "
        "its group")
    instance_id: str | None = Field(
        None, description="Static membership of the worker's consumer groups (Kafka's "
        "group.instance.id), unique per worker, e.g. its pod name: restarted with the same id, "
        "a worker takes its partitions straight back instead of waiting out the session "
        "timeout; stopped, it keeps them for the session timeout (docs/operations.md)")
    data_dir: Path = Field(Path(".spotsched"), description="Worker's local state directory")

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        if self.heartbeat_seconds >= self.session_timeout_seconds:
            raise ValueError(
                f"heartbeat_seconds ({env_name('heartbeat_seconds')}) = "
                f"{self.heartbeat_seconds:g}: expected less than session_timeout_seconds "
                f"({self.session_timeout_seconds:g}), a third of it or less")
        if self.input_retention_hours <= self.retention_margin_hours:
            raise ValueError(
                f"input_retention_hours ({env_name('input_retention_hours')}) = "
                f"{self.input_retention_hours:g}: expected more than retention_margin_hours "
                f"({self.retention_margin_hours:g})")
        return self

    @field_validator("snapshot_key", "instance_id", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if value == "" else value  # as a compose file passes an unset variable on

    @field_validator("snapshot_key")
    @classmethod
    def _snapshot_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and any(len(key.strip()) < MIN_KEY_CHARS
                                     for key in value.get_secret_value().split(",")):
            raise ValueError(f"expected keys of at least {MIN_KEY_CHARS} characters, "
                             "separated by commas")
        return value

    @field_validator("bootstrap_servers")
    @classmethod
    def _servers(cls, value: str) -> str:
        servers = [s.strip() for s in value.split(",") if s.strip()]
        if not servers or any(":" not in s for s in servers):
            raise ValueError("expected host:port[,host:port...]")
        return ",".join(servers)

    @field_validator("instance_id")
    @classmethod
    def _instance_id(cls, value: str | None) -> str | None:
        if value is not None and not INSTANCE_ID.fullmatch(value):
            raise ValueError("expected 1 to 249 letters, digits, '.', '_' or '-' (Kafka's "
                             "group.instance.id)")
        return value

    @field_validator("policy")
    @classmethod
    def _policy(cls, value: str) -> str:
        if value == RECOMMENDED:  # the default, a valid spec (tested): no policy loaded
            return value
        from solver.policies import check_spec  # the policies are heavy to import

        return str(check_spec(value, online=True))

    @field_validator("ssl_cafile", "ssl_certfile", "ssl_keyfile")
    @classmethod
    def _readable(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError("expected an existing file (no such file)")
        return value

    def kafka_options(self) -> dict[str, object]:
        """Connection options for aiokafka clients (secrets revealed only here)."""
        options: dict[str, object] = {
            "bootstrap_servers": self.bootstrap_servers,
            "security_protocol": self.security_protocol,
        }
        if self.security_protocol.startswith("SASL"):
            if self.sasl_mechanism is None or self.sasl_username is None:
                raise ValueError(
                    f"security_protocol={self.security_protocol}: expected sasl_mechanism and "
                    "sasl_username (and sasl_password)"
                )
            options["sasl_mechanism"] = self.sasl_mechanism
            options["sasl_plain_username"] = self.sasl_username
            options["sasl_plain_password"] = (
                self.sasl_password.get_secret_value() if self.sasl_password else ""
            )
        if self.security_protocol in ("SSL", "SASL_SSL"):
            options["ssl_context"] = self.ssl_context()
        return options

    def ssl_context(self) -> ssl.SSLContext:
        """The TLS context of SSL and SASL_SSL; a file that cannot be used is named."""
        try:
            context = ssl.create_default_context(
                cafile=str(self.ssl_cafile) if self.ssl_cafile else None)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(_file_problem("ssl_cafile", self.ssl_cafile, exc)) from None
        if self.ssl_certfile:
            try:
                context.load_cert_chain(str(self.ssl_certfile),
                                        str(self.ssl_keyfile) if self.ssl_keyfile else None)
            except (OSError, ssl.SSLError) as exc:
                raise ValueError(
                    _file_problem("ssl_certfile", self.ssl_certfile, exc)) from None
        return context

    def snapshot_keys(self) -> tuple[bytes, ...]:
        """The snapshot keys, the signing one first; none when no key is set and
        ``insecure_unsigned_snapshots`` says to run without one; a ValueError saying what to
        set when neither is set."""
        if self.snapshot_key is None:
            if not self.insecure_unsigned_snapshots:
                raise ValueError(
                    f"snapshot_key ({env_name('snapshot_key')}) is not set: a worker signs its "
                    "snapshots and restores only signed ones; set it to the same secret on "
                    "every worker (openssl rand -hex 32), or run without one with "
                    "--insecure-unsigned-snapshots "
                    f"({env_name('insecure_unsigned_snapshots')}=true), which lets whoever can "
                    "write the snapshot topics set the stages' state")
            return ()
        return tuple(k.strip().encode() for k in self.snapshot_key.get_secret_value().split(","))

    def policy_spec(self) -> PolicySpec:
        """The policy the scheduler runs, as a spec (checked when the settings were read)."""
        from solver.policies import PolicySpec

        return PolicySpec.parse(self.policy)

    def catalogue(self) -> tuple[Market, ...]:
        """The markets the scheduler plans over, in the catalogue file's order."""
        if self.markets_file is None:
            raise ValueError(
                f"{CATALOGUE}: expected a JSON catalogue {{market key: on-demand USD/h}}; write "
                "one with 'spotsched markets --trace PATH > markets.json'"
            )
        return read_catalogue(self.markets_file)


def env_name(field: str) -> str:
    """The environment variable of a setting."""
    return ENV_PREFIX + field.upper()


def _file_problem(field: str, path: Path | None, error: Exception) -> str:
    reason = getattr(error, "strerror", None) or getattr(error, "reason", None) or str(error)
    return (f"{field} ({env_name(field)}) = {str(path)!r}: expected a readable PEM file "
            f"({reason})")


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment with ``overrides`` (given flags) on top; a bad value
    raises a one-line ``ValueError`` naming the setting, its variable and what was expected,
    never a secret."""
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        raise ValueError("; ".join(_describe(error) for error in exc.errors())) from None


def _describe(error: Any) -> str:
    loc = [str(part) for part in error["loc"]]
    field = loc[0] if loc else "settings"
    name = f"{'.'.join(loc) or field} ({env_name('__'.join(loc) or field)})"
    message = str(error["msg"]).removeprefix("Value error, ")
    if not loc:  # a rule between settings: its message names them
        return message
    if message.startswith("Input should be "):
        message = "expected " + message.removeprefix("Input should be ")
    if field in SECRETS or error["type"] == "missing":
        return f"{name}: {message}"
    value = error.get("input")
    shown = str(value) if isinstance(value, Path) else value
    return f"{name} = {shown!r}: {message}"


CATALOGUE = "--markets-file (SPOTSCHED_MARKETS_FILE)"
"""How errors name the market catalogue: as the flag and the variable that give it."""


def read_catalogue(path: Path) -> tuple[Market, ...]:
    """Read ``{market key: on-demand price}``; errors name the file, the key and the value."""
    try:
        document = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(
            f"{CATALOGUE} {path}: expected a readable JSON file ({exc})") from exc
    if not isinstance(document, dict) or not document:
        raise ValueError(
            f"{CATALOGUE} {path}: expected a non-empty JSON object of market key to "
            "on-demand USD/h"
        )
    markets = []
    for key, price in document.items():
        if not isinstance(price, int | float) or isinstance(price, bool):
            raise ValueError(
                f"{CATALOGUE} {path}: market {key!r} on-demand price={price!r}: expected a "
                "number"
            )
        try:
            markets.append(Market.parse_key(key, float(price)))
        except ValueError as exc:
            raise ValueError(f"{CATALOGUE} {path}: {exc}") from None
    return tuple(markets)


def write_catalogue(markets: tuple[Market, ...] | list[Market]) -> str:
    return json.dumps({m.key: m.on_demand_price for m in markets}, indent=2) + "\n"
