"""`.nexttick/local.json` (and `.nexttick/env`): how other processes find a running local stack.

Written by `nexttick local` once it is ready, removed when it stops. The CLI targets the local stack
when this file names a live process (README, "CLI"); `source .nexttick/env` points the editor library
(or any boto3 code) at it.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

LOCAL_FILE = "local.json"
ENV_FILE = "env"


def write(state_dir: Path, info: dict[str, Any]) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    # local.json last: it says the stack is up (to the CLI and to whoever waits for it), so the env
    # file must already be in place when it appears.
    for name, text in (
        (ENV_FILE, "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(info["env"].items()))),
        (LOCAL_FILE, json.dumps(info, indent=2) + "\n"),
    ):
        tmp = state_dir / f".{name}.tmp"
        tmp.write_text(text)
        tmp.chmod(0o600)
        os.replace(tmp, state_dir / name)


def remove(state_dir: Path) -> None:
    for name in (LOCAL_FILE, ENV_FILE):
        (state_dir / name).unlink(missing_ok=True)


class StaleLocalStack(Exception):
    """local.json names a process that is not running (the stack crashed or was killed)."""


def read(state_dir: Path) -> dict[str, Any] | None:
    """The running local stack's endpoints, None if there is none; StaleLocalStack if it died."""
    path = state_dir / LOCAL_FILE
    try:
        info: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    try:
        os.kill(int(info["pid"]), 0)
    except ProcessLookupError:
        raise StaleLocalStack(f"{path} names process {info['pid']}, which is not running") from None
    except PermissionError:
        pass  # alive, owned by someone else
    return info
