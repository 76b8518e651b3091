"""`nexttick local`: moto server (in a process of its own, with the journal) + resources + worker
and API handlers in-process + emulated EventBridge, with every acknowledged change journaled and
the state restored on start."""

from __future__ import annotations

import importlib
import logging
import os
import signal
import sys
import time
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from typing import IO, Any

import boto3

from infra import names
from local import endpoints, logs, preflight, resources, state
from local.emulator import EventBridgeEmulator, FiringPolicy
from local.keeper import LocalKeeper
from local.lambdas import ASYNC_RETRY_DELAYS, InvokeEndpoint, LocalFunction, SleepCountingClock
from local.motoprocess import EmulatorError, MotoProcess
from local.motoserver import FROZEN_PASS_HEADER
from local.options import (
    DEFAULT_CONCURRENCY,
    DEFAULT_WORKER_TIMEOUT_SECONDS,
    EMULATOR_CREDENTIALS,
    LocalOptions,
    drop_profile,
    handler_environment,
)
from nexttick import constants
from nexttick.config import get_settings
from nexttick.runtime import Runtime

logger = logging.getLogger("local-stack")  # no "nexttick" in the name: Powertools filters those from root


def _mark_snapshot_request(request: Any, **_: Any) -> None:
    request.headers[FROZEN_PASS_HEADER] = "1"


def _load(handler: str, name: str | None = None) -> Any:
    """What a Lambda handler setting (`lambdas/worker/handler.handler`) names, imported as Lambda
    imports it; `name` picks another attribute of the same module."""
    module, _, function = handler.rpartition(".")
    return getattr(importlib.import_module(module.replace("/", ".")), name or function)


# How often the idle main thread looks for a stop request (a stop starts at most this late).
STOP_POLL_SECONDS = 0.2


def synth_local_template(progress: Callable[[str], None]) -> dict[str, Any]:
    """The CDK app's template for the emulator (synthesized once, then cached by the CDK app)."""
    from infra import synth_template

    return synth_template(local=True, announce=progress)


