"""nexttick editor library: schedule work for a future time and manage it.

from editor import Editor
ed = Editor.from_env()               # NEXTTICK_TABLE, NEXTTICK_RULE, NEXTTICK_WORKER_FUNCTION, AWS_REGION
task = ed.schedule_in("log", 3 * 86400, {"to": "ada@example.com"})
ed.reschedule(task.id, due="2030-12-01T09:00:00+01:00")
ed.runs(task.id)                     # its run history, newest first, with its lateness
ed.upcoming(task.id, count=5)        # its next occurrences, with DST marks
ed.cancel(task.id)
"""

from editor.client import Editor
from editor.inputs import TaskChanges, TaskSpec
from editor.models import (
    CreateResult,
    Lateness,
    Page,
    Preview,
    Run,
    RunPage,
    Task,
    Upcoming,
    UpcomingRuns,
    as_json,
)
from editor.specs import LISTABLE_STATUSES, QUEUED_STATUSES, TIME_FIELDS
from nexttick.errors import (
    ConflictError,
    NextTickError,
    PayloadTooLargeError,
    TaskNotFoundError,
    UnknownActionError,
    ValidationError,
    VersionMismatchError,
)
from nexttick.store import AWS_FAILURES, TaskStatus

__all__ = [
    "AWS_FAILURES",
    "LISTABLE_STATUSES",
    "QUEUED_STATUSES",
    "TIME_FIELDS",
    "ConflictError",
    "CreateResult",
    "Editor",
    "Lateness",
    "NextTickError",
    "Page",
    "PayloadTooLargeError",
    "Preview",
    "Run",
    "RunPage",
    "Task",
    "TaskChanges",
    "TaskNotFoundError",
    "TaskSpec",
    "TaskStatus",
    "UnknownActionError",
    "Upcoming",
    "UpcomingRuns",
    "ValidationError",
    "VersionMismatchError",
    "as_json",
]
