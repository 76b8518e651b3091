"""One botocore data loader for every botocore session of a process.

botocore parses its service models and endpoint data (JSON, megabytes of it) once per loader, and
every session makes a loader of its own: the local stack's process builds about ten sessions (its
emulator clients, each handler's runtime, PynamoDB's connection in each store, the keeper's and
the hand-over's pollers) and the test suite three per test. botocore already hands one loader's
cached, never-modified models to all the clients of a session; here every session of the process
shares one loader. The Lambda functions build one runtime per container and are left as they are.
"""

from __future__ import annotations

import functools

import botocore.session


def share_botocore_data() -> None:
    """Make every botocore session created from now on use the process's one loader. Idempotent."""
    if not hasattr(botocore.session.create_loader, "cache_info"):
        botocore.session.create_loader = functools.cache(botocore.session.create_loader)
