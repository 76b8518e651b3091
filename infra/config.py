"""Deployment configuration: a JSON file (default `nexttick.config.json`) plus CDK context overrides."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from infra import names
from infra.permissions import ACTION_KINDS, action_grant
from nexttick import config, constants
from nexttick.actions.webhook import DEFAULT_WEBHOOK_ALLOWLIST, url_allowed
from nexttick.config import Precision

# CloudWatch Logs accepts only these retention periods (days).
_LOG_RETENTION_DAYS = {1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 3653}


class ConfigError(ValueError):
    """Invalid deployment configuration; the message names the offending field."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


class CapacityRange(BaseModel):
    """Bounds of one provisioned capacity (units per second) that auto scaling moves between."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min: int = Field(ge=1, le=40_000)
    max: int = Field(ge=1, le=40_000)

    @model_validator(mode="after")
    def _ordered(self) -> CapacityRange:
        if self.max < self.min:
            raise ValueError("max must be at least min")
        return self


class InfraConfig(BaseModel):
    """Everything a deployment can choose. Defaults give the names in nexttick.constants."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prefix: str = Field(default=names.DEFAULT_PREFIX, pattern=r"^[a-z][a-z0-9-]{0,30}$")
    stack_name: str = Field(default=names.DEFAULT_STACK_NAME, pattern=r"^[A-Za-z][A-Za-z0-9-]{0,127}$")
    precision: Precision = Precision.SECOND
    # Part of the data layout: changing it on a live table strands queue entries.
    queue_shards: config.QueueShards = constants.DEFAULT_QUEUE_SHARDS
    pool_size: config.PoolSize = config.DEFAULT_POOL_SIZE
    page_size: config.PageSize = config.DEFAULT_PAGE_SIZE
    lease_seconds: config.LeaseSeconds = config.DEFAULT_LEASE_SECONDS
    retention_days: config.RetentionDays = config.DEFAULT_RETENTION_DAYS
    run_history: config.RunHistory = config.DEFAULT_RUN_HISTORY
    max_invocations: config.MaxInvocations = config.DEFAULT_MAX_INVOCATIONS
    # Bounds DynamoDB load from overlapping runs and a burst's fan-out; None = unreserved (account pool).
    reserved_concurrency: int | None = Field(default=10, ge=1)
    worker_memory_mb: int = Field(default=512, ge=128, le=10240)
    api_memory_mb: int = Field(default=512, ge=128, le=10240)
    architecture: Literal["arm64", "x86_64"] = "arm64"
    # The table's capacity: on demand, or provisioned with target-tracking auto scaling of reads and
    # writes between the ranges below (cheaper at a steady load: bench/REPORT.md, cost section).
    capacity: Literal["on_demand", "provisioned"] = "on_demand"
    read_capacity: CapacityRange = CapacityRange(min=5, max=500)
    write_capacity: CapacityRange = CapacityRange(min=5, max=500)
    capacity_target_utilization: int = Field(default=70, ge=20, le=90)
    log_retention_days: int = 30
    # X-Ray active tracing of the functions and the API stage. Off by default: the X-Ray SDK adds
    # about 0.2 s to every cold start, and a worker woken every few seconds pays per recorded trace.
    tracing: bool = False
    api_throttle_rate: float = Field(default=50, gt=0)
    api_throttle_burst: int = Field(default=100, ge=1)
    # Lateness p99 alarm threshold; default depends on the precision mode.
    lateness_alarm_ms: int | None = Field(default=None, ge=1)
    alarm_email: str | None = Field(default=None, pattern=r"^[^@\s]+@[^@\s]+$")
    actions: dict[str, dict[str, Any]] = Field(default_factory=lambda: {"log": {"type": "log"}})
    webhook_allowlist: list[str] = Field(default_factory=lambda: list(DEFAULT_WEBHOOK_ALLOWLIST))

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, value: int) -> int:
        if value not in _LOG_RETENTION_DAYS:
            raise ValueError(f"must be one of {sorted(_LOG_RETENTION_DAYS)}")
        return value

    @field_validator("actions")
    @classmethod
    def _actions(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for name, definition in value.items():
            kind = definition.get("type") if isinstance(definition, dict) else None
            if kind not in ACTION_KINDS:
                raise ValueError(f"{name}.type must be one of {sorted(ACTION_KINDS)}")
            action_grant(name, definition, lambda service, resource: f"arn:aws:{service}:::{resource}")
        return value

    @model_validator(mode="after")
    def _webhooks_allowed(self) -> InfraConfig:
        for name, definition in self.actions.items():
            url = definition.get("url")
            if definition["type"] == "webhook" and not (
                isinstance(url, str) and url_allowed(url, self.webhook_allowlist)
            ):
                raise ValueError(f"actions.{name}.url is not covered by webhook_allowlist")
        return self

    @model_validator(mode="after")
    def _fan_out_fits(self) -> InfraConfig:
        # The rule's invocation, its helpers, and one more (a wake or a continuation) run at once.
        if self.reserved_concurrency is not None and self.max_invocations + 1 > self.reserved_concurrency:
            raise ValueError("max_invocations must be below reserved_concurrency (a burst and one wake)")
        return self

    @property
    def resource_names(self) -> names.ResourceNames:
        return names.ResourceNames(self.prefix)

    @property
    def worker_timeout_seconds(self) -> int:
        """`second` mode waits up to ~2.5 min for the due instant inside one invocation."""
        return 300 if self.precision is Precision.SECOND else 180

    @property
    def lateness_threshold_ms(self) -> int:
        if self.lateness_alarm_ms is not None:
            return self.lateness_alarm_ms
        return 2_000 if self.precision is Precision.SECOND else 90_000

    def runtime_environment(self) -> dict[str, str]:
        """The NEXTTICK_* environment both functions get (parsed by nexttick.config.NextTickSettings)."""
        n = self.resource_names
        return {
            "NEXTTICK_TABLE": n.table,
            "NEXTTICK_RULE": n.rule,
            "NEXTTICK_WORKER_FUNCTION": n.worker_function,
            "NEXTTICK_PRECISION": self.precision.value,
            "NEXTTICK_QUEUE_SHARDS": str(self.queue_shards),
            "NEXTTICK_POOL_SIZE": str(self.pool_size),
            "NEXTTICK_PAGE_SIZE": str(self.page_size),
            "NEXTTICK_LEASE_SECONDS": str(self.lease_seconds),
            "NEXTTICK_RETENTION_DAYS": str(self.retention_days),
            "NEXTTICK_RUN_HISTORY": str(self.run_history),
            "NEXTTICK_MAX_INVOCATIONS": str(self.max_invocations),
            "NEXTTICK_ACTIONS_CONFIG": json.dumps(self.actions, sort_keys=True, separators=(",", ":")),
            "NEXTTICK_WEBHOOK_ALLOWLIST": ",".join(self.webhook_allowlist),
            "POWERTOOLS_SERVICE_NAME": names.SERVICE_NAME,
            "POWERTOOLS_TRACE_DISABLED": "false" if self.tracing else "true",
            "POWERTOOLS_METRICS_NAMESPACE": names.METRICS_NAMESPACE,
        }


def _context_value(raw: Any) -> Any:
    """`-c key=value` arrives as a string; JSON-looking strings (objects, lists) are decoded."""
    if isinstance(raw, str) and raw.strip()[:1] in "{[":
        return json.loads(raw)
    return raw


def load_config(context: Mapping[str, Any], root: Path) -> InfraConfig:
    """File (context `nexttick:config`, default nexttick.config.json; optional), then the context
    object `nexttick` (cdk.json), then single keys `-c nexttick:<field>=value` — later wins."""
    values: dict[str, Any] = {}
    path = root / str(context.get(names.CONTEXT_CONFIG_FILE) or names.CONFIG_FILE)
    if path.is_file():
        loaded = json.loads(path.read_text())
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path.name}: must be a JSON object", field=path.name)
        values.update(loaded)
    overrides = _context_value(context.get(names.CONTEXT_OVERRIDES) or {})
    if not isinstance(overrides, dict):
        raise ConfigError("context 'nexttick' must be an object", field=names.CONTEXT_OVERRIDES)
    values.update(overrides)
    for field in InfraConfig.model_fields:
        key = f"{names.CONTEXT_OVERRIDES}:{field}"
        if key in context:
            values[field] = _context_value(context[key])
    try:
        return InfraConfig.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "config"
        raise ConfigError(f"{field}: {first['msg']}", field=field) from exc
