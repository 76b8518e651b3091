"""The local stack's emulated AWS in a process of its own: moto's server, its journal and snapshots.

moto is CPU-bound Python: in the stack's process every AWS call it served held the GIL the API
handler, the worker and the emulated EventBridge needed, so under concurrent clients the API, the
worker and the emulator all queued behind it (bench/localload.py). Here the moto server
(local.motoserver.MotoServer, with its rule-change and write notifications) and the state it
journals (local.state.LocalState, which reads moto's backends directly) run in a child process;
the stack talks to it over HTTP as before, and over two socket pairs:

* control (request, answer): restore the state, freeze, compact, stop; progress lines are sent
  while a restore runs;
* events (child to parent): "the rule changed" and "a DynamoDB write was applied", coalesced,
  for the emulated EventBridge and the keeper.

The child dies with the stack: it is sent SIGKILL when the process that started it ends however it
ends (Linux PR_SET_PDEATHSIG; also when its control socket closes), as a `kill -9` of the stack
took the in-process server with it. Every acknowledged write is journaled and fsynced by the
child before its response leaves, exactly as in-process (docs in local/state.py). It runs in a
session of its own, so a Ctrl-C at the terminal reaches only the stack, which stops it in order.

    python -m local.motoprocess <port> <control fd> <events fd> <parent pid>   (started by MotoProcess)
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import traceback
import warnings
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from local.botocore_data import share_botocore_data

logger = logging.getLogger("local-stack")

RULE_CHANGED, WRITE_APPLIED = "rule", "write"
START_SECONDS = 60.0
STOP_SECONDS = 30.0
_PR_SET_PDEATHSIG = 1


class EmulatorError(RuntimeError):
    """The emulator process failed a command (its traceback is the message) or went away."""


class MotoProcess:
    """moto's server in a child process: `start()`, `url`, `subscribe` / `subscribe_writes`,
    `recover` (then every acknowledged write is journaled), `freeze`, `compact`, `stop`."""

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.url = ""
        self._process: subprocess.Popen[bytes] | None = None
        self._control: Connection | None = None
        self._events: Connection | None = None
        self._lock = threading.Lock()  # one command at a time
        self._rule_listeners: list[Callable[[], None]] = []
        self._write_listeners: list[Callable[[], None]] = []
        self._reader: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def running(self) -> bool:
        """Whether the child is still there (it ends only when stopped or killed)."""
        return self._process is not None and self._process.poll() is None

    def start(self) -> MotoProcess:
        """Start the child and wait until its server listens (EmulatorError if it cannot)."""
        control, child_control = socket.socketpair()
        events, child_events = socket.socketpair()
        try:
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "local.motoprocess",
                    str(self.port),
                    str(child_control.fileno()),
                    str(child_events.fileno()),
                    str(os.getpid()),
                ],
                pass_fds=(child_control.fileno(), child_events.fileno()),
                start_new_session=True,  # a terminal's Ctrl-C is the stack's to handle
                env={**os.environ, "PYTHONPATH": _python_path()},
            )
        finally:
            child_control.close()
            child_events.close()
        self._control = Connection(control.detach())
        self._events = Connection(events.detach())
        if not self._control.poll(START_SECONDS):
            self.kill()
            raise EmulatorError(f"the emulator process did not start within {START_SECONDS:.0f} s")
        self.url = str(self._answer())
        self._reader = threading.Thread(target=self._read_events, name="emulator-events", daemon=True)
        self._reader.start()
        return self

    # ------------------------------------------------------------------ notifications
    def subscribe(self, listener: Callable[[], None]) -> None:
        """Call `listener` after the rule may have changed (a rule-changing events call was applied)."""
        self._rule_listeners.append(listener)

    def subscribe_writes(self, listener: Callable[[], None]) -> None:
        """Call `listener` after a DynamoDB write was applied."""
        self._write_listeners.append(listener)

    def _read_events(self) -> None:
        assert self._events is not None
        while True:
            try:
                kinds = self._events.recv()
            except (EOFError, OSError):
                return
            for kind in kinds:
                for listener in self._rule_listeners if kind == RULE_CHANGED else self._write_listeners:
                    try:
                        listener()
                    except Exception:
                        logger.exception("emulator event listener failed")

    # ------------------------------------------------------------------ commands
    def recover(
        self,
        state_dir: Path,
        *,
        region: str,
        table: str,
        rule: str,
        now: float,
        fresh: bool,
        progress: Callable[[str], None] = lambda _: None,
    ) -> int:
        """Restore the state directory into the emulator (local.state.LocalState.recover) and journal
        every acknowledged write from then on; the tasks restored."""
        restored = self._call(
            "recover",
            {
                "state_dir": str(state_dir.resolve()),
                "region": region,
                "table": table,
                "rule": rule,
                "now": now,
                "fresh": fresh,
            },
            progress,
        )
        return int(restored)

    def freeze(self) -> None:
        """Serve only requests marked for the snapshot from now on (RuleChangeNotifier.freeze)."""
        self._call("freeze")

    def compact(self) -> None:
        """Fold the journal into a new snapshot (LocalState.compact)."""
        self._call("compact")

    def stop(self, timeout: float = STOP_SECONDS) -> None:
        """Stop the server, close the journal, let the child exit (killed if it does not)."""
        if self._process is None:
            return
        try:
            if self._process.poll() is None:
                self._call("stop")
            self._process.wait(timeout)
        except (EmulatorError, subprocess.TimeoutExpired):
            logger.warning("the emulator process did not stop cleanly; killing it")
            self.kill()
        finally:
            self._close()

    def kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(10)
        self._close()

    def _close(self) -> None:
        for connection in (self._control, self._events):
            if connection is not None:
                connection.close()
        self._control = self._events = None

    def _call(
        self,
        command: str,
        args: dict[str, Any] | None = None,
        progress: Callable[[str], None] = lambda _: None,
    ) -> Any:
        with self._lock:
            if self._control is None:
                raise EmulatorError("the emulator process is not running")
            try:
                self._control.send((command, args or {}))
            except OSError as exc:
                raise EmulatorError(f"the emulator process went away ({exc})") from None
            return self._answer(progress)

    def _answer(self, progress: Callable[[str], None] = lambda _: None) -> Any:
        assert self._control is not None
        while True:
            try:
                kind, value = self._control.recv()
            except (EOFError, OSError):
                code = self._process.poll() if self._process is not None else None
                raise EmulatorError(f"the emulator process went away (exit status {code})") from None
            if kind == "progress":
                progress(str(value))
            elif kind == "error":
                raise EmulatorError(str(value))
            else:
                return value


def _python_path() -> str:
    """The child imports `local` from this checkout, as the stack does."""
    root = str(Path(__file__).resolve().parents[1])
    existing = os.environ.get("PYTHONPATH", "")
    return root if not existing else f"{root}{os.pathsep}{existing}"


# ---------------------------------------------------------------------- the child


class _Notes:
    """Coalesces the server's notifications and sends them to the stack from one thread (the
    server's request threads only set a flag: they hold the serial lock or are about to answer)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._pending: set[str] = set()
        self._changed = threading.Condition()
        threading.Thread(target=self._send, name="emulator-notes", daemon=True).start()

    def note(self, kind: str) -> None:
        with self._changed:
            self._pending.add(kind)
            self._changed.notify()

    def _send(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._pending))
                kinds, self._pending = sorted(self._pending), set()
            try:
                self._connection.send(kinds)
            except OSError:
                return


