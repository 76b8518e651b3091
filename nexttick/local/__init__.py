"""The local stack: nexttick on an embedded AWS emulator (moto server), started by `nexttick local`.

Everything the handlers do goes through real boto3 clients to a moto server on loopback; the worker
and API handlers run in this process with a Lambda-like context; an emulated EventBridge fires the
single rule the way AWS would. See README, "Local stack".
"""

from nexttick.local.options import LocalOptions

__all__ = ["LocalOptions"]
