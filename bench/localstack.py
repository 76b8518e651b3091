"""End-to-end harness: `nexttick local` as a subprocess (as a user starts it), the CLI as
subprocesses, and a loopback webhook receiver that records every delivery."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import requests

from local.lambdas import LocalHTTPServer
from local.options import EMULATOR_CREDENTIALS

REPO = Path(__file__).resolve().parents[1]
# The console script `make` installs into .venv: the stack and the CLI start the way a user starts them.
NEXTTICK = str(Path(sys.executable).parent / "nexttick")


def parse_time(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Delivery:
    received_at: float
    status: int  # what the receiver answered
    body: dict[str, Any]
    idempotency_header: str | None

    @property
    def key(self) -> str:
        return str(self.body["idempotency_key"])

    @property
    def task_id(self) -> str:
        return str(self.body["task_id"])

    @property
    def lateness(self) -> float:
        return self.received_at - parse_time(self.body["scheduled_for"])


class Receiver(LocalHTTPServer):
    """POST /hook: records the delivery; answers 500 to the first attempt of a payload with
    `fail_first`, 200 otherwise. (A burst's deliveries connect all at once: socketserver's backlog
    of 5 reset some, and the worker rightly retried them seconds later; LocalHTTPServer's takes them.)"""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _ReceiverHandler)
        self.deliveries: list[Delivery] = []
        self.changed = threading.Condition()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"

    def record(self, body: dict[str, Any], header: str | None) -> int:
        with self.changed:
            seen = any(d.key == body.get("idempotency_key") for d in self.deliveries)
            status = 500 if body.get("payload", {}).get("fail_first") and not seen else 200
            self.deliveries.append(Delivery(time.time(), status, body, header))
            self.changed.notify_all()
            return status

    def of(self, task_id: str) -> list[Delivery]:
        with self.changed:
            return [d for d in self.deliveries if d.task_id == task_id]

    def wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(predicate, timeout)

    def wait_for(self, task_id: str, count: int, timeout: float) -> list[Delivery]:
        self.wait_until(lambda: len([d for d in self.deliveries if d.task_id == task_id]) >= count, timeout)
        return self.of(task_id)


class _ReceiverHandler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status = self.server.record(json.loads(raw), self.headers.get("Idempotency-Key"))
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None


def stack_environment(state_dir: Path, *, hook_url: str | None = None, **settings: str) -> dict[str, str]:
    """The environment of a shell that runs `nexttick local`: nothing of ours (NEXTTICK_, AWS_,
    POWERTOOLS_), any free port (the harness reads the URL from local.json), `state_dir`, and with
    `hook_url` a webhook action named `hook`; `settings` on top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTTICK_", "AWS_", "POWERTOOLS_"))}
    env.update(NEXTTICK_PORT="0", NEXTTICK_STATE_DIR=str(state_dir), PYTHONPATH=str(REPO))
    if hook_url is not None:
        env["NEXTTICK_ACTIONS"] = json.dumps({"hook": {"type": "webhook", "url": hook_url}})
    env.update(settings)
    return env


def run_cli(*args: str, cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """`nexttick <args> --json` run in `cwd` with exactly `env`; its JSON answer (it must succeed)."""
    done = subprocess.run(
        [NEXTTICK, *args, "--json"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


class LocalStackProcess:
    """`nexttick local` in a subprocess with its own ports and state directory."""

    def __init__(self, state_dir: Path, env: dict[str, str], log: Path, flags: Sequence[str] = ()) -> None:
        self.state_dir = state_dir
        self.env = env
        self.log = log
        self.flags = list(flags)  # extra `nexttick local` flags
        self.api_url = ""  # read from local.json after each start (the stack binds a free port)
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 300.0) -> LocalStackProcess:
        handle = self.log.open("ab")
        self.process = subprocess.Popen(
            [NEXTTICK, "local", *self.flags],
            cwd=REPO,
            env=self.env,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(
                    f"nexttick local exited {self.process.returncode}:\n{self.output()[-4000:]}"
                )
            try:
                info = json.loads((self.state_dir / "local.json").read_text())
                if info["pid"] == self.process.pid:
                    self.api_url = info["api_url"]
                    if requests.get(f"{self.api_url}/health", timeout=2).status_code == 200:
                        return self
            except (OSError, ValueError, KeyError, requests.RequestException):
                pass
            time.sleep(0.25)
        raise AssertionError(f"nexttick local did not become healthy:\n{self.output()[-4000:]}")

    def stop(self, timeout: float = 60.0) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    # ------------------------------------------------------------------ clients
    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        response = requests.post(f"{self.api_url}/tasks", json=body, timeout=30)
        assert response.status_code == 201, response.text
        result: dict[str, Any] = response.json()
        return result

    def get(self, task_id: str) -> dict[str, Any]:
        response = requests.get(f"{self.api_url}/tasks/{task_id}", timeout=30)
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result

    def cli(self, *args: str) -> dict[str, Any]:
        """`nexttick <args> --json`, found through the stack's local.json as a user's shell would."""
        env = {k: v for k, v in self.env.items() if not k.startswith("NEXTTICK_")}
        env["NEXTTICK_STATE_DIR"] = self.env["NEXTTICK_STATE_DIR"]
        return run_cli(*args, cwd=REPO, env=env)

    def rule_expression(self) -> str:
        import boto3

        info = json.loads((self.state_dir / "local.json").read_text())
        session = boto3.session.Session(
            aws_access_key_id=EMULATOR_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=EMULATOR_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name=info["region"],
        )
        events = session.client("events", endpoint_url=info["endpoint_url"])
        return str(events.describe_rule(Name=info["rule"])["ScheduleExpression"])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu(pid: int, seconds: float = 10.0, *, windows: int = 3, enough: float = 0.0) -> float:
    """Share of a core an idle process uses: after its first quiet second (at most 30 s, so a
    start-up's own work has ended), the least of up to `windows` windows of `seconds`, stopping at
    the first at or under `enough`.

    The least, not the mean: the CPU time charged to a process rises with what else the machine
    runs (a busy 2-core machine charged the idle local stack 1.1 % of a core where a quiet one
    charged it 0.1-0.4 %, for the same ten wake-ups a second), and never falls below what the
    process itself does, so a polling loop shows in every window."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        before = cpu_seconds(pid)
        time.sleep(1)
        if cpu_seconds(pid) - before < 0.005:
            break
    shares = []
    for _ in range(windows):
        before, started = cpu_seconds(pid), time.monotonic()
        time.sleep(seconds)
        shares.append((cpu_seconds(pid) - before) / (time.monotonic() - started))
        if shares[-1] <= enough:
            break
    return min(shares)


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]
