"""`nexttick local`: moto server + resources + worker and API handlers in-process + emulated
EventBridge, with state saved on stop and restored on start."""

from __future__ import annotations

import importlib
import logging
import os
import signal
import threading
import time
import warnings
from datetime import UTC, datetime
from typing import Any

import boto3

from nexttick import constants
from nexttick.config import get_settings
from nexttick.local import endpoints, logs, resources, state
from nexttick.local.emulator import EventBridgeEmulator, FiringPolicy
from nexttick.local.lambdas import ASYNC_RETRY_DELAYS, InvokeEndpoint, LocalFunction
from nexttick.local.motoserver import FROZEN_PASS_HEADER, MotoServer
from nexttick.local.options import (
    DEFAULT_CONCURRENCY,
    DEFAULT_WORKER_TIMEOUT_SECONDS,
    LocalOptions,
    handler_environment,
)

logger = logging.getLogger("local-stack")  # no "nexttick" in the name: Powertools filters those from root

WORKER_HANDLER = "lambdas.worker.handler:handler"
API_HANDLER = "lambdas.api.handler:handler"
SHUTDOWN_GRACE_SECONDS = 5.0
_FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}


def _mark_snapshot_request(request: Any, **_: Any) -> None:
    request.headers[FROZEN_PASS_HEADER] = "1"


