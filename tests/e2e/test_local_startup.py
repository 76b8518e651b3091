"""End to end: how `nexttick local` starts and stops, run as a user runs it (the installed entry
point, from the repository root, each test on its own `--state-dir`).

A start that cannot work is refused with one `error:` line and an exit code before it touches
anything: a second stack on the same state directory (4), a busy port named by its setting (3),
invalid NEXTTICK_ACTIONS (2). A start that works prints its progress, then a banner listing the
actions. Ctrl-C does not wait for a worker invocation that only sleeps for a due instant, and the
next start delivers that task on time; a second Ctrl-C says what the stop waits for. Unset, the
emulator's and the Lambda endpoint's ports follow `--port`, so a sourced `.nexttick/env` stays valid
across a restart.

Every test fails on the stack before e055862; each docstring says how (checked by running this file
with pytest in a worktree of e055862^ on PYTHONPATH: the stacks run with PYTHONPATH=REPO).
"""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from bench.localstack import NEXTTICK, REPO, LocalStackProcess, Receiver, parse_time, run_cli
from tests.support.slow_receiver import SlowReceiver

pytestmark = [pytest.mark.xdist_group("local-startup-e2e"), pytest.mark.slow]

START_SECONDS = 300.0  # the first start may synthesize the CDK app's template
REFUSAL_SECONDS = 30.0  # a refused start exits within this (a refused start once hung on shutdown)
STOP_SECONDS = 60.0
# Ctrl-C with only a sleeping worker, under a stop grace far above any stop's own work, so waiting
# for the sleeper (the defect before e055862) cannot pass for a slow machine: ~1 s idle, 4.3 s seen
# on a busy 2-core CI runner.
SLEEPING_STOP_GRACE = 120.0
SLEEPING_STOP_SECONDS = 30.0
ON_TIME_SECONDS = 2.0  # lateness of a delivery after a restart (before e055862: up to ~70 s)
# seconds: beyond a stop and a start even on a busy machine (a run of the suite beside a profiler took
# 29 s from the create to the restart's banner), inside the worker's wait horizon (armed a minute early)
DUE_AFTER_RESTART = 50.0
SLOW_ANSWER_SECONDS = 4.0  # the slow webhook receiver holds each delivery this long
# Fixed ports come from below Linux's ephemeral range (32768-60999), so a stack started elsewhere on
# `--port 0` (the other e2e tests) cannot take one between the check and the start.
FIXED_PORTS = range(20000, 30000)


# ---------------------------------------------------------------------- helpers


