"""What a start of the local stack checks before it touches anything: the state directory is its
own, its ports are free, the handlers' settings and actions are valid. A refusal is one line for
the user and an exit status (README, "Local stack")."""

from __future__ import annotations

import errno
import fcntl
import json
import socket
from pathlib import Path
from typing import IO

from pydantic import ValidationError as SettingsValidationError

from local import endpoints
from local.options import PORT_SETTINGS, LocalOptions
from nexttick.actions import ActionConfigError, ActionRegistry, build_registry
from nexttick.config import NextTickSettings

# Held (flock) for the stack's lifetime: a second stack on the same state directory refuses to start
# and touches none of the first one's files. The kernel releases it whatever ends the process.
LOCK_FILE = "lock"
# Exit codes of a refused start (README, "Local stack").
EXIT_INVALID_CONFIG = 2
EXIT_PORT_BUSY = 3
EXIT_ALREADY_RUNNING = 4


class StartupError(Exception):
    """The stack refuses to start; `message` is the one line the user sees, `code` the exit status."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def hold_state_dir(state_dir: Path) -> IO[str]:
    """Lock the state directory for this process, or refuse: another stack runs on it."""
    state_dir.mkdir(parents=True, exist_ok=True)
    handle = (state_dir / LOCK_FILE).open("a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        try:
            info = json.loads((state_dir / endpoints.LOCAL_FILE).read_text())
            where = f" (pid {info['pid']}, API {info['api_url']})"
        except (OSError, ValueError, KeyError):
            where = ""
        raise StartupError(
            EXIT_ALREADY_RUNNING,
            f"another nexttick local stack is running on {state_dir}{where}; use it, stop it, "
            "or start a second one with --state-dir DIR --port N",
        ) from None
    return handle


def check_ports_free(options: LocalOptions) -> None:
    """Refuse to start, naming the setting, when a port the stack would listen on is taken."""
    for name, setting in PORT_SETTINGS.items():
        port = getattr(options, name)
        if not port:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise
                raise StartupError(
                    EXIT_PORT_BUSY,
                    f"port {port} on 127.0.0.1 is already in use ({setting}); stop what listens there "
                    "or choose other ports, e.g. NEXTTICK_PORT=8100 make run",
                ) from None


def validated_handler_settings() -> tuple[NextTickSettings, ActionRegistry]:
    """The handlers' settings and actions, validated before the stack serves anything: one bad
    action would otherwise fail every worker run while the API keeps accepting tasks."""
    try:
        settings = NextTickSettings()
    except SettingsValidationError as exc:
        first = exc.errors()[0]
        name = str(first["loc"][0]) if first.get("loc") else ""
        known = NextTickSettings.model_fields.get(name)
        variable = (
            (known.alias if known and known.alias else f"NEXTTICK_{name.upper()}") if name else "settings"
        )
        message = str(first["msg"]).removeprefix("Value error, ")
        raise StartupError(EXIT_INVALID_CONFIG, f"invalid {variable}: {message}") from None
    try:
        registry = build_registry(settings.action_definitions(), settings)
    except ActionConfigError as exc:
        name = (exc.field or "").split(".")[1] if exc.field and "." in exc.field else ""
        source = "NEXTTICK_ACTIONS" if name in settings.actions else "the configured actions"
        raise StartupError(EXIT_INVALID_CONFIG, f"invalid action in {source}: {exc.message}") from None
    return settings, registry
