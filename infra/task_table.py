"""The task table: one DynamoDB table holding tasks, queue entries and the rule record, with a
stream (new and old images) that the keeper reads."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra import names
from infra.config import InfraConfig
from nexttick import constants


class TaskTable(Construct):
    """Keys pk/sk (strings), no secondary index: every correctness-critical read is a strongly
    consistent base-table query. On-demand or provisioned with auto scaling (`capacity`), TTL on
    `expires_at`, PITR, deletion protection, RETAIN.
    The stream carries both images: the keeper tells a moved due time or armed minute from a
    change that leaves them alone (reading a stream from Lambda is free)."""

    def __init__(self, scope: Construct, construct_id: str, *, config: InfraConfig) -> None:
        super().__init__(scope, construct_id)
        provisioned = config.capacity == "provisioned"
        self.table = dynamodb.Table(
            self,
            "Table",
            table_name=config.resource_names.table,
            partition_key=dynamodb.Attribute(
                name=constants.PARTITION_KEY, type=dynamodb.AttributeType.STRING
            ),
            sort_key=dynamodb.Attribute(name=constants.SORT_KEY, type=dynamodb.AttributeType.STRING),
            billing_mode=(
                dynamodb.BillingMode.PROVISIONED if provisioned else dynamodb.BillingMode.PAY_PER_REQUEST
            ),
            read_capacity=config.read_capacity.min if provisioned else None,
            write_capacity=config.write_capacity.min if provisioned else None,
            time_to_live_attribute=constants.TTL_ATTRIBUTE,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection=True,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            removal_policy=RemovalPolicy.RETAIN,
            stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
        )
        if provisioned:
            target = config.capacity_target_utilization
            reads = self.table.auto_scale_read_capacity(
                min_capacity=config.read_capacity.min, max_capacity=config.read_capacity.max
            )
            reads.scale_on_utilization(target_utilization_percent=target)
            writes = self.table.auto_scale_write_capacity(
                min_capacity=config.write_capacity.min, max_capacity=config.write_capacity.max
            )
            writes.scale_on_utilization(target_utilization_percent=target)

    def grant_task_access(self, grantee: iam.IGrantable) -> None:
        """Exactly the item-level actions the store issues, on the table only (no index, no Scan)."""
        iam.Grant.add_to_principal(
            grantee=grantee, actions=list(names.TABLE_ACTIONS), resource_arns=[self.table.table_arn]
        )

    def grant_rule_record_access(self, grantee: iam.IGrantable) -> None:
        """Read and conditionally update the rule record only: the partition key is pinned."""
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=list(names.RULE_RECORD_ACTIONS),
            resource_arns=[self.table.table_arn],
            conditions={"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [constants.RULE_STATE_PK]}},
        )

    def grant_entry_check(self, grantee: iam.IGrantable, token_attribute: str) -> None:
        """Get queue items' keys and `token_attribute` only (the keeper: has an entry it would cover
        already run?); never a task's fields or payload."""
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["dynamodb:GetItem"],
            resource_arns=[self.table.table_arn],
            conditions={
                "ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{constants.QUEUE_PK_PREFIX}*"]},
                "ForAllValues:StringEquals": {
                    "dynamodb:Attributes": [constants.PARTITION_KEY, constants.SORT_KEY, token_attribute]
                },
                "StringEqualsIfExists": {"dynamodb:Select": "SPECIFIC_ATTRIBUTES"},
            },
        )

    def grant_payload_removal(self, grantee: iam.IGrantable) -> None:
        """Delete items in task partitions only (the keeper: a removed task's payload item)."""
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["dynamodb:DeleteItem"],
            resource_arns=[self.table.table_arn],
            conditions={
                "ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{constants.TASK_PK_PREFIX}*"]}
            },
        )

    def grant_stream_read(self, grantee: iam.IGrantable) -> None:
        """What a stream event source mapping needs, on this table's stream only."""
        assert self.table.table_stream_arn is not None
        iam.Grant.add_to_principal(
            grantee=grantee, actions=list(names.STREAM_ACTIONS), resource_arns=[self.table.table_stream_arn]
        )
