"""What `nexttick local` prints, started from the installed entry point as a user starts it: short
human lines by default, the handlers' Powertools JSON with `--log-format json`, metric lines only
with `--metrics`."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

pytestmark = [pytest.mark.xdist_group("local-stack-e2e"), pytest.mark.slow]

ENTRY_POINT = Path(sys.executable).parent / "nexttick"
PAYLOAD = {"from": "the e2e log test"}  # not in the banner's example
MAX_LINE = 300
START_SECONDS = 300.0  # the first start may synthesize the CDK app's template
DELIVERY_SECONDS = 60.0


def run_stack(tmp_path: Path, *flags: str, delivered: str) -> list[str]:
    """Start the stack, schedule a log task 1 s ahead, wait until the output contains `delivered`,
    stop it with Ctrl-C; its output lines."""
    state_dir, output = tmp_path / "state", tmp_path / "output.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTTICK_", "AWS_", "POWERTOOLS_"))}
    command = [str(ENTRY_POINT), "local", "--port", "0", "--fresh", "--state-dir", str(state_dir), *flags]
    with output.open("wb") as sink:
        process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=sink, stderr=subprocess.STDOUT)
    try:
        api = _wait_healthy(process, state_dir, output)
        response = requests.post(
            f"{api}/tasks", json={"action": "log", "delay_seconds": 1, "payload": PAYLOAD}, timeout=30
        )
        assert response.status_code == 201, response.text
        deadline = time.monotonic() + DELIVERY_SECONDS
        while delivered not in output.read_text(errors="replace"):
            assert time.monotonic() < deadline, output.read_text(errors="replace")[-4000:]
            time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        assert process.wait(60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    return output.read_text(errors="replace").splitlines()


def _wait_healthy(process: subprocess.Popen[bytes], state_dir: Path, output: Path) -> str:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        assert process.poll() is None, output.read_text(errors="replace")[-4000:]
        try:
            api = str(json.loads((state_dir / "local.json").read_text())["api_url"])
            if requests.get(f"{api}/health", timeout=2).status_code == 200:
                return api
        except (OSError, ValueError, KeyError, requests.RequestException):
            pass
        time.sleep(0.25)
    raise AssertionError(
        f"nexttick local did not become healthy:\n{output.read_text(errors='replace')[-4000:]}"
    )


def test_by_default_the_stack_prints_short_human_lines(tmp_path: Path) -> None:
    # Given the stack as `nexttick local` starts it, When a log task is delivered
    lines = run_stack(tmp_path, delivered=json.dumps(PAYLOAD))
    # Then its delivery is one human line with the payload, and the API request is one too
    payload = re.escape(json.dumps(PAYLOAD))
    assert [
        line
        for line in lines
        if re.fullmatch(rf"\d\d:\d\d:\d\d\.\d{{3}} delivered \w+ \(log\) [+-]\d+ ms  {payload}", line)
    ], lines
    assert [
        line for line in lines if re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3} api POST /tasks 201 \d+ ms", line)
    ], lines
    # And no line is a wall of JSON or a metric blob
    assert not [line for line in lines if len(line) > MAX_LINE]
    assert not [line for line in lines if '"_aws"' in line]


def test_with_log_format_json_the_handlers_print_powertools_json_and_metrics_when_asked(
    tmp_path: Path,
) -> None:
    # Given the stack with the handlers' JSON logs and their metrics
    lines = run_stack(tmp_path, "--log-format", "json", "--metrics", delivered='"task delivered"')
    # When the log task was delivered, Then the lines are Powertools JSON, each under its function
    records = [json.loads(line) for line in lines if line.startswith("{")]
    [delivered] = [r for r in records if r.get("message") == "task delivered"]
    assert delivered["function_name"] == "nexttick-worker" and delivered["delivery"]["payload"] == PAYLOAD
    [created] = [r for r in records if r.get("message") == "api request" and r["method"] == "POST"]
    assert created["function_name"] == "nexttick-api" and created["status"] == 201
    # And the metrics were printed as CloudWatch EMF
    assert [r for r in records if "_aws" in r]
