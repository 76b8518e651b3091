"""Environment parsed once into a typed settings model."""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import StrEnum
from functools import lru_cache
from typing import Annotated, Any

from pydantic import Field, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, NoDecode, SettingsConfigDict

from nexttick import constants


class Precision(StrEnum):
    """`second`: arm the rule a minute early and wait for the exact instant; `minute`: cheapest."""

    SECOND = "second"
    MINUTE = "minute"


# The settings a deployment chooses (infra/config.py) and the functions read from their environment:
# bounds and defaults defined once, for both.
QueueShards = Annotated[int, Field(ge=1, le=256)]
LeaseSeconds = Annotated[int, Field(ge=5)]
PoolSize = Annotated[int, Field(ge=1, le=512)]
PageSize = Annotated[int, Field(ge=1, le=1000)]
RetentionDays = Annotated[int, Field(ge=1)]
MaxInvocations = Annotated[int, Field(ge=1, le=64)]
# Run records kept per task: one Query reads all of them (500 of about 0.4 KB stay well under the
# 1 MB a Query returns).
RunHistory = Annotated[int, Field(ge=1, le=500)]
DEFAULT_LEASE_SECONDS = 60
DEFAULT_POOL_SIZE = 32
DEFAULT_PAGE_SIZE = 100
DEFAULT_RETENTION_DAYS = 7
DEFAULT_MAX_INVOCATIONS = 4
DEFAULT_RUN_HISTORY = 100


class NextTickSettings(BaseSettings):
    """Runtime configuration, from `NEXTTICK_*` environment variables (and AWS_REGION)."""

    model_config = SettingsConfigDict(env_prefix="NEXTTICK_", extra="ignore", populate_by_name=True)

    table_name: str = Field(default=constants.DEFAULT_TABLE_NAME, alias="NEXTTICK_TABLE")
    rule_name: str = Field(default=constants.DEFAULT_RULE_NAME, alias="NEXTTICK_RULE")
    worker_function: str = Field(
        default=constants.DEFAULT_WORKER_FUNCTION_NAME, alias="NEXTTICK_WORKER_FUNCTION"
    )
    region: str = Field(default=constants.DEFAULT_REGION, alias="AWS_REGION")
    endpoint_url: str | None = Field(default=None, alias="NEXTTICK_ENDPOINT_URL")
    # Lambda Invoke can go to a different endpoint (the local stack runs the worker in-process).
    lambda_endpoint_url: str | None = Field(default=None, alias="NEXTTICK_LAMBDA_ENDPOINT_URL")
    # The SQS queue a waiting worker hands its wait to (unset: it sleeps the whole wait itself).
    handover_queue_url: str | None = Field(default=None, alias="NEXTTICK_HANDOVER_QUEUE_URL")
    # A handed-over wait's message arrives this long before the wake, give or take half a second (SQS
    # delays whole seconds), so its delivery may take that long; every second of it is slept.
    handover_lead_seconds: float = Field(default=1.0, ge=0.5, le=30.0)
    queue_shards: QueueShards = constants.DEFAULT_QUEUE_SHARDS
    precision: Precision = Precision.SECOND
    # Worst-case EventBridge delivery delay we arm ahead for, in `second` mode.
    delivery_margin_seconds: int = Field(default=10, ge=0, le=60)
    # A PutRule for a minute that starts sooner than this is not trusted to take effect.
    settle_seconds: int = Field(default=10, ge=0, le=50)
    # An armed minute older than this while tasks are pending means a worker run was lost.
    stale_after_seconds: int = Field(default=1200, ge=60)
    lease_seconds: LeaseSeconds = DEFAULT_LEASE_SECONDS
    pool_size: PoolSize = DEFAULT_POOL_SIZE
    page_size: PageSize = DEFAULT_PAGE_SIZE
    retention_days: RetentionDays = DEFAULT_RETENTION_DAYS
    # The newest runs kept per task (each attempt of each occurrence is one run record).
    run_history: RunHistory = DEFAULT_RUN_HISTORY
    # Invocations a burst is spread over (the one the rule started and its helpers, each draining
    # its own group of shards); 1 = no fan-out. Bounded by the worker's reserved concurrency.
    max_invocations: MaxInvocations = DEFAULT_MAX_INVOCATIONS
    # Deployment-configured actions (JSON object name -> definition), then NEXTTICK_ACTIONS overrides.
    # NoDecode: our validator parses the JSON, so a malformed value gets an error naming the variable.
    actions_config: Annotated[dict[str, dict[str, Any]], NoDecode] = Field(default_factory=dict)
    actions: Annotated[dict[str, dict[str, Any]], NoDecode] = Field(default_factory=dict)

    @property
    def connection_pool_size(self) -> int:
        """Connections each AWS client keeps open: one per worker pool thread, per parallel shard read
        and for the lease renewer, so no call waits for a connection or opens one it then drops
        (botocore keeps 10 by default; on AWS each new one is a TLS handshake)."""
        return self.pool_size + min(constants.MAX_PARALLEL_SHARD_READS, self.queue_shards) + 1

    @field_validator("actions_config", "actions", mode="before")
    @classmethod
    def _parse_json_object(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str):
            try:
                value = json.loads(value) if value.strip() else {}
            except json.JSONDecodeError as exc:
                variable = f"NEXTTICK_{(info.field_name or '').upper()}"
                raise ValueError(f"{variable} is not valid JSON ({exc})") from exc
        if not isinstance(value, dict):
            raise ValueError("must be a JSON object of action name -> definition")
        return value

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> NextTickSettings:
        """Settings with `environ`'s variables over the process environment's, read under the same
        names by the same source: the CLI points at a local stack without writing into os.environ."""
        source = EnvSettingsSource(cls)
        source.env_vars = {name.lower(): value for name, value in environ.items()}  # case-insensitive
        return cls(**source())

    def action_definitions(self) -> dict[str, dict[str, Any]]:
        """Configured actions with NEXTTICK_ACTIONS applied on top (adds or overrides by name)."""
        merged = {name: dict(defn) for name, defn in self.actions_config.items()}
        merged.update({name: dict(defn) for name, defn in self.actions.items()})
        return merged


@lru_cache(maxsize=1)
def get_settings() -> NextTickSettings:
    """Settings from the process environment, parsed once."""
    return NextTickSettings()
