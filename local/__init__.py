"""Developer tooling, never in a Lambda asset: the local stack (nexttick on an embedded AWS emulator,
a moto server, started by `nexttick local`), the `nexttick` CLI (`local.cli`), the local API
Gateway adapter (`local.gateway`) and the DynamoDB meter of tests and the bench (`local.meter`).

Everything the handlers do goes through real boto3 clients to a moto server on loopback; the worker
and API handlers run in this process with a Lambda-like context; an emulated EventBridge fires the
single rule the way AWS would. See README, "Local stack".
"""

from local.options import LocalOptions

__all__ = ["LocalOptions"]
