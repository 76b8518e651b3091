"""Where a task command points, and what to say when it cannot be reached.

Flags (`--endpoint-url`, `--table`, `--rule`, `--worker-function`, `--region`) win, then the
`NEXTTICK_*` / `AWS_*` environment. Without `--endpoint-url`, `--aws` or NEXTTICK_ENDPOINT_URL, a
running local stack recorded in `<state dir>/local.json` (`.nexttick/` by default) is used; with no
stack running, AWS only when the environment names a table (NEXTTICK_TABLE), else an error saying how
to start one. A local stack's variables reach the runtime as its settings and credentials; the
process environment is left as it is, except that a command aimed at a local stack drops any AWS
profile (`AWS_PROFILE`) from it.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING

from nexttick.constants import DEFAULT_REGION

if TYPE_CHECKING:
    import boto3

    from nexttick.runtime import Runtime


class TargetError(Exception):
    """Nothing to talk to: no running local stack (or a dead one) and no AWS target chosen. Reported
    like a failed AWS call: one line saying what to do (`--json`: `service_unavailable`)."""


_START_HINT = "start it with `make run`, or pass --aws"


def local_stack_environment(
    environ: Mapping[str, str], *, endpoint_url: str | None, aws: bool, state_dir: str | None
) -> dict[str, str] | None:
    """The environment of a running local stack (from its `local.json`) to run the editor with, or
    None to use the environment as it is: with `--aws`, `--endpoint-url` or NEXTTICK_ENDPOINT_URL,
    or a table named by NEXTTICK_TABLE. TargetError otherwise: without a stack a newcomer's command
    would reach for AWS credentials they do not have."""
    from local import endpoints
    from local.options import state_dir_from

    if aws or endpoint_url or environ.get("NEXTTICK_ENDPOINT_URL"):
        return None
    directory = state_dir_from(environ, state_dir)
    try:
        info = endpoints.read(directory)
    except endpoints.StaleLocalStack as exc:
        raise TargetError(f"{exc}; {_START_HINT}") from None
    if info is not None:
        return dict(info["env"])
    if environ.get("NEXTTICK_TABLE"):
        return None
    raise TargetError(f"no local stack is running in {directory}; {_START_HINT}")


def describe_aws_failure(
    exc: Exception, *, endpoint_flag: str | None, region_flag: str | None, environ: Mapping[str, str]
) -> str | None:
    """One line for a failed AWS call - where it went, what failed, what to do - or None when `exc`
    is no AWS failure (a bug, which keeps its traceback)."""
    from botocore.exceptions import ClientError, NoCredentialsError, ReadTimeoutError
    from botocore.exceptions import ConnectionError as AwsConnectionError

    from nexttick.store import AWS_FAILURES, aws_cause

    cause = aws_cause(exc)
    if not isinstance(cause, AWS_FAILURES):
        return None
    endpoint = endpoint_flag or environ.get("NEXTTICK_ENDPOINT_URL")
    region = region_flag or environ.get("AWS_REGION") or DEFAULT_REGION
    target = endpoint or f"AWS ({region})"
    if isinstance(cause, AwsConnectionError | ReadTimeoutError):
        url = cause.kwargs.get("endpoint_url") or target
        if endpoint_flag:
            return f"cannot connect to {url}; check --endpoint-url"
        if endpoint:
            return (
                f"cannot connect to {url}: no local stack answers there; start it with `make run`, "
                "or unset NEXTTICK_ENDPOINT_URL (a sourced .nexttick/env of a stopped stack sets it)"
            )
        return f"cannot connect to {url}; check your network and AWS_REGION"
    if isinstance(cause, NoCredentialsError):
        return (
            f"{target}: no AWS credentials found; configure them (`aws configure`, AWS_PROFILE), "
            "or start the local stack with `make run`"
        )
    if isinstance(cause, ClientError):
        error = cause.response.get("Error", {})
        return (
            f"{target} refused the call ({error.get('Code')}: {error.get('Message')}); check the "
            "names (--table, --rule, --worker-function or NEXTTICK_*) and your credentials' permissions"
        )
    return f"AWS call to {target} failed: {cause}"


def _local_stack_session(local: Mapping[str, str]) -> boto3.Session:
    """A session with the local stack's fake credentials, whatever credentials the shell holds."""
    import boto3

    return boto3.session.Session(
        aws_access_key_id=local.get("AWS_ACCESS_KEY_ID"),
        aws_secret_access_key=local.get("AWS_SECRET_ACCESS_KEY"),
        aws_session_token=local.get("AWS_SESSION_TOKEN"),
    )


class Target:
    """A command's target: its flags and the environment it started in, then, once the command
    needs it, a running local stack's variables over that environment."""

    def __init__(self, args: argparse.Namespace, environ: Mapping[str, str]) -> None:
        self.endpoint_url: str | None = getattr(args, "endpoint_url", None)
        self.region: str | None = getattr(args, "region", None)
        self.aws: bool = getattr(args, "aws", False)
        self.state_dir: str | None = getattr(args, "state_dir", None)
        flagged = {
            "table_name": getattr(args, "table", None),
            "rule_name": getattr(args, "rule", None),
            "worker_function": getattr(args, "worker_function", None),
            "region": self.region,
            "endpoint_url": self.endpoint_url,
        }
        self.settings_flags = {name: value for name, value in flagged.items() if value is not None}
        self.shell_environ = environ
        # What the command's calls go to: the shell's environment until runtime() finds a local stack.
        self.environ: Mapping[str, str] = environ

    def runtime(self) -> Runtime:
        """Store, rule, trigger and rule sync for this target. The local stack is looked up here, not
        when the command starts: a command's own mistakes are reported before a missing stack."""
        from local.options import drop_profile
        from nexttick.config import NextTickSettings
        from nexttick.runtime import Runtime

        local = local_stack_environment(
            self.shell_environ, endpoint_url=self.endpoint_url, aws=self.aws, state_dir=self.state_dir
        )
        if local is not None:
            drop_profile()
        self.environ = self.shell_environ if local is None else {**self.shell_environ, **local}
        settings = NextTickSettings.from_environ(self.environ).model_copy(update=self.settings_flags)
        return Runtime.build(settings, session=None if local is None else _local_stack_session(local))

    def describe_failure(self, exc: Exception) -> str | None:
        """`describe_aws_failure` for a call to this target."""
        return describe_aws_failure(
            exc, endpoint_flag=self.endpoint_url, region_flag=self.region, environ=self.environ
        )
