"""What a newcomer sees when the CLI has nothing to talk to (no local stack, no AWS credentials, a
stopped stack's endpoint): one `error:` line saying what to do, exit 1, never a traceback. The
installed `nexttick` runs in a bare environment, as from a fresh shell."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.aws import FAKE_AWS_ENV

NEXTTICK = Path(sys.executable).parent / "nexttick"


def nexttick(cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed CLI in `cwd`: no NEXTTICK_* or AWS_* variables but `env`, a HOME without
    ~/.aws, and no instance-metadata credential lookups."""
    base = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "AWS_EC2_METADATA_DISABLED": "true"}
    return subprocess.run(
        [str(NEXTTICK), *argv], cwd=cwd, env={**base, **env}, capture_output=True, text=True, timeout=120
    )


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    "argv",
    [("ls",), ("add", "--action", "log", "--in", "5m"), ("show", "t-1"), ("sync",)],
    ids=["ls", "add", "show", "sync"],
)
def test_without_a_local_stack_or_aws_target_the_cli_says_how_to_start_one(
    tmp_path: Path, argv: tuple[str, ...]
) -> None:
    # Given a directory whose local stack stopped cleanly (its local.json removed), and no AWS target
    (tmp_path / ".nexttick").mkdir()
    # When a command runs
    line = one_error_line(nexttick(tmp_path, *argv))
    # Then it says there is no stack and how to start one or reach AWS instead
    assert "no local stack is running in .nexttick" in line
    assert "make run" in line and "--aws" in line


def test_without_a_local_stack_json_errors_are_service_unavailable(tmp_path: Path) -> None:
    # When `ls --json` runs with nothing to talk to
    done = nexttick(tmp_path, "ls", "--json")
    # Then stderr holds one JSON error with the API's code for an unreachable service
    assert done.returncode == 1 and "Traceback" not in done.stderr
    error = json.loads(done.stderr)
    assert error["error"] == "service_unavailable" and "make run" in error["message"]


@pytest.mark.parametrize(
    ("argv", "env"),
    [(("ls", "--aws"), {}), (("ls",), {"NEXTTICK_TABLE": "nexttick-tasks"})],
    ids=["--aws", "NEXTTICK_TABLE"],
)
def test_aws_without_credentials_is_one_line_naming_the_fix(
    tmp_path: Path, argv: tuple[str, ...], env: dict[str, str]
) -> None:
    # Given AWS chosen (by flag, or by a table configured in the environment) but no credentials
    # When `ls` runs
    line = one_error_line(nexttick(tmp_path, *argv, **env))
    # Then it names AWS and the missing credentials, not the local stack
    assert "no local stack" not in line
    assert "AWS (us-east-1)" in line and "credentials" in line and "aws configure" in line


def test_a_stopped_stacks_sourced_env_names_the_endpoint(tmp_path: Path) -> None:
    # Given a shell that sourced .nexttick/env of a stack that has since stopped
    endpoint = f"http://127.0.0.1:{closed_port()}"
    env = {
        **FAKE_AWS_ENV,
        "NEXTTICK_ENDPOINT_URL": endpoint,
        "NEXTTICK_ACTIONS_CONFIG": '{"log": {"type": "log"}}',
    }
    # When commands run against it
    listed = one_error_line(nexttick(tmp_path, "ls", **env))
    added = one_error_line(nexttick(tmp_path, "add", "--action", "log", "--in", "5m", **env))
    as_json = nexttick(tmp_path, "show", "t-1", "--json", **env)
    # Then each says which endpoint did not answer and what to do about it
    for line in (listed, added):
        assert f"cannot connect to {endpoint}" in line and "make run" in line, line
        assert "NEXTTICK_ENDPOINT_URL" in line
    assert as_json.returncode == 1 and "Traceback" not in as_json.stderr
    assert json.loads(as_json.stderr)["error"] == "service_unavailable"
