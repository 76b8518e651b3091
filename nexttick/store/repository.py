"""TaskStore: every DynamoDB read and write nexttick makes, none of them a Scan.

Reads that decide correctness (task by id, queue head, due page, rule state) are strongly
consistent: they all hit base-table items, never a GSI (docs/architecture.md). The store is
assembled from its parts: task items (tasks), the write protocol (writes), queue entries and claims
(queue),
the rule record (rule), run history (runs), the lateness histogram (lateness); items map to records
in mapping.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from nexttick import constants
from nexttick.config import NextTickSettings
from nexttick.store.client import lighten
from nexttick.store.lateness import LatenessStore, LatenessTally
from nexttick.store.models import bind_models
from nexttick.store.rule import RuleStateStore
from nexttick.store.runs import RunStore
from nexttick.store.writes import TaskWrites


class TaskStore(TaskWrites, RuleStateStore, RunStore, LatenessStore):
    """Data access for tasks, queue entries, run records, the rule record and the lateness histogram
    in one table."""

    def __init__(
        self,
        table_name: str,
        *,
        region: str,
        endpoint_url: str | None = None,
        shards: int,
        credentials: tuple[str, str, str | None] | None = None,
        max_pool_connections: int | None = None,
    ) -> None:
        self.table_name = table_name
        self.shards = shards
        self.models = bind_models(
            table_name,
            region=region,
            endpoint_url=endpoint_url,
            credentials=credentials,
            max_pool_connections=max_pool_connections,
        )
        # The models share one table and one connection (one botocore client: a client costs
        # ~0.25 s to build, which every Lambda cold start would pay once per model otherwise).
        connection = self.models.task._get_connection()
        self.models.queue._connection = connection
        self.models.rule._connection = connection
        self.models.run._connection = connection
        self.models.lateness._connection = connection
        lighten(connection.connection.client)
        self._lateness_tally = LatenessTally()  # lateness noted by worker passes, not yet written
        self._pool = ThreadPoolExecutor(
            max_workers=min(constants.MAX_PARALLEL_SHARD_READS, shards), thread_name_prefix="nexttick-shard"
        )

    @classmethod
    def from_settings(
        cls, settings: NextTickSettings, credentials: tuple[str, str, str | None] | None = None
    ) -> TaskStore:
        return cls(
            settings.table_name,
            region=settings.region,
            endpoint_url=settings.endpoint_url,
            shards=settings.queue_shards,
            credentials=credentials,
            max_pool_connections=settings.connection_pool_size,
        )

    def create_table(self) -> None:
        """Create the table on-demand (the CDK construct is the production definition; tests and the
        local stack use this)."""
        model = self.models.task
        if not model.exists():
            model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
