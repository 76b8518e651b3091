"""For each headline target that can fall short (by its id in bench/targets.py): why it does, from
measured causes, and what would close it. The report lists these under the headline for each
target not met."""

from __future__ import annotations

WHY: dict[str, str] = {
    "burst": (
        "CPU on this machine's two cores, shared by the worker and the stand-in: a fire costs about "
        "1.5 ms of worker CPU (cpu section: two DynamoDB requests, the claim, whose answer is the "
        "task, and the completion, through the store's light client; the rest the loop, the record "
        "mapping, Powertools logging), and in a 1,000-task pooled run drained in 2.8 s the worker "
        "process used 2.2 s of CPU (its start-up included) and the stand-in 1.8 s (its HTTP "
        "handling and moto's condition evaluation for every request under its one lock). The "
        "machine's own speed moves it: a stock botocore GetItem cost 1.0 ms of CPU in one session "
        "and 3.0 ms in another, and the figure with it. Closing it: less CPU per fire, or what the "
        "design does for large bursts: more invocations (fan-out, below)."
    ),
    "dense units": (
        "a one-shot task created without a client id is one item, its first queue entry: 1 write to "
        "create, 2 to run (the claim, whose answer is the task; the outcome with its run, which ends "
        "the entry): 3.00, and reads are the create's rule-record read and the task's share of the "
        "pass's page and of the re-arm's re-check. What is over 3 is the writes a run and its creates "
        "share: the create's arming of the rule and its confirmation, the lateness histogram's "
        "minute, the re-arm's one write (the shards' raise with the CAS to the epoch) and the "
        "epoch's confirmation — 5 per 1,000 tasks: 3.005. Closing it: more tasks per run; the "
        "epoch's PutRule and confirmation are what the design card asks of an emptied queue."
    ),
    "sparse units": (
        "reads: three of the rule record, a unit each — the create's, the early wake's (the rule's "
        "firing, which hands the wait over) and the keeper's for the create's batch (a batch of "
        "rule-record changes alone compares the rule with its last image and reads nothing; the "
        "invocation the message starts reads nothing either: it starts from the record the message "
        "carries) — and 3 Queries of the task's shard by the invocation that runs it: its pass, its "
        "re-arm, and the re-arm's second read after raising the shard's head (the model checker's "
        "mutant shows it is needed): 6.0, at the target. The claim's answer is the task: no task "
        "read. Writes (8): the create's 3 (the task and its first entry, one item; the head's "
        "lowering folded into the record's CAS; the confirmation), the early wake's none (the "
        "create's PutRule named the armed minute's backstop too, so the rule as it stands backs the "
        "wait up, and the wait is handed over unclaimed) and the run's 5 (claim; outcome, which ends "
        "the entry; lateness minute; the re-arm's one write, the head raise with the CAS to the "
        "epoch; its confirmation — the backstop minute is still ahead, so the epoch is published). "
        "Over the target, look for a write the early wake makes again (a claim, a CAS of the rule) "
        'or a read the continuation makes of the record (docs/architecture.md, "Two firings per '
        'PutRule").'
    ),
    "cost": (
        "DynamoDB is most of it, at 3 write units per task; the rest is the worker's wake-ups in "
        "`second` mode (two invocations, the hand-over's short sleep and its SQS requests, shared by "
        "the tasks of a run). Closing it: fewer write units per task."
    ),
    "waiting": (
        "the hand-over brings the sparse loads under it: $0.63 a month at 1/minute, $0.26 at 1/day "
        "and for the daily burst, nearly all of which is the hand-over queue's event "
        "source mapping polling at rest (five long polls of 20 s at once: 648,000 receives a month, "
        "whatever the load). What misses is 1/second ($17.08) and 100/second ($12.85): a worker "
        "runs tasks all month, and between two of them it waits a second or less, shorter than any "
        "wait worth a message (the lead plus the send's worst case, 6 s), so it sleeps there; "
        "`minute` precision pays about the same ($17.01, $12.89): the price of a worker kept alive "
        "by tasks a second or less apart, not of "
        "the precision. Closing it is not the hand-over's to do (a message per task costs more than "
        "the second it saves); a smaller worker would cut it (the sleeps cost in proportion to its "
        "memory: a quarter at 128 MB, still above $3)."
    ),
    "waiting per task": (
        "at 1/minute each task's wait is handed over, and the invocation its message starts sleeps "
        "the lead (1 s, give or take the half second of rounding the delay to whole seconds) and the "
        "0.5 s it wakes ahead of the task: each second of it costs $6.67 per million tasks at 512 MB. "
        "Then the mapping's polling at rest, $0.26 a month whatever the load ($6.00 per million at "
        "43,200 tasks a month); the message's three requests, $1.20; the invocation's request, $0.20. "
        "Closing it: a shorter lead, or a smaller worker."
    ),
    "idle": (
        "the idle stack's process wakes about once a second: the foreground's check that the "
        "emulator still runs (2 s; a signal wakes it at once), the hand-over's feeder's 20 s long "
        "poll, the keeper's and the emulator's safety re-reads (60 s), its HTTP servers' loops (30 s; "
        "a shutdown wakes them). Each wake-up that makes a request costs tens of milliseconds of CPU "
        "on a slow virtual machine: the figure was 0.1-0.4 % of a core on a quiet machine when the "
        "stack woke ten times a second, 1.3 % on a slow one, 0.7-0.8 % there after the change, and it is "
        "the quietest of three windows because the CPU time charged rises with what else the machine "
        "runs. Closing it: a hand-over feeder woken by the queue's sends instead of long-polling."
    ),
    "fanout": (
        "see the fan-out section: a duplicate or a lost task would be a defect; lost claims come from "
        "invocations that finish their group and probe the others'."
    ),
    "fanout efficiency": (
        "this machine has 2 cores and one invocation with the default pool of 32 already spends most "
        "of one (worker CPU per fire in the fan-out table), so beyond 2 invocations there is no CPU "
        "to scale into: the machine is the limit, not the emulator or the design. The pool-2 series "
        "(each invocation waiting on I/O) shows how the fan-out scales while CPU is free."
    ),
    "worker cpu": (
        "the figure is each sandbox's process CPU over the fires, its action's thread (a 50 ms sleep "
        "and a log line per fire) and its start-up passes included: 1.7-2.1 ms per fire with one "
        "invocation by the day, 2.3-3.0 ms when 4 sandboxes and the stand-in share this machine's "
        "2 cores (what grows with the invocations was not measured apart). The handler alone, with a "
        "`log` action and the stand-in in its own process, spends 1.3-1.4 ms (cpu section): about "
        "0.6 ms in its two requests (the claim and the completion, through the store's light "
        "client) and 0.7 ms in the rest (the record mapping, the loop, logging and metrics, the "
        "pool's threads). Closing it: less CPU outside the requests, and a sandbox that stays at "
        "its one-invocation figure when others run beside it."
    ),
    "local burst": (
        "the local stack's emulator is the limit: every fire is at least two UpdateItems (the claim "
        "and the completion; a task with a client-chosen id, as the bench's are, also has its task "
        "item read and replaced and its entry deleted), all served by one moto process. Side by "
        "side in one session (ad hoc, 1,000 tasks each): the last started 22-29 s late in four "
        "runs with client-chosen ids (the bench's among them), 36 s in two without, and moto's "
        "process spent 15-30 s of CPU over the drain against the stack's 6-9 s. Sampled with "
        "py-spy (`--gil`) during a drain, "
        "half of moto's time holding the GIL was UpdateItem, a fifth of it moto's update "
        "validation and a seventh deep copies of the item. 300 tasks drain in about 3.5 s. Under "
        "the latency model, where the stand-in answers without HTTP per request, the same 1,000 "
        "drain in 3.2 s (the burst row above). This section ran on a day the machine was "
        "slower than for the others: the cpu section, run the same hour, gave 3.85 ms of CPU per "
        "fire against the 1.38 ms in its table. On that faster day 300 tasks took 3.5 s: at that "
        "rate 1,000 would take about 12 s, still over 5 s. Closing it: an emulator with "
        "less CPU per UpdateItem."
    ),
    "fanout projected": (
        "Lambda gives a 512 MB function about 0.29 vCPU, so the CPU per fire bounds one invocation: "
        "the projection takes the most the fan-out measured (1.7-2.1 ms per fire in one invocation "
        "with the pool of 32, 2.4-3.0 ms when 4 sandboxes and the stand-in share the 2 cores), 97-123 "
        "fires per second per invocation by the day: 8 invocations reached 1,000 on a quick day, 11 "
        "on a slow one (the same code). 1,000 fires/s with margin needs more "
        "invocations (`max_invocations` and reserved concurrency), more memory per invocation (its "
        "CPU share; the projection table lists 1,769 MB), or less CPU per fire."
    ),
    "list page": (
        "a page reads the same items whatever the backlog (one round of 16 Queries, about 50 queue "
        "entries, and the page's tasks in one BatchGetItem), and its time no longer grows with the "
        "backlog either: the emulator keeps each partition's keys sorted and stops a Query at its "
        "Limit, as DynamoDB does (local/moto_query.py; before it, moto sorted a whole queue shard "
        "per Query: 0.69 s per page at 1e5 pending). What is left is the page's 17 requests through "
        "the store's client and in-process moto, a few ms each (`moto_query_s`). Closing it: a page that "
        "queries only the shards that hold pending work, which the per-shard cursors of the hot-path "
        "change would tell it."
    ),
    "local load": (
        "the load saturates the machine, and 20 closed-loop clients without think time turn any "
        "shortfall of throughput into queueing: p99 <= 200 ms needs at least 100 operations a "
        "second (Little's law: 20 clients / 0.2 s), so at most 20 ms of CPU per operation on the "
        "2 cores, everything included. One client alone takes ~27 ms of wall time per operation "
        "of the mix (create 21, get 7, list page 78, reschedule 26 ms), and under the load the "
        "stack spends ~137 ms of CPU per operation: in one 20 x 100 run (184 s) moto's process "
        "used 170 s, the stack's (API, worker, keeper) 97 s, the clients 7 s. In another, moto "
        "answered ~55,000 requests (25,400 Queries, 12,400 GetItems, 11,500 UpdateItems, 3,400 PutItems), "
        "most of them the worker's: tasks due 2-20 s after their create keep a `second`-mode "
        "worker waking for each instant (2,289 wait claims for 950 tasks, each cycle a pass and a "
        "re-arm that read the due shards and the record), and 661 of the ~1,200 creates and "
        "reschedules invoked the worker directly, landing while no published wait claim covered "
        "them: the waiter released its claim at its wake. It now keeps it through its passes "
        "(bench/shortnotice.py, simulated AWS, 120 tasks created 10 s ahead: 130 worker "
        "invocations -> 2); one local load run after it, with other work on the machine, showed no "
        "change in latency. "
        "Done so far: moto in its own "
        "process (API p99 60 s -> ~6 s, connection errors 25 -> 0), the worker reads only the "
        "shards whose recorded head is due, the local keeper reads the stream at most once per "
        "0.25 s (moto's requests 60,000 -> 45,000 on the day), and the server keeps connections "
        "alive (local/keepalive.py: werkzeug closed each after its answer and first waited 10 ms "
        "for more input; side by side, API p50 2.43 -> 1.81 s, lateness p99 2.1 -> 1.04 s). "
        "Closing it needs several times less CPU per operation in every part at once: the "
        "emulator (sampled under the load: werkzeug's and Flask's request handling ~40 % of "
        "moto's time, its dispatch and parsing ~15 %, the DynamoDB operations ~37 %), the API "
        "handler, and the worker's requests per short-notice task; then several API execution "
        "environments, as Lambda scales out (the local API runs one request at a time, as one "
        "execution environment does: local/handlers.py, `one_at_a_time`)."
    ),
    "bench time": (
        "22 minutes of sections on this machine (27 before the backlog's items were built in the "
        "wire format, 34 before the monthly bill and the lateness section were cut). What is left: "
        "lateness, 200 tasks over 5 minutes behind a lead of 85-145 s, then the `minute` stack's "
        "last delivery (fixed by its target); the backlog's million pending tasks loaded into moto "
        "in-process (moto typing each attribute); the burst's sequential baseline (1,000 x ~96 ms) "
        "and its 5,000-task peak; the fan-out's six drains, each with its stand-in and sandbox "
        "processes. A slower day adds minutes: sections side by side on more cores would keep it "
        "under."
    ),
    "cold start": (
        "this machine's speed moves it more than the code: the same files measured API 353, keeper "
        "233, worker 257 ms in one session and API 456, keeper 369, worker 499 ms in the next (the "
        "keeper's import, unchanged, 1.6x slower). Side by side in one run, the API's import is 0.90x "
        "what it was before its OpenAPI models (about a fifth of it) moved to the first request for a "
        "document. No handler imports the X-Ray SDK (with `tracing` off, the default) nor boto3 "
        "(clients come from botocore sessions). What is left is common to all three: botocore's "
        "client machinery (it imports its documentation builders with the client module), pydantic "
        "and pydantic-settings; the API adds Powertools' event handler and its validation models. "
        "Closing it: settings parsed without pydantic-settings, a client without botocore's "
        "documentation imports."
    ),
}