def _environment(actions: dict[str, Any] | str | None = None) -> dict[str, str]:
    """The user's environment without nexttick or AWS settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTTICK_", "AWS_", "POWERTOOLS_"))}
    if actions is not None:
        env["NEXTTICK_ACTIONS"] = actions if isinstance(actions, str) else json.dumps(actions)
    return env


class Stack(LocalStackProcess):
    """`nexttick local <flags>` on its own state directory (the harness' process, with flags)."""

    def __init__(self, tmp_path: Path, *flags: str, actions: dict[str, Any] | None = None) -> None:
        state_dir = tmp_path / "state"
        env = {**_environment(actions), "NEXTTICK_STATE_DIR": str(state_dir)}
        super().__init__(state_dir, env, tmp_path / "stack.log", flags)

    def start(self, timeout: float = START_SECONDS) -> Stack:
        super().start(timeout)
        return self

    def interrupt(
        self, sig: signal.Signals = signal.SIGINT, timeout: float = STOP_SECONDS
    ) -> tuple[int, float]:
        """Send `sig` (Ctrl-C by default); the exit status and the seconds the stop took."""
        assert self.process is not None
        sent = time.monotonic()
        self.process.send_signal(sig)
        code = self.process.wait(timeout)
        return code, time.monotonic() - sent

    def lines(self) -> list[str]:
        return self.output().splitlines()

    def wait_for_output(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output():
            assert time.monotonic() < deadline, f"{text!r} not printed:\n{self.output()[-4000:]}"
            time.sleep(0.1)


@pytest.fixture
def stacks(tmp_path: Path) -> Iterator[Callable[..., Stack]]:
    """Makes Stack objects for this test; kills whatever is still running at the end."""
    made: list[Stack] = []

    def make(*flags: str, actions: dict[str, Any] | None = None) -> Stack:
        made.append(Stack(tmp_path, *flags, actions=actions))
        return made[-1]

    yield make
    for stack in made:
        stack.kill()


@dataclass(frozen=True)
class Refusal:
    code: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def error_line(self) -> str:
        """The one line on stderr (asserts there is exactly one, an `error:` line, no traceback)."""
        assert "Traceback" not in self.stdout + self.stderr, self.stdout + self.stderr
        lines = self.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), self.stderr
        return lines[0]


def refused_start(state_dir: Path, *flags: str, env: dict[str, str] | None = None) -> Refusal:
    """`nexttick local --state-dir DIR <flags>` expected to refuse: it must exit by itself, soon."""
    started = time.monotonic()
    try:
        done = subprocess.run(
            [NEXTTICK, "local", "--state-dir", str(state_dir), *flags],
            cwd=REPO,
            env=env or _environment(),
            capture_output=True,
            text=True,
            timeout=REFUSAL_SECONDS,
        )
    except subprocess.TimeoutExpired as exc:
        output = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        pytest.fail(f"nexttick local still ran after {REFUSAL_SECONDS:.0f} s instead of refusing:\n{output}")
    return Refusal(done.returncode, done.stdout, done.stderr, time.monotonic() - started)


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_run(count: int = 3) -> int:
    """A port P with P .. P+count-1 all free on 127.0.0.1."""
    rng = random.Random()
    for _ in range(500):
        base = rng.randrange(FIXED_PORTS.start, FIXED_PORTS.stop - count)
        if all(_port_free(base + i) for i in range(count)):
            return base
    raise AssertionError(f"no {count} consecutive free ports in {FIXED_PORTS}")


@contextmanager
def listening_on(port: int) -> Iterator[socket.socket]:
    """Something else listening on 127.0.0.1:port (a plain socket)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        yield sock


def state_dir_entries(state_dir: Path) -> set[str]:
    return {p.name for p in state_dir.iterdir()} if state_dir.exists() else set()


def file_fingerprints(state_dir: Path, *names: str) -> dict[str, tuple[bytes, int]]:
    return {name: ((state_dir / name).read_bytes(), (state_dir / name).stat().st_mtime_ns) for name in names}


def read_exports(path: Path) -> dict[str, str]:
    """The variables `source .nexttick/env` sets (`export K=V` lines, shell-quoted values)."""
    exports: dict[str, str] = {}
    for line in path.read_text().splitlines():
        [word] = shlex.split(line.removeprefix("export "))
        name, _, value = word.partition("=")
        exports[name] = value
    return exports


# ---------------------------------------------------------------------- refused starts


def test_a_second_stack_on_the_same_state_dir_is_refused_and_touches_nothing(
    stacks: Callable[..., Stack],
) -> None:
    """Before e055862 there was no lock: the second start ran (no exit 4 within REFUSAL_SECONDS),
    rewrote local.json and env with its own pid and ports, and deleted them when it stopped."""
    # Given a stack that has saved its state once (a task pending in state.json) and runs again
    stack = stacks("--port", "0").start()
    task = stack.post({"action": "log", "delay_seconds": 3600, "id": "kept"})
    assert stack.interrupt(signal.SIGTERM)[0] == 0
    stack.start()
    files = file_fingerprints(stack.state_dir, "local.json", "env", "state.json")
    # When a second `nexttick local` starts on the same state directory
    refusal = refused_start(stack.state_dir, "--port", "0")
    # Then it exits 4 with one line naming the directory and the running stack, no traceback
    assert refusal.code == 4, refusal
    assert refusal.error_line.startswith(
        f"error: another nexttick local stack is running on {stack.state_dir} "
        f"(pid {stack.pid}, API {stack.api_url}); "
    ), refusal.stderr
    # And the running stack's files are byte for byte (and mtime) what they were
    assert file_fingerprints(stack.state_dir, "local.json", "env", "state.json") == files
    # And the first stack still answers, and the CLI still finds it through local.json
    assert requests.get(f"{stack.api_url}/health", timeout=5).status_code == 200
    assert stack.cli("show", "kept")["due"] == task["due"]
    assert stack.cli("ls")["items"][0]["id"] == "kept"
    assert stack.interrupt()[0] == 0


@pytest.mark.parametrize(
    ("offset", "setting"),
    [(0, "NEXTTICK_PORT / --port"), (1, "NEXTTICK_MOTO_PORT / --moto-port"), (2, "NEXTTICK_LAMBDA_PORT")],
    ids=["api", "moto", "lambda"],
)
def test_a_busy_port_is_refused_naming_its_setting(tmp_path: Path, offset: int, setting: str) -> None:
    """Before e055862: a busy API port ended in a traceback (exit 1) after the stack had started
    the emulator, and the stop wrote state.json; the emulator and the Lambda endpoint took any free
    port, so a busy --port+1 / +2 went unnoticed (the stack ran, no exit 3)."""
    state_dir = tmp_path / "state"
    # Given something else listening on the port the stack would take (--port P: API P, moto P+1,
    # Lambda endpoint P+2)
    api_port = free_port_run(3)
    busy = api_port + offset
    with listening_on(busy):
        # When the stack starts with --port P
        refusal = refused_start(state_dir, "--port", str(api_port))
    # Then it exits 3 with one line naming the port and the setting that chose it
    assert refusal.code == 3, refusal
    assert refusal.error_line.startswith(
        f"error: port {busy} on 127.0.0.1 is already in use ({setting}); "
    ), refusal.stderr
    # And it wrote nothing into the state directory but its lock
    assert state_dir_entries(state_dir) <= {"lock"}


@pytest.mark.parametrize(
    ("actions", "expected"),
    [
        (
            '{"hook": ',
            "error: invalid NEXTTICK_ACTIONS: NEXTTICK_ACTIONS is not valid JSON (",
        ),
        (
            {"hook": {"type": "webhook"}},
            "error: invalid action in NEXTTICK_ACTIONS: actions.hook.url: 'url' is required",
        ),
        (
            {"hook": {"type": "webhook", "url": "https://example.com/hook"}},
            "error: invalid action in NEXTTICK_ACTIONS: actions.hook.url: url 'https://example.com/hook' "
            "is not allowed by NEXTTICK_WEBHOOK_ALLOWLIST",
        ),
    ],
    ids=["not-json", "webhook-without-url", "url-not-allow-listed"],
)
def test_invalid_actions_refuse_the_start(
    tmp_path: Path, actions: dict[str, Any] | str, expected: str
) -> None:
    """Before e055862 the stack started "healthy" with these actions (no exit 2 within
    REFUSAL_SECONDS) and every worker run failed on them."""
    state_dir = tmp_path / "state"
    # Given NEXTTICK_ACTIONS that cannot work, When the stack starts
    refusal = refused_start(state_dir, "--port", "0", env=_environment(actions))
    # Then it exits 2, in bounded time, with one line naming the variable and the action's field
    assert refusal.code == 2, refusal
    assert refusal.error_line.startswith(expected), refusal.stderr
    assert refusal.seconds < REFUSAL_SECONDS
    # And it published no endpoints and saved no state
    assert state_dir_entries(state_dir) <= {"lock"}


# ---------------------------------------------------------------------- what a start prints


def test_the_banner_lists_the_actions_after_the_progress_lines(stacks: Callable[..., Stack]) -> None:
    """Before e055862 nothing was printed before the banner and it had no `actions` line."""
    # Given a webhook action added with NEXTTICK_ACTIONS (never called here)
    stack = stacks("--port", "0", actions={"hook": {"type": "webhook", "url": "http://127.0.0.1:9/hook"}})
    # When the stack starts
    stack.start()
    lines = stack.lines()
    # Then progress lines came first, then the banner, which lists every action with its kind
    banner = lines.index("nexttick local stack is running (started empty)")
    progress = [i for i, line in enumerate(lines) if line.startswith("nexttick local: ")]
    assert "nexttick local: deploying the template into the emulator ..." in lines
    assert progress and max(progress) < banner, lines
    [actions] = [line for line in lines if line.lstrip().startswith("actions ")]
    assert re.fullmatch(
        r"\s+actions\s+hook \(webhook\), log \(log\)\s+\(add your own with NEXTTICK_ACTIONS\)", actions
    )
    assert stack.interrupt()[0] == 0


# ---------------------------------------------------------------------- stopping


def test_ctrl_c_does_not_wait_for_a_sleeping_worker_and_the_restart_delivers_on_time(
    stacks: Callable[..., Stack],
) -> None:
    """Before e055862 the stop waited the whole 5 s grace for the sleeping invocation (~6 s) and
    warned it abandoned it, the banner counted restored table items ("restored 3 items") rather than
    tasks, and the restored waiter claim of the stopped process kept the new start's worker from
    waiting for the task: it was not delivered within 30 s of its due time (each checked on its own)."""
    receiver = Receiver()
    try:
        # Given a task due shortly, which the worker waits for inside its invocation (sleeping)
        stack = stacks(
            "--port",
            "0",
            "--stop-grace",
            f"{SLEEPING_STOP_GRACE:g}",
            actions={"hook": {"type": "webhook", "url": receiver.url}},
        )
        # Without a hand-over queue the woken worker sleeps through the wait (with one it would hand
        # the wait to a message and end: nothing would be left sleeping at the Ctrl-C)
        stack.env["NEXTTICK_HANDOVER_QUEUE_URL"] = ""
        stack.start()
        created = stack.post({"action": "hook", "delay_seconds": DUE_AFTER_RESTART, "id": "after-restart"})
        due = parse_time(created["due"])
        stack.wait_for_output("worker invoked: wake", timeout=30)
        time.sleep(1.0)  # the woken invocation claims the wait and sleeps
        # When the user presses Ctrl-C
        code, seconds = stack.interrupt()
        # Then the stack stops at once, saving the state, without abandoning anything: the sleeping
        # invocation was woken and ended without a request (before the stop ended it woke when its
        # sleep did, into the stopped emulator: a traceback of its claim's release)
        assert code == 0 and seconds < SLEEPING_STOP_SECONDS, (seconds, stack.output()[-4000:])
        assert f"stopped; state saved to {stack.state_dir / 'state.json'}" in stack.lines()
        assert "abandoned" not in stack.output() and "handed-over" not in stack.output()
        assert any("worker finished: stopped" in line for line in stack.lines()), stack.output()
        assert "Traceback" not in stack.output(), stack.output()[-4000:]
        assert receiver.of("after-restart") == []
        # And when it is started again before the task is due
        stack.start()
        assert time.time() < due - 5, "the restart took too long for this test to mean anything"
        assert f"nexttick local stack is running (restored 1 task from {stack.state_dir / 'state.json'})" in (
            stack.lines()
        )
        # Then the task is delivered once, on time
        receiver.wait_for("after-restart", 1, timeout=due - time.time() + 30)
        time.sleep(1.0)  # a second delivery would come now
        deliveries = receiver.of("after-restart")
        assert len(deliveries) == 1, (
            f"{len(deliveries)} deliveries {time.time() - due:.1f} s after the due time"
        )
        [delivery] = deliveries
        assert parse_time(delivery.body["scheduled_for"]) == due
        assert 0 <= delivery.lateness <= ON_TIME_SECONDS, delivery.lateness
        assert stack.interrupt()[0] == 0
    finally:
        receiver.shutdown()


def test_a_second_ctrl_c_says_what_the_stop_waits_for(stacks: Callable[..., Stack]) -> None:
    """Before e055862 a second Ctrl-C printed nothing (the handler only set the stop event)."""
    receiver = SlowReceiver(SLOW_ANSWER_SECONDS)
    try:
        # Given a worker invocation delivering to a webhook that takes SLOW_ANSWER_SECONDS to answer
        stack = stacks("--port", "0", actions={"slow": {"type": "webhook", "url": receiver.url}})
        stack.start()
        stack.post({"action": "slow", "delay_seconds": 1, "id": "slow"})
        assert receiver.arrived.wait(30), stack.output()[-4000:]
        # When the user presses Ctrl-C, then again half a second later (and again every half second
        # should the stop still be closing the servers on a loaded machine)
        assert stack.process is not None
        stack.process.send_signal(signal.SIGINT)
        presses = 0
        statuses: list[str] = []
        while stack.process.poll() is None and not receiver.answered.is_set():
            time.sleep(0.5)
            stack.process.send_signal(signal.SIGINT)
            presses += 1
            deadline = time.monotonic() + 2
            while len(statuses) < presses and time.monotonic() < deadline:
                time.sleep(0.05)
                statuses = [line for line in stack.lines() if line.startswith("still stopping:")]
            if statuses and "worker invocations" in statuses[-1]:
                break
        # Then a further press printed what the stop waits for: invocations delivering (any others
        # only sleep for a due instant and are not waited for)
        waiting = [
            re.fullmatch(
                r"still stopping: waiting up to 5 s for worker invocations that are delivering tasks "
                r"\(running now: (\d+), of which sleeping: (\d+)\)",
                line,
            )
            for line in statuses
        ]
        counts = [(int(m.group(1)), int(m.group(2))) for m in waiting if m]
        assert counts and all(running > sleeping for running, sleeping in counts), statuses
        # And the stop waited for that delivery, then saved the state
        assert stack.process.wait(STOP_SECONDS) == 0
        assert receiver.answered.is_set()
        assert re.search(r"succeeded slow \(slow\)", stack.output()), stack.output()[-4000:]
        assert f"stopped; state saved to {stack.state_dir / 'state.json'}" in stack.lines()
    finally:
        receiver.shutdown()


# ---------------------------------------------------------------------- ports


def test_ports_follow_the_api_port_so_a_sourced_env_survives_a_restart(
    stacks: Callable[..., Stack], tmp_path: Path
) -> None:
    """Before e055862 the emulator and the Lambda endpoint took any free port on every start: the
    endpoint_url was not --port+1, and a sourced .nexttick/env pointed at nothing after a restart."""
    # Given the stack on --port P (P, P+1, P+2 free)
    port = free_port_run(3)
    stack = stacks("--port", str(port)).start()
    urls = {"api_url": port, "endpoint_url": port + 1, "lambda_endpoint_url": port + 2}
    expected = {name: f"http://127.0.0.1:{p}" for name, p in urls.items()}
    info = json.loads((stack.state_dir / "local.json").read_text())
    assert {name: info[name] for name in urls} == expected
    # And a shell that sourced its .nexttick/env (the CLI then needs no local.json: the variables
    # name the endpoint), from another directory
    exported = read_exports(stack.state_dir / "env")
    sourced = {**_environment(), **exported}
    assert sourced["NEXTTICK_ENDPOINT_URL"] == expected["endpoint_url"]

    def cli(*args: str) -> dict[str, Any]:
        return run_cli(*args, cwd=tmp_path, env=sourced)

    cli("add", "--action", "log", "--in", "1h", "--id", "across-restart")
    # When the stack is stopped and started again on the same ports and state directory
    assert stack.interrupt()[0] == 0
    stack.start()
    # Then it listens where it did, writes the same env, and the shell's variables still work
    info = json.loads((stack.state_dir / "local.json").read_text())
    assert {name: info[name] for name in urls} == expected
    assert read_exports(stack.state_dir / "env") == exported
    assert cli("show", "across-restart")["status"] == "pending"
    assert cli("add", "--action", "log", "--in", "2h", "--id", "after-restart")["status"] == "pending"
    assert stack.interrupt()[0] == 0
