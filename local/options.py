"""Options of the local stack, from flags and `NEXTTICK_*` environment variables (flags win)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_API_PORT = 8000
DEFAULT_STATE_DIR = ".nexttick"
DEFAULT_WORKER_TIMEOUT_SECONDS = 300
DEFAULT_CONCURRENCY = 10
# What the local stack offers out of the box: a `log` action; webhooks only to loopback.
DEFAULT_ACTIONS_CONFIG: dict[str, dict[str, Any]] = {"log": {"type": "log"}}
DEFAULT_WEBHOOK_ALLOWLIST = "http://127.0.0.1,http://localhost"
# human: one line per event for a person; json: the handlers' Powertools JSON, as in Lambda.
LOG_FORMATS = ("human", "json")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")
# Each port the stack listens on, and how a user sets it (named in errors).
PORT_SETTINGS = {
    "api_port": "NEXTTICK_PORT / --port",
    "moto_port": "NEXTTICK_MOTO_PORT / --moto-port",
    "lambda_port": "NEXTTICK_LAMBDA_PORT",
}
# Credentials for the emulator only: nothing using them can reach real AWS.
EMULATOR_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}
# The variables naming an AWS profile. Whatever talks to the emulator drops them from its process:
# botocore fails every call when one names a profile this machine lacks, and pynamodb builds its own
# sessions from the process environment.
PROFILE_VARIABLES = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE")


def drop_profile() -> None:
    """This process talks to the emulator only: no AWS profile applies to it."""
    for name in PROFILE_VARIABLES:
        os.environ.pop(name, None)


def state_dir_from(environ: Mapping[str, str], flag: str | None = None) -> Path:
    """The local stack's directory: `--state-dir`, else NEXTTICK_STATE_DIR, else ./.nexttick."""
    return Path(flag or environ.get("NEXTTICK_STATE_DIR") or DEFAULT_STATE_DIR)


def _int(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"error: {name} must be an integer, got {raw!r}") from None


def _switch(environ: Mapping[str, str], name: str) -> bool:
    raw = environ.get(name, "").strip().lower()
    if raw not in _TRUE + _FALSE:
        raise SystemExit(f"error: {name} must be 1 or 0, got {raw!r}")
    return raw in _TRUE


def _float(environ: Mapping[str, str], name: str, default: float) -> float:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise SystemExit(f"error: {name} must be a number, got {raw!r}") from None