class LocalStack:
    """Everything `nexttick local` runs: moto and its journal in a child process (local/motoprocess.py),
    the rest in this one. `start()`, then `stop()` (saves state). Start it from the thread that
    stays alive while it runs (the main thread): the child is killed when that thread ends."""

    def __init__(self, options: LocalOptions) -> None:
        self.options = options
        self.state_file = options.state_dir / state.STATE_FILE
        self.moto: MotoProcess | None = None
        self.endpoint: InvokeEndpoint | None = None
        self.worker: LocalFunction | None = None
        self.emulator: EventBridgeEmulator | None = None
        self.keeper: LocalKeeper | None = None
        self.api: Any = None
        self.names: resources.StackNames | None = None
        self.restored_tasks = 0
        self.actions: list[str] = []
        self.clock = SleepCountingClock()
        self.phase = "starting"
        self._lock: IO[str] | None = None
        self._clients: dict[str, Any] | None = None
        self._published = False

    @property
    def api_url(self) -> str:
        return str(self.api.url).rstrip("/")

    # ------------------------------------------------------------------ start
    def start(self, progress: Callable[[str], None] = lambda _: None) -> LocalStack:
        """Refuse to start (preflight.StartupError) before touching anything when the state directory is in
        use, a port is taken or the actions are invalid; otherwise bring everything up."""
        opts = self.options
        self._lock = preflight.hold_state_dir(opts.state_dir)
        preflight.check_ports_free(opts)
        # Nothing in this process may reach real AWS: fake credentials, before any client exists.
        drop_profile()
        os.environ.update(EMULATOR_CREDENTIALS)
        os.environ["AWS_REGION"] = os.environ["AWS_DEFAULT_REGION"] = opts.region
        # moto's CPU must not hold this process's GIL (the API, the worker, the emulated EventBridge)
        self.moto = MotoProcess(opts.moto_port).start()
        session = boto3.session.Session(region_name=opts.region)
        clients = {
            s: session.client(s, endpoint_url=self.moto.url)
            for s in ("dynamodb", "events", "cloudformation", "lambda")
        }
        for client in clients.values():  # the stack's own calls pass a frozen server (snapshot)
            client.meta.events.register("before-sign", _mark_snapshot_request)
        self.names = deployed = self._create_resources(clients, progress)
        self.endpoint = InvokeEndpoint([], port=opts.lambda_port)
        os.environ.update(
            handler_environment(
                opts,
                moto_url=self.moto.url,
                lambda_url=self.endpoint.url,
                names={
                    "table": deployed.table,
                    "rule": deployed.rule,
                    "worker_function": deployed.worker_function,
                },
                function_env=deployed.worker_environment,
                environ=os.environ,
            )
        )
        get_settings.cache_clear()
        settings, registry = preflight.validated_handler_settings()
        self.actions = [f"{name} ({action.kind})" for name, action in sorted(registry.actions.items())]
        # The worker sleeps on a clock the stack can see: an invocation that only sleeps is not
        # waited for at shutdown.
        _load(names.WORKER_HANDLER, "use")(Runtime.build(settings, clock=self.clock), registry)
        # The snapshot plus the journal after it, straight into moto (neither journaled nor timed
        # by the server); from here on every acknowledged write is journaled before its response.
        self.restored_tasks = self.moto.recover(
            opts.state_dir,
            region=opts.region,
            table=deployed.table,
            rule=deployed.rule,
            now=time.time(),
            fresh=not opts.restore,
            progress=progress,
        )
        self._clients = clients  # from here on the table holds the whole state: stop() saves it
        timeout = opts.worker_timeout or deployed.worker_timeout or DEFAULT_WORKER_TIMEOUT_SECONDS
        self.worker = LocalFunction(
            deployed.worker_function,
            _load(names.WORKER_HANDLER),
            timeout_seconds=timeout,
            region=opts.region,
            concurrency=opts.concurrency or deployed.reserved_concurrency or DEFAULT_CONCURRENCY,
            retry_delays=ASYNC_RETRY_DELAYS[: deployed.async_retries]
            if deployed.async_retries is not None
            else ASYNC_RETRY_DELAYS,
        )
        self.endpoint.functions[self.worker.name] = self.worker
        self.endpoint.start()
        self.emulator = EventBridgeEmulator(
            clients["events"],
            deployed.rule,
            self.worker.invoke_async,
            policy=FiringPolicy(jitter=opts.jitter, max_delivery_delay=opts.max_delivery_delay),
        )
        self.moto.subscribe(self.emulator.notify)
        self.emulator.start()
        # The keeper keeps what is written from here on; the sync invocation below covers the restore.
        keeper = LocalKeeper.for_stack(self.moto, clients["cloudformation"], deployed.table, opts.region)
        self.keeper = keeper.start()
        from lambdas.api.app import RESOURCES
        from local.gateway import serve

        self.api = serve(
            _load(names.API_HANDLER),
            "127.0.0.1",
            opts.api_port,
            # one request per execution environment at a time, as in Lambda (local/gateway.py)
            one_at_a_time=True,
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
        self._published = True
        return self

    def _create_resources(
        self, clients: dict[str, Any], progress: Callable[[str], None]
    ) -> resources.StackNames:
        """Deploy the CDK app's template into moto."""
        defaults = resources.StackNames(
            table=os.environ.get("NEXTTICK_TABLE") or constants.DEFAULT_TABLE_NAME,
            rule=os.environ.get("NEXTTICK_RULE") or constants.DEFAULT_RULE_NAME,
            worker_function=os.environ.get("NEXTTICK_WORKER_FUNCTION")
            or constants.DEFAULT_WORKER_FUNCTION_NAME,
            source="",
        )
        template = synth_local_template(progress)
        progress("deploying the template into the emulator ...")
        outputs = resources.deploy_template(clients["cloudformation"], template)
        return resources.names_from_stack(clients["cloudformation"], clients["lambda"], outputs, defaults)

    def _endpoint_info(self) -> dict[str, Any]:
        assert self.moto and self.endpoint and self.names
        env = {
            k: v
            for k, v in os.environ.items()
            if k.startswith("NEXTTICK_")
            or k in EMULATOR_CREDENTIALS
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
    def stop(self) -> bool:
        """Stop taking work, give delivering invocations a moment (sleeping ones hold nothing and
        are not waited for), save the state, stop the servers. Touches the state directory only if
        this stack started far enough to own it; True when the state was saved."""
        from nexttick.worker import drain as worker_drain

        # Worker invocations claim nothing more: the grace below goes to the occurrences they hold.
        worker_drain.stop_claiming()
        if self._published:
            endpoints.remove(self.options.state_dir)
        self.phase = "closing the API and the emulated EventBridge"
        if self.api is not None:
            self.api.shutdown()
        if self.emulator is not None:
            self.emulator.stop()
        if self.keeper is not None:
            self.keeper.stop()
        if self.endpoint is not None:
            self.endpoint.stop()
        if self.worker is not None:
            self.phase = (
                f"waiting up to {self.options.stop_grace:g} s for worker invocations that are delivering "
                "tasks (running now: {running}, of which sleeping: {sleeping})"
            )
            if not self.worker.stop(self.options.stop_grace, resumable=self.clock.sleeping):
                logger.warning(
                    "worker invocations still delivering at shutdown are abandoned (as at a Lambda "
                    "timeout); their occurrences run again after the claim lease"
                )
            # A delivery that has happened is recorded before the state is frozen (or it would run
            # again after the restart).
            self.phase = "recording the completions of deliveries that have finished"
            if not worker_drain.wait_for_completions(worker_drain.COMPLETION_GRACE_SECONDS):
                logger.warning("a completion could not be recorded before shutdown; it runs again")
        saved = False
        if self._clients is not None and self.names is not None and self.moto is not None:
            self.phase = f"saving the state to {self.state_file}"
            try:
                self.moto.freeze()  # abandoned invocations can no longer change the state
                self.moto.compact()  # the whole state in state.json, the journal emptied
                saved = True
            except EmulatorError:
                # What it acknowledged is in the journal, replayed at the next start.
                logger.exception("the emulator could not save the state")
        self.phase = "stopping the emulator"
        if self.moto is not None:
            self.moto.stop()  # closes the journal too
        if self._lock is not None:
            self._lock.close()
        worker_drain.resume()  # for a stack started next in this process
        return saved

    def emulator_running(self) -> bool:
        """Whether the emulator process is still there (what it acknowledged is journaled if not)."""
        return self.moto is not None and self.moto.running()

    def stopping_status(self) -> str:
        """What a stop in progress is waiting for (printed on a second Ctrl-C)."""
        worker = self.worker
        running = worker.running() if worker is not None else 0
        return self.phase.format(running=running, sleeping=self.clock.sleeping())

    # ------------------------------------------------------------------ banner
    def banner(self) -> str:
        assert self.moto and self.endpoint and self.names
        api = self.api_url
        restored = (
            f"restored {self.restored_tasks} task{'s' * (self.restored_tasks != 1)} from {self.state_file}"
            if self.restored_tasks
            else "started empty"
        )
        return f"""
nexttick local stack is running ({restored})
  API          {api}   (GET /health, GET /openapi.json, Swagger UI {api}/docs)
  AWS (moto)   {self.moto.url}   table {self.names.table}, rule {self.names.rule} (own process)
  worker       {self.names.worker_function} in-process, Lambda Invoke at {self.endpoint.url}
  actions      {", ".join(self.actions)}   (add your own with NEXTTICK_ACTIONS)
  resources    {self.names.source}
  state        {self.state_file} (every change journaled beside it; survives kill -9)
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
    stack = LocalStack(options)
    # The signal handler touches no lock (an Event or a buffered print there can deadlock with the
    # main thread holding the same lock): it sets a flag, and writes its status line straight to
    # the file descriptor. The idle wait polls the flag: a signal that lands just before a long
    # sleep begins (or on another thread) would not cut that sleep short.
    signals = {"stop": False}

    def on_signal(*_: Any) -> None:
        if signals["stop"]:
            os.write(sys.stdout.fileno(), f"still stopping: {stack.stopping_status()}\n".encode())
            return
        signals["stop"] = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)

    def progress(message: str) -> None:
        print(f"nexttick local: {message}", flush=True)

    emulator_lost = False
    try:
        try:
            stack.start(progress)
        except preflight.StartupError as exc:
            print(f"error: {exc.message}", file=sys.stderr, flush=True)
            return exc.code
        print(stack.banner(), flush=True)
        while not signals["stop"] and stack.emulator_running():
            time.sleep(STOP_POLL_SECONDS)
        if not signals["stop"]:
            print("error: the emulator process ended; stopping", file=sys.stderr, flush=True)
            emulator_lost = True
        print("stopping (Ctrl-C again to see what it waits for) ...", flush=True)
    finally:
        saved = stack.stop()
    if saved:
        print(f"stopped; state saved to {stack.state_file}", flush=True)
    return 1 if emulator_lost else 0
