"""Names and fixed values shared by the runtime, the local stack and the CDK app (one place)."""

from __future__ import annotations

APP_NAME = "nexttick"

# Default resource names (override through NextTickSettings / CDK context).
DEFAULT_TABLE_NAME = "nexttick-tasks"
DEFAULT_RULE_NAME = "nexttick-next-due"
DEFAULT_WORKER_FUNCTION_NAME = "nexttick-worker"
DEFAULT_API_FUNCTION_NAME = "nexttick-api"
DEFAULT_REGION = "us-east-1"

# Table key schema (see docs/architecture.md, "Data model").
PARTITION_KEY = "pk"
SORT_KEY = "sk"
TTL_ATTRIBUTE = "expires_at"
TASK_PK_PREFIX = "T#"
TASK_SK = "T"
QUEUE_PK_PREFIX = "Q#"
# Paused tasks' entries: same layout as the queue, in partitions no worker reads.
PARKED_PK_PREFIX = "P#"
RULE_STATE_PK = "RULE"
RULE_STATE_SK = "STATE"
# A task's run records share its partition: `R#<slot>`, a ring of the task's last runs.
RUN_SK_PREFIX = "R#"

# The number of queue shards is part of the data layout: changing it strands queue entries.
DEFAULT_QUEUE_SHARDS = 16
# A pass claims an occurrence (and reads its task) up to CLAIM_AHEAD_SECONDS before it is due, so
# that at the instant only its action is left; a cancel is certain to stop an occurrence only
# before that. A worker waiting for the head wakes WAKE_AHEAD_SECONDS before it, so its pass also
# claims what is due in the half second after the head: a task due just after another starts on
# time, not when the pass that ran the other has finished and the next one has read and claimed it.
CLAIM_AHEAD_SECONDS = 1.0
WAKE_AHEAD_SECONDS = 0.5
# A compare-and-set loop (the editor's changes, the worker's completion) reads and writes again at
# most this many times when another writer keeps moving the task's version.
MAX_CAS_ATTEMPTS = 20
# The store reads at most this many shards at once (one thread and one connection each).
MAX_PARALLEL_SHARD_READS = 16

# EventBridge: a year-pinned cron in 1970 never fires; it is the "nothing pending" position.
EPOCH_EXPRESSION = "cron(0 0 1 1 ? 1970)"
RULE_DESCRIPTION_PREFIX = "nexttick: next firing"

# Event sent to the worker by editors (direct invoke) and by deploy/sync.
WORKER_EVENT_SOURCE = "nexttick"
WORKER_EVENT_WAKE = "wake"
WORKER_EVENT_SYNC = "sync"
# Sent by a worker to the helper invocations it starts for a burst, each with its group of shards.
WORKER_EVENT_HELP = "help"
# The body of the delayed SQS message a worker sends instead of sleeping through a long wait: the
# invocation it starts (the queue's event source mapping) sleeps the rest and runs the head.
WORKER_EVENT_HANDOVER = "handover"
# SQS delays a message by at most this many seconds.
MAX_HANDOVER_DELAY_SECONDS = 900

# Limits of the public contract (README, "HTTP API"): the API's models declare them (and so the
# OpenAPI document), the editor library enforces them for callers that never pass the API.
MAX_PAYLOAD_BYTES = 256 * 1024
# A payload serialised larger than this is kept in an item of its own (`T#<id>`/`P#<ref>`), written
# once: the task's item stays small, and a claim or a completion (billed by the size of the item it
# writes) costs the same whatever the payload.
INLINE_PAYLOAD_BYTES = 256
PAYLOAD_SK_PREFIX = "P#"
# Levels of objects/arrays in a payload, the payload object itself being the first: what is accepted
# must stay readable (every reader and serialiser recurses per level).
MAX_PAYLOAD_DEPTH = 32
TASK_ID_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"
MIN_YEAR = 1970
MAX_YEAR = 2199
# Any delay or interval: a later instant is past MAX_YEAR anyway (and may overflow a datetime).
MAX_SPAN_SECONDS = 200 * 366 * 86400
MIN_EVERY_SECONDS = 1
MIN_ATTEMPTS = 1
MAX_ATTEMPTS = 100
MAX_RETRY_BACKOFF_SECONDS = 86400
MAX_MISFIRE_GRACE_SECONDS = 366 * 86400
MAX_PAGE_SIZE = 500
MAX_RUNS_PAGE_SIZE = 100
# The lateness histogram's window: its items live two days; a day is what one read may cover.
MAX_LATENESS_MINUTES = 1440
# Lengths of the API's string fields.
MAX_ACTION_LENGTH = 256
MAX_CRON_LENGTH = 256
MAX_TIMEZONE_LENGTH = 64
MAX_INSTANT_LENGTH = 64
MAX_DURATION_LENGTH = 64

# Metrics the worker emits, which the dashboard and alarms (infra/monitoring.py) read.
METRIC_RUNS = "runs"  # occurrences executed (succeeded, failed or retrying)
METRIC_FAILURES = "failures"  # failed attempts, including ones that will be retried
METRIC_SKIPS = "skips"  # occurrences skipped by their misfire grace
METRIC_LATENESS = "lateness"  # ms between due and start
METRIC_BATCH_SIZE = "batch_size"  # occurrences started by one worker run
METRIC_LATE_RUNS = "late_runs"  # occurrences executed more than LATE_RUN_THRESHOLD_SECONDS late
LATE_RUN_THRESHOLD_SECONDS = 1.0

# The lateness histogram (nexttick/store/lateness.py): pk `L#<YYYY-MM-DDTHH>` (UTC hour), sk `<MM>`.
LATENESS_PK_PREFIX = "L#"
# A worker pass writes the lateness it noted once the oldest of it has waited this long (real
# seconds), and an invocation writes the rest when it ends: a waiter passing twice a second writes
# a few times a minute, not once per run, and the histogram lags the runs by at most this.
LATENESS_FLUSH_SECONDS = 10.0