def _load(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def synth_local_template() -> dict[str, Any] | None:
    """The CDK app's template for the emulator (synthesized once, then cached by the CDK app), or
    None when the CDK app is not there."""
    try:
        infra = importlib.import_module("infra")
    except ImportError:
        return None
    synth = getattr(infra, "synth_template", None)
    if synth is None:
        return None
    template: dict[str, Any] = synth(local=True)
    return template


class LocalStack:
    """Everything `nexttick local` runs, in this process. `start()`, then `stop()` (saves state)."""

    def __init__(self, options: LocalOptions) -> None:
        self.options = options
        self.state_file = options.state_dir / state.STATE_FILE
        self.moto: MotoServer | None = None
        self.endpoint: InvokeEndpoint | None = None
        self.worker: LocalFunction | None = None
        self.emulator: EventBridgeEmulator | None = None
        self.api: Any = None
        self.names: resources.StackNames | None = None
        self.restored = 0
        self._clients: dict[str, Any] | None = None

    @property
    def api_url(self) -> str:
        return str(self.api.url).rstrip("/")

    # ------------------------------------------------------------------ start
    def start(self) -> LocalStack:
        opts = self.options
        # Nothing in this process may reach real AWS: fake credentials, before any client exists.
        for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
            os.environ.pop(name, None)
        os.environ.update(_FAKE_CREDENTIALS)
        os.environ["AWS_REGION"] = os.environ["AWS_DEFAULT_REGION"] = opts.region
        self.moto = MotoServer(opts.moto_port).start()
        session = boto3.session.Session(region_name=opts.region)
        clients = {
            s: session.client(s, endpoint_url=self.moto.url)
            for s in ("dynamodb", "events", "cloudformation", "lambda")
        }
        for client in clients.values():  # the stack's own calls pass a frozen server (snapshot)
            client.meta.events.register("before-sign", _mark_snapshot_request)
        self.names = names = self._create_resources(clients)
        self.endpoint = InvokeEndpoint([], port=opts.lambda_port)
        os.environ.update(
            handler_environment(
                opts,
                moto_url=self.moto.url,
                lambda_url=self.endpoint.url,
                names={"table": names.table, "rule": names.rule, "worker_function": names.worker_function},
                function_env=names.worker_environment,
                environ=os.environ,
            )
        )
        get_settings.cache_clear()
        saved = state.load(self.state_file) if opts.restore else None
        if saved is not None:
            self.restored = state.restore(
                clients["dynamodb"], clients["events"], names.table, names.rule, saved, time.time()
            )
        self._clients = clients  # from here on the table holds the whole state: stop() saves it
        timeout = opts.worker_timeout or names.worker_timeout or DEFAULT_WORKER_TIMEOUT_SECONDS
        self.worker = LocalFunction(
            names.worker_function,
            _load(WORKER_HANDLER),
            timeout_seconds=timeout,
            region=opts.region,
            concurrency=opts.concurrency or names.reserved_concurrency or DEFAULT_CONCURRENCY,
            retry_delays=ASYNC_RETRY_DELAYS[: names.async_retries]
            if names.async_retries is not None
            else ASYNC_RETRY_DELAYS,
        )
        self.endpoint.functions[self.worker.name] = self.worker
        self.endpoint.start()
        self.emulator = EventBridgeEmulator(
            clients["events"],
            names.rule,
            self.worker.invoke_async,
            policy=FiringPolicy(jitter=opts.jitter, max_delivery_delay=opts.max_delivery_delay),
        )
        self.moto.notifier.subscribe(self.emulator.notify)
        self.emulator.start()
        from nexttick.api.app import RESOURCES
        from nexttick.api.gateway import serve

        self.api = serve(
            _load(API_HANDLER),
            "127.0.0.1",
            opts.api_port,
            function_name=constants.DEFAULT_API_FUNCTION_NAME,
            resources=RESOURCES,
            region=opts.region,
        )
        # Whatever came due while stopped runs now (subject to its misfire policy); the rule is
        # re-derived from the table.
        self.worker.invoke_async(
            {"source": constants.WORKER_EVENT_SOURCE, "action": constants.WORKER_EVENT_SYNC}
        )
        endpoints.write(opts.state_dir, self._endpoint_info())
        return self

    def _create_resources(self, clients: dict[str, Any]) -> resources.StackNames:
        """Deploy the CDK app's template into moto."""
        defaults = resources.StackNames(
            table=os.environ.get("NEXTTICK_TABLE") or constants.DEFAULT_TABLE_NAME,
            rule=os.environ.get("NEXTTICK_RULE") or constants.DEFAULT_RULE_NAME,
            worker_function=os.environ.get("NEXTTICK_WORKER_FUNCTION")
            or constants.DEFAULT_WORKER_FUNCTION_NAME,
            source="",
        )
        template = synth_local_template()
        if template is None:
            raise SystemExit(
                "error: the local stack deploys the CDK app's template (infra.synth_template); "
                "run it from a clone of the repository (`make run`)"
            )
        outputs = resources.deploy_template(clients["cloudformation"], template)
        return resources.names_from_stack(clients["cloudformation"], clients["lambda"], outputs, defaults)

    def _endpoint_info(self) -> dict[str, Any]:
        assert self.moto and self.endpoint and self.names
        env = {
            k: v
            for k, v in os.environ.items()
            if k.startswith("NEXTTICK_")
            or k in _FAKE_CREDENTIALS
            or k in ("AWS_REGION", "AWS_DEFAULT_REGION")
        }
        return {
            "pid": os.getpid(),
            "started_at": datetime.now(UTC).isoformat(),
            "api_url": self.api_url,
            "endpoint_url": self.moto.url,
            "lambda_endpoint_url": self.endpoint.url,
            "table": self.names.table,
            "rule": self.names.rule,
            "worker_function": self.names.worker_function,
            "region": self.options.region,
            "state_file": str(self.state_file),
            "env": env,
        }

    # ------------------------------------------------------------------ stop
    def stop(self) -> None:
        """Stop taking work, give running invocations a moment, save the state, stop the servers."""
        endpoints.remove(self.options.state_dir)
        if self.api is not None:
            self.api.shutdown()
        if self.emulator is not None:
            self.emulator.stop()
        if self.endpoint is not None:
            self.endpoint.stop()
        if self.worker is not None and not self.worker.stop(SHUTDOWN_GRACE_SECONDS):
            logger.warning(
                "worker invocations still running at shutdown are abandoned (as at a Lambda timeout)"
            )
        if self._clients is not None and self.names is not None and self.moto is not None:
            self.moto.notifier.freeze()  # abandoned invocations can no longer change the state
            snap = state.snapshot(
                self._clients["dynamodb"], self._clients["events"], self.names.table, self.names.rule
            )
            state.save(self.state_file, snap)
            logger.info("saved %d items and the rule to %s", len(snap["items"]), self.state_file)
        if self.moto is not None:
            self.moto.stop()

    # ------------------------------------------------------------------ banner
    def banner(self) -> str:
        assert self.moto and self.endpoint and self.names
        api = self.api_url
        restored = (
            f"restored {self.restored} items from {self.state_file}" if self.restored else "started empty"
        )
        return f"""
nexttick local stack is running ({restored})
  API          {api}   (GET /health, GET /openapi.json, Swagger UI {api}/docs)
  AWS (moto)   {self.moto.url}   table {self.names.table}, rule {self.names.rule}
  worker       {self.names.worker_function} in-process, Lambda Invoke at {self.endpoint.url}
  resources    {self.names.source}
  state        {self.state_file} (saved on Ctrl-C / SIGTERM)
  endpoints    {self.options.state_dir / endpoints.LOCAL_FILE} (the nexttick CLI uses them)

Try it:
  curl -s -X POST {api}/tasks -H 'content-type: application/json' \\
       -d '{{"action": "log", "delay_seconds": 10, "payload": {{"hello": "world"}}}}'
  nexttick add --action log --in 30s --payload '{{"hello": "again"}}'
  nexttick ls
Stop with Ctrl-C.
"""


def run(options: LocalOptions) -> int:
    """Start the stack, print where it is, run until Ctrl-C / SIGTERM, then stop cleanly."""
    logs.configure(options.log_format)
    # moto names every template resource type it does not emulate (alarms, ...); the stack is fine.
    # Connection-pool warnings come from many threads sharing one client, harmless here.
    for noisy in ("botocore", "pynamodb"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    for noisy in ("moto", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message="Tried to parse AWS::", category=UserWarning)
    warnings.filterwarnings("ignore", message="No application metrics to publish", category=UserWarning)
    stopping = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopping.set())
    stack = LocalStack(options)
    try:
        stack.start()
        print(stack.banner(), flush=True)
        while not stopping.wait(60):
            pass
        print("stopping: saving state ...", flush=True)
    finally:
        stack.stop()
    print(f"stopped; state saved to {stack.state_file}", flush=True)
    return 0
