"""How the local stack's moto routes a request: without listing moto's package or a handler's
methods each time (`keep_moto_module_list`, `keep_handler_action_names`).

Written for moto 5.2.5 (`MOTO_VERSION`); `FINGERPRINTS` records the moto functions the patch
replaces or relies on, checked by tests/unit/test_motopatches.py.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import moto.core.responses as moto_core_responses
from moto import backends

MOTO_VERSION = "5.2.5"

_moto_list_of_modules = backends.list_of_moto_modules
_moto_method_names = moto_core_responses.method_names_from_class

# sha256 of each function's source as moto 5.2.5 ships it: `list_of_moto_modules` and
# `method_names_from_class` are replaced by cached ones; `call_action` is where the handler's
# method names are asked for.
FINGERPRINTS: dict[str, tuple[Callable[..., Any], str]] = {
    "moto.backends.list_of_moto_modules": (
        _moto_list_of_modules,
        "4f741a10b06500e840c3aaa1b4f02706e6f2bfbababc0e8a2a7b9c9d0e8957dc",
    ),
    "moto.core.utils.method_names_from_class": (
        _moto_method_names,
        "9dbac89d082b655fee902c450e69de9dbadf9699ad06411298494984b55138c3",
    ),
    "moto.core.responses.BaseResponse.call_action": (
        moto_core_responses.BaseResponse.call_action,
        "26076963fd17fd1a40be642032b5a8d90f159c19d01b80a5f0b0c839770ee0d6",
    ),
}


def keep_moto_module_list() -> None:
    """Resolve a request's service without listing moto's package each time.

    moto's dispatcher (`get_backend_for_host`) calls `backends.list_of_moto_modules()` for every
    request: an `os.listdir` of moto's package and an `isdir` per entry (about 150 system calls),
    inside the server's request lock. Under the local stack's load that was more than half of a
    DynamoDB Query's time in the lock (3.4 ms -> 1.4 ms per Query with the list kept). The package
    does not change while the server runs. Idempotent."""
    if backends.list_of_moto_modules is _moto_list_of_modules:
        backends.list_of_moto_modules = functools.cache(lambda: tuple(_moto_list_of_modules()))


def keep_handler_action_names() -> None:
    """Check a request's action without listing its handler's methods each time.

    `BaseResponse.call_action` lists the handler class's functions (`inspect.getmembers`) to check
    the action is one: about 0.4 ms of every request; a handler class gains no action while the
    emulator runs. Idempotent."""
    if moto_core_responses.method_names_from_class is _moto_method_names:
        moto_core_responses.method_names_from_class = functools.cache(  # type: ignore[assignment]
            lambda handler: frozenset(_moto_method_names(handler))
        )