def _die_with(parent: int) -> None:
    """SIGKILL this process when the process that started it ends (Linux; elsewhere the closed
    control socket ends it at the next command)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # it ended before the prctl took effect
        os._exit(1)


def _serve(port: int, control: Connection, events: Connection) -> None:
    from local import state
    from local.motoserver import EmulatedState, MotoServer

    try:
        server = MotoServer(port).start()
    except OSError as exc:
        control.send(("error", f"the emulator cannot listen on 127.0.0.1:{port}: {exc}"))
        return
    notes = _Notes(events)
    server.subscribe(lambda: notes.note(RULE_CHANGED))
    server.subscribe_writes(lambda: notes.note(WRITE_APPLIED))
    control.send(("ok", server.url))
    local_state: state.LocalState | None = None
    while True:
        try:
            command, args = control.recv()
        except (EOFError, OSError):  # the stack went away without stopping us: as a kill -9
            os._exit(0)
        try:
            result: Any = None
            if command == "recover":
                local_state = state.LocalState(
                    Path(args["state_dir"]),
                    EmulatedState(args["region"], args["table"], args["rule"]),
                    server.notifier.serial,
                )

                def progress(message: str) -> None:
                    control.send(("progress", message))

                result = local_state.recover(args["now"], fresh=args["fresh"], progress=progress)
                server.notifier.record_with(local_state)
            elif command == "freeze":
                server.notifier.freeze()
            elif command == "compact":
                if local_state is not None:
                    local_state.compact()
            elif command == "stop":
                server.stop()
                if local_state is not None:
                    local_state.close()
                control.send(("ok", None))
                return
            else:
                raise ValueError(f"unknown command {command!r}")
            control.send(("ok", result))
        except Exception:
            control.send(("error", traceback.format_exc()))


def main(argv: list[str]) -> None:
    port, control_fd, events_fd, parent = (int(a) for a in argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the stack stops us in order
    _die_with(parent)
    share_botocore_data()
    logging.basicConfig(level=logging.WARNING, format="emulator: %(levelname)s %(name)s: %(message)s")
    for noisy in ("moto", "werkzeug", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    # moto names every template resource type it does not emulate (alarms, ...); the stack is fine.
    warnings.filterwarnings("ignore", message="Tried to parse AWS::", category=UserWarning)
    _serve(port, Connection(control_fd), Connection(events_fd))


if __name__ == "__main__":
    main(sys.argv[1:])
