"""The README, executed: in a fresh copy of the repository, `make run` creates its own `.venv`,
installs everything and starts the stack; then every command of the README's local tour and HTTP
API section runs in order, as a user pastes them into a second terminal, and must exit 0 without an
error body. Ctrl-C stops the stack and saves its state. The webhook variant of `make run` from the
tour starts too, and lists its action.

Only the README's own text drives this test: a changed README changes what runs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from bench.localstack import REPO

pytestmark = [pytest.mark.xdist_group("readme-e2e"), pytest.mark.slow]

README_PORT = 8000  # the port the README's commands name
INSTALL_AND_START_SECONDS = 600  # a fresh .venv: pip install (from the wheel cache when warm) + synth


@dataclass(frozen=True)
class Command:
    section: str
    text: str

    @property
    def starts_the_stack(self) -> bool:
        return bool(re.search(r"(^|\s)make run\b", self.text))


def readme_commands(readme: str, sections: tuple[str, ...]) -> list[Command]:
    """The shell commands of the ```bash blocks in the named `## ` sections, continuation lines
    joined, comment-only lines dropped (trailing comments stay: the shell ignores them)."""
    commands: list[Command] = []
    for section in sections:
        match = re.search(rf"^## {re.escape(section)}\n(.*?)(?=^## |\Z)", readme, re.S | re.M)
        assert match, f"README has no section {section!r}"
        for block in re.findall(r"^```bash\n(.*?)^```", match.group(1), re.S | re.M):
            for text in re.sub(r"\\\n\s*", " ", block).splitlines():
                if text.strip() and not text.lstrip().startswith("#"):
                    commands.append(Command(section, text.strip()))
    return commands


def fresh_copy(destination: Path) -> Path:
    """The repository as a clone would have it (tracked and new, not ignored, files; no .venv, no
    build cache, no state), with the working tree's current content."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return destination


def ports_free(*ports: int) -> bool:
    for port in ports:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def free_base_port() -> int:
    """A port P with P, P+1, P+2 free (the stack's API, emulator and Lambda endpoint)."""
    for _ in range(200):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = int(probe.getsockname()[1])
        if base + 2 < 65536 and ports_free(base, base + 1, base + 2):
            return base
    raise AssertionError("no three consecutive free ports")


class UserShell:
    """A user's terminal in the fresh copy: a clean environment (no AWS or nexttick variables), with
    `.venv/bin` on PATH as the README's tour asks. When the README's port is taken on this machine,
    the stack gets another one and the commands' URLs are rewritten to it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = (
            README_PORT if ports_free(README_PORT, README_PORT + 1, README_PORT + 2) else free_base_port()
        )
        outer_bin = str(Path(sys.executable).parent)
        path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != outer_bin]
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("NEXTTICK_", "AWS_", "PYTEST_", "VIRTUAL_ENV", "PYTHON"))
        }
        self.env["PATH"] = os.pathsep.join([str(root / ".venv" / "bin"), *path])
        if self.port != README_PORT:
            self.env["NEXTTICK_PORT"] = str(self.port)

    def text(self, command: Command) -> str:
        return command.text.replace(f":{README_PORT}", f":{self.port}")

    def run(self, command: Command) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", self.text(command)],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def start(self, command: Command, log: Path) -> subprocess.Popen[bytes]:
        """`make run` (or a variant) in its own process group, as in a terminal of its own."""
        with log.open("ab") as handle:
            return subprocess.Popen(
                ["bash", "-c", self.text(command)],
                cwd=self.root,
                env=self.env,
                stdout=handle,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_healthy(self, process: subprocess.Popen[bytes], log: Path, timeout: float) -> str:
        url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert process.poll() is None, (
                f"`make run` exited {process.returncode}:\n{log.read_text()[-4000:]}"
            )
            try:
                if requests.get(f"{url}/health", timeout=2).status_code == 200:
                    return url
            except requests.RequestException:
                pass
            time.sleep(0.5)
        raise AssertionError(f"`make run` did not answer /health:\n{log.read_text()[-4000:]}")

    @staticmethod
    def interrupt(process: subprocess.Popen[bytes]) -> None:
        """Ctrl-C in that terminal: SIGINT to its process group."""
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(60)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


@pytest.fixture(scope="module")
def shell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UserShell]:
    yield UserShell(fresh_copy(tmp_path_factory.mktemp("clone") / "nexttick"))


def assert_succeeded(command: Command, done: subprocess.CompletedProcess[str]) -> None:
    context = (
        f"{command.text}\nexit {done.returncode}\n"
        f"stdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-2000:]}"
    )
    assert done.returncode == 0, context
    assert "Traceback" not in done.stderr and not done.stderr.startswith("error"), context
    output = done.stdout.strip()
    if command.text.startswith("curl"):
        body = json.loads(output)
        assert isinstance(body, dict) and "error" not in body, context


def test_the_readme_tour_and_http_api_commands_run_from_a_fresh_clone(shell: UserShell) -> None:
    readme = (shell.root / "README.md").read_text()
    # Given the README's two commands and its tour, in order
    two = readme_commands(readme, ("The two commands",))
    assert [c.text.split("#")[0].strip() for c in two] == ["make run", "make test"]
    commands = readme_commands(readme, ("2-minute tour", "HTTP API"))
    starts = [c for c in commands if c.starts_the_stack]
    assert starts and starts[0].text.split("#")[0].strip() == "make run"
    log = shell.root / "make-run.log"
    # When `make run` starts in the fresh copy (no .venv yet: it creates one and installs everything)
    assert not (shell.root / ".venv").exists()
    stack = shell.start(starts[0], log)
    try:
        url = shell.wait_healthy(stack, log, INSTALL_AND_START_SECONDS)
        # Then it serves the API where the README says, and the banner lists the `log` action
        assert requests.get(f"{url}/health", timeout=5).json() == {"status": "ok"}
        assert re.search(r"actions\s+log \(log\)", log.read_text())
        # And every command of the tour and the HTTP API section, run in order, succeeds
        ran = 0
        for command in commands:
            if command.starts_the_stack:
                continue
            assert_succeeded(command, shell.run(command))
            ran += 1
        assert ran >= 10
    finally:
        # When Ctrl-C is pressed in the stack's terminal
        shell.interrupt(stack)
    # Then the stack saved its state and stopped
    output = log.read_text()
    assert "stopped; state saved to .nexttick/state.json" in output, output[-3000:]
    assert (shell.root / ".nexttick" / "state.json").is_file()
    assert not (shell.root / ".nexttick" / "local.json").exists()
    assert "Traceback" not in output, output[-3000:]

    # Given the tour's webhook variant of `make run` (the same copy: its .venv exists now)
    for command in starts[1:]:
        log = shell.root / "make-run-variant.log"
        # When it starts
        variant = shell.start(command, log)
        try:
            shell.wait_healthy(variant, log, 180)
            # Then the banner lists the action it adds, next to the configured one
            assert re.search(r"actions\s+hook \(webhook\), log \(log\)", log.read_text()), log.read_text()
        finally:
            shell.interrupt(variant)
        assert "stopped; state saved" in log.read_text()
