"""Data-access layer: the only code that talks to DynamoDB (PynamoDB models stay in here)."""

from nexttick.store.records import QueueEntry, RuleState, TaskRecord, TaskStatus
from nexttick.store.repository import TaskStore

__all__ = ["QueueEntry", "RuleState", "TaskRecord", "TaskStatus", "TaskStore"]
