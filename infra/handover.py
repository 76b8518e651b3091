"""The wait hand-over: in `second` precision the woken worker sends one delayed message to this
queue and exits instead of waiting out the last minute or two in a 512 MB invocation; the queue's
trigger invokes the worker again just before the task's instant. The rule stays armed as the
backstop, so a message lost, late or delivered twice costs latency, never a task."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import names
from infra.config import InfraConfig
from infra.function import failure_queue


class Handover(Construct):
    """The hand-over queue (encrypted, TLS only), its dead-letter queue (alarmed in Monitoring), the
    worker's send grant and the variable naming the queue, and — unless `trigger` is False (the moto
    variant, where the local stack feeds the queue to the worker itself) — the queue's trigger.

    The visibility timeout is the worker's timeout (Lambda refuses a trigger on a queue whose
    timeout is shorter): a message whose invocation raised is received again after it, at most
    HANDOVER_MAX_RECEIVES times. The trigger passes one message per invocation, without waiting to
    fill a batch: each message is the wake-up for its own instant."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: InfraConfig,
        worker: lambda_.Function,
        trigger: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        n = config.resource_names
        self.dead_letter_queue = failure_queue(self, "DeadLetterQueue", n.handover_dead_letter_queue)
        self.queue = sqs.Queue(
            self,
            "Queue",
            queue_name=n.handover_queue,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=Duration.seconds(config.worker_timeout_seconds),
            retention_period=Duration.seconds(names.HANDOVER_RETENTION_SECONDS),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=names.HANDOVER_MAX_RECEIVES
            ),
        )
        worker.add_environment(names.HANDOVER_QUEUE_URL_ENV, self.queue.queue_url)
        iam.Grant.add_to_principal(
            grantee=worker, actions=list(names.HANDOVER_SEND_ACTIONS), resource_arns=[self.queue.queue_arn]
        )
        self.trigger: lambda_.EventSourceMapping | None = None
        if trigger:
            iam.Grant.add_to_principal(
                grantee=worker,
                actions=list(names.HANDOVER_CONSUME_ACTIONS),
                resource_arns=[self.queue.queue_arn],
            )
            self.trigger = lambda_.EventSourceMapping(
                self,
                "QueueTrigger",
                target=worker,
                event_source_arn=self.queue.queue_arn,
                batch_size=1,
                max_batching_window=Duration.seconds(0),
            )