@dataclass
class LocalOptions:
    """How `nexttick local` runs. Every field has an environment variable (README, "Local stack")."""

    api_port: int = DEFAULT_API_PORT  # NEXTTICK_PORT (0 = any free port)
    moto_port: int = DEFAULT_API_PORT + 1  # NEXTTICK_MOTO_PORT (0 = any free port)
    lambda_port: int = DEFAULT_API_PORT + 2  # NEXTTICK_LAMBDA_PORT (0 = any free port)
    state_dir: Path = field(default_factory=lambda: Path(DEFAULT_STATE_DIR))  # NEXTTICK_STATE_DIR
    restore: bool = True  # --fresh / NEXTTICK_FRESH=1 starts empty
    jitter: bool = True  # NEXTTICK_EMULATOR_JITTER=0: fire at second 0, no delivery delay
    max_delivery_delay: float = 5.0  # NEXTTICK_EMULATOR_MAX_DELAY (uniform 0..max when jitter is on)
    worker_timeout: int | None = None  # NEXTTICK_WORKER_TIMEOUT; default: the deployed function's
    stop_grace: float = 5.0  # NEXTTICK_STOP_GRACE: seconds a stop waits for deliveries in flight
    concurrency: int | None = None  # NEXTTICK_LOCAL_CONCURRENCY; default: the worker's reserved concurrency
    region: str = "us-east-1"  # AWS_REGION
    log_format: str = "human"  # NEXTTICK_LOG_FORMAT: human | json
    metrics: bool = False  # NEXTTICK_LOCAL_METRICS=1: the handlers print their EMF metric lines

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **flags: Any) -> LocalOptions:
        """Options from the environment; keyword arguments that are not None (flags) win."""
        env = os.environ if environ is None else environ
        options = cls(
            api_port=_int(env, "NEXTTICK_PORT", DEFAULT_API_PORT),
            moto_port=_int(env, "NEXTTICK_MOTO_PORT", -1),
            lambda_port=_int(env, "NEXTTICK_LAMBDA_PORT", -1),
            state_dir=state_dir_from(env),
            restore=env.get("NEXTTICK_FRESH", "").strip().lower() not in ("1", "true", "yes"),
            jitter=env.get("NEXTTICK_EMULATOR_JITTER", "1").strip().lower() not in ("0", "false", "no"),
            max_delivery_delay=_float(env, "NEXTTICK_EMULATOR_MAX_DELAY", 5.0),
            worker_timeout=_int(env, "NEXTTICK_WORKER_TIMEOUT", 0) or None,
            stop_grace=_float(env, "NEXTTICK_STOP_GRACE", 5.0),
            concurrency=_int(env, "NEXTTICK_LOCAL_CONCURRENCY", 0) or None,
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
            log_format=env.get("NEXTTICK_LOG_FORMAT", "").strip().lower() or "human",
            metrics=_switch(env, "NEXTTICK_LOCAL_METRICS"),
        )
        for name, value in flags.items():
            if value is not None:
                setattr(options, name, Path(value) if name == "state_dir" else value)
        # Unset, the emulator's and the Invoke endpoint's ports follow the API port, so the URLs in
        # `.nexttick/env` stay valid across restarts; with an API on any free port (0) they are free too.
        for name, offset in (("moto_port", 1), ("lambda_port", 2)):
            if getattr(options, name) < 0:
                setattr(options, name, options.api_port + offset if options.api_port else 0)
        for name, setting in PORT_SETTINGS.items():
            if not 0 <= getattr(options, name) <= 65535:
                raise SystemExit(f"error: {setting} must be a port (0-65535, 0 = any free one)")
        if options.log_format not in LOG_FORMATS:
            raise SystemExit(
                f"error: NEXTTICK_LOG_FORMAT / --log-format must be human or json, got {options.log_format!r}"
            )
        if options.max_delivery_delay < 0 or (options.concurrency is not None and options.concurrency < 1):
            raise SystemExit("error: delivery delay must be >= 0 and concurrency >= 1")
        if options.stop_grace < 0:
            raise SystemExit("error: NEXTTICK_STOP_GRACE / --stop-grace must be >= 0 seconds")
        return options


def handler_environment(
    options: LocalOptions,
    *,
    moto_url: str,
    lambda_url: str,
    names: Mapping[str, str],
    function_env: Mapping[str, str],
    environ: Mapping[str, str],
) -> dict[str, str]:
    """The environment the in-process handlers (and the CLI, via local.json) run with.

    Layers: the worker's environment as the CDK app configures it, then the user's `NEXTTICK_*`
    variables (NEXTTICK_ACTIONS adds to / overrides the actions), then what the local stack forces:
    fake credentials and the emulator's endpoints and names, so nothing may reach real AWS, and
    Powertools metrics off unless asked for (`metrics`). Actions default to `log`; webhooks default
    to loopback only."""
    env = dict(function_env)
    env.update({k: v for k, v in environ.items() if k.startswith("NEXTTICK_")})
    if not env.get("NEXTTICK_ACTIONS_CONFIG"):
        env["NEXTTICK_ACTIONS_CONFIG"] = json.dumps(DEFAULT_ACTIONS_CONFIG)
    if not env.get("NEXTTICK_WEBHOOK_ALLOWLIST"):
        env["NEXTTICK_WEBHOOK_ALLOWLIST"] = DEFAULT_WEBHOOK_ALLOWLIST
    env.update(
        {
            **EMULATOR_CREDENTIALS,
            "AWS_REGION": options.region,
            "AWS_DEFAULT_REGION": options.region,
            "NEXTTICK_ENDPOINT_URL": moto_url,
            "NEXTTICK_LAMBDA_ENDPOINT_URL": lambda_url,
            "NEXTTICK_TABLE": names["table"],
            "NEXTTICK_RULE": names["rule"],
            "NEXTTICK_WORKER_FUNCTION": names["worker_function"],
            "POWERTOOLS_METRICS_DISABLED": "false" if options.metrics else "true",
        }
    )
    return env
