"""Data-access layer: the only code that talks to DynamoDB (PynamoDB models stay in here)."""

from nexttick.store.failures import AWS_FAILURES, aws_cause
from nexttick.store.mapping import rule_state_message, rule_state_of_message
from nexttick.store.records import QueueEntry, RuleState, TaskRecord, TaskStatus
from nexttick.store.repository import TaskStore
from nexttick.store.writes import Pointer, TaskExistsError

__all__ = [
    "AWS_FAILURES",
    "Pointer",
    "QueueEntry",
    "RuleState",
    "TaskExistsError",
    "TaskRecord",
    "TaskStatus",
    "TaskStore",
    "aws_cause",
    "rule_state_message",
    "rule_state_of_message",
]
