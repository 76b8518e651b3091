"""`nexttick local`: moto server (in a process of its own, with the journal) + resources + worker
and API handlers in-process + emulated EventBridge and the keeper's and hand-over's triggers, with
every acknowledged change journaled and the state restored on start."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import IO, Any

import boto3

from local import endpoints, handlers, preflight, resources, state
from local.emulator import EventBridgeEmulator, FiringPolicy
from local.handover import LocalHandover
from local.keeper import LocalKeeper
from local.lambdas import InvokeEndpoint, LocalFunction, SleepCountingClock
from local.motoprocess import EmulatorError, MotoProcess
from local.motoserver import FROZEN_PASS_HEADER
from local.options import EMULATOR_CREDENTIALS, LocalOptions, drop_profile
from nexttick import constants

logger = logging.getLogger("local-stack")  # no "nexttick" in the name: Powertools filters those from root

HANDOVER_JOIN_SECONDS = 5.0  # for the hand-over's poll to end once the emulator has stopped


def _mark_snapshot_request(request: Any, **_: Any) -> None:
    request.headers[FROZEN_PASS_HEADER] = "1"


def _use_emulator_credentials(region: str) -> None:
    """Nothing in this process may reach real AWS: fake credentials, before any client exists."""
    drop_profile()
    os.environ.update(EMULATOR_CREDENTIALS)
    os.environ["AWS_REGION"] = os.environ["AWS_DEFAULT_REGION"] = region


def _emulator_clients(moto_url: str, region: str) -> dict[str, Any]:
    """The stack's own clients of the emulator; their calls pass a frozen server (the snapshot)."""
    session = boto3.session.Session(region_name=region)
    clients = {
        service: session.client(service, endpoint_url=moto_url)
        for service in ("dynamodb", "events", "cloudformation", "lambda")
    }
    for client in clients.values():
        client.meta.events.register("before-sign", _mark_snapshot_request)
    return clients


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
        self.handover: LocalHandover | None = None
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
        _use_emulator_credentials(opts.region)
        # moto's CPU must not hold this process's GIL (the API, the worker, the emulated EventBridge)
        self.moto = moto = MotoProcess(opts.moto_port).start()
        clients = _emulator_clients(moto.url, opts.region)
        self.names = deployed = resources.deploy_local_template(
            clients["cloudformation"], clients["lambda"], progress
        )
        self.endpoint = InvokeEndpoint([], port=opts.lambda_port)
        self.actions = handlers.configure(
            opts, moto_url=moto.url, lambda_url=self.endpoint.url, deployed=deployed, clock=self.clock
        )
        self.restored_tasks = self._restore(moto, deployed, progress)
        self._clients = clients  # from here on the table holds the whole state: stop() saves it
        self.worker = handlers.start_worker(opts, self.endpoint, deployed)
        self.emulator = self._start_eventbridge(moto, clients["events"], deployed.rule, self.worker)
        # The keeper keeps what is written from here on; the sync invocation below covers the restore.
        keeper = LocalKeeper.for_stack(moto, clients["cloudformation"], deployed.table, opts.region)
        self.keeper = keeper.start()
        # The hand-over queue's trigger: a worker that handed its wait over is continued on time.
        handover = LocalHandover.for_stack(moto.url, opts.region, self.worker)
        self.handover = handover.start() if handover is not None else None
        self.api = handlers.serve_api(opts)
        # Whatever came due while stopped runs now (subject to its misfire policy); the rule is
        # re-derived from the table.
        self.worker.invoke_async(
            {"source": constants.WORKER_EVENT_SOURCE, "action": constants.WORKER_EVENT_SYNC}
        )
        endpoints.write(opts.state_dir, self._endpoint_info())
        self._published = True
        return self

    def _restore(
        self, moto: MotoProcess, deployed: resources.StackNames, progress: Callable[[str], None]
    ) -> int:
        """The snapshot plus the journal after it, straight into moto (neither journaled nor timed
        by the server); from here on every acknowledged write is journaled before its response.
        How many tasks were restored."""
        opts = self.options
        return moto.recover(
            opts.state_dir,
            region=opts.region,
            table=deployed.table,
            rule=deployed.rule,
            now=time.time(),
            fresh=not opts.restore,
            progress=progress,
        )

    def _start_eventbridge(
        self, moto: MotoProcess, events: Any, rule: str, worker: LocalFunction
    ) -> EventBridgeEmulator:
        """The emulated EventBridge: fires the rule at the worker, told of each rule change."""
        opts = self.options
        emulator = EventBridgeEmulator(
            events,
            rule,
            worker.invoke_async,
            policy=FiringPolicy(jitter=opts.jitter, max_delivery_delay=opts.max_delivery_delay),
        )
        moto.subscribe(emulator.notify)
        emulator.start()
        return emulator

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
        """Stop taking work, wake sleeping worker invocations (they end at once), give delivering
        ones a moment, save the state, stop the servers. Touches the state directory only if this
        stack started far enough to own it; True when the state was saved."""
        from nexttick.worker import drain as worker_drain

        # Worker invocations claim nothing more: the grace below goes to the occurrences they hold.
        worker_drain.stop_claiming()
        try:
            if self._published:
                endpoints.remove(self.options.state_dir)
            self.phase = "closing the API and the emulated EventBridge"
            if self.api is not None:
                self.api.shutdown()
            # What invokes the worker invokes it no more.
            for trigger in (self.emulator, self.keeper, self.handover):
                if trigger is not None:
                    trigger.stop()
            if self.endpoint is not None:
                self.endpoint.stop()
            if self.worker is not None:
                self.phase = (
                    f"waiting up to {self.options.stop_grace:g} s for worker invocations that are delivering "
                    "tasks (running now: {running}, of which sleeping: {sleeping})"
                )
                self.clock.wake()  # a sleeper would otherwise wake later, into a stopped emulator
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
            saved = self._save()
            self.phase = "stopping the emulator"
            if self.moto is not None:
                self.moto.stop()  # closes the journal too, and ends the hand-over's poll
            if self.handover is not None and not self.handover.join(HANDOVER_JOIN_SECONDS):
                logger.warning("the hand-over queue's poll did not end with the emulator")
            if self._lock is not None:
                self._lock.close()
        finally:
            worker_drain.resume()  # for a stack started next in this process, even after a failed stop
        return saved

    def _save(self) -> bool:
        """Freeze the emulator and fold its journal into a snapshot, if this stack got as far as
        owning the state; whether it did."""
        if self._clients is None or self.names is None or self.moto is None:
            return False
        self.phase = f"saving the state to {self.state_file}"
        try:
            self.moto.freeze()  # abandoned invocations can no longer change the state
            self.moto.compact()  # the whole state in state.json, the journal emptied
            return True
        except EmulatorError:
            # What it acknowledged is in the journal, replayed at the next start.
            logger.exception("the emulator could not save the state")
            return False

    def emulator_running(self) -> bool:
        """Whether the emulator process is still there (what it acknowledged is journaled if not)."""
        return self.moto is not None and self.moto.running()

    def stopping_status(self) -> str:
        """What a stop in progress is waiting for (printed on a second Ctrl-C)."""
        worker = self.worker
        running = worker.running() if worker is not None else 0
        return self.phase.format(running=running, sleeping=self.clock.sleeping())

    # ------------------------------------------------------------------ banner
