"""Dashboard and alarms over the worker's Powertools metrics (namespace `nexttick`) and Lambda/SQS."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import names
from infra.config import InfraConfig
from nexttick import constants

_PERIOD = Duration.minutes(1)
_ALARM_PERIOD = Duration.minutes(5)
# The keeper normally covers a commit within a second; a minute behind means it is failing or throttled.
KEEPER_LAG_ALARM_MS = 60_000


def scheduler_metric(metric_name: str, statistic: str, period: Duration = _PERIOD) -> cloudwatch.Metric:
    """A Powertools metric; Powertools adds the `service` dimension to every metric it emits."""
    return cloudwatch.Metric(
        namespace=names.METRICS_NAMESPACE,
        metric_name=metric_name,
        dimensions_map={"service": names.SERVICE_NAME},
        statistic=statistic,
        period=period,
    )


class Monitoring(Construct):
    """Lateness p50/p90/p99/max, runs late > 1 s, runs/failures/skips, batch size (backlog proxy),
    worker errors/duration, the depth of the worker's and the hand-over's DLQs, the keeper's errors,
    iterator age and failed batches; alarms on lateness p99, failures, both DLQs' depth, worker
    errors, the keeper's failed batches and its iterator age (optional e-mail)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: InfraConfig,
        worker: lambda_.IFunction,
        api_function: lambda_.IFunction,
        dead_letter_queue: sqs.IQueue,
        keeper: lambda_.IFunction,
        keeper_failures: sqs.IQueue,
        handover_dead_letters: sqs.IQueue,
    ) -> None:
        super().__init__(scope, construct_id)
        n = config.resource_names
        # The dimensionless (service only) lateness: one value per executed run, whatever its action.
        lateness = [
            scheduler_metric(constants.METRIC_LATENESS, statistic).with_(label=label)
            for statistic, label in (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("Maximum", "max"))
        ]
        late_runs = scheduler_metric(constants.METRIC_LATE_RUNS, "Sum").with_(
            label=f"runs > {constants.LATE_RUN_THRESHOLD_SECONDS:g} s late"
        )
        runs = scheduler_metric(constants.METRIC_RUNS, "Sum")
        failures = scheduler_metric(constants.METRIC_FAILURES, "Sum")
        skips = scheduler_metric(constants.METRIC_SKIPS, "Sum")
        batch = scheduler_metric(constants.METRIC_BATCH_SIZE, "Maximum")
        dlq_depth = dead_letter_queue.metric_approximate_number_of_messages_visible(
            period=_PERIOD, statistic="Maximum"
        )
        handover_dlq_depth = handover_dead_letters.metric_approximate_number_of_messages_visible(
            period=_PERIOD, statistic="Maximum"
        )
        # How far behind the table the keeper is: a committed task is covered this long after it at most.
        keeper_lag = keeper.metric("IteratorAge", period=_PERIOD, statistic="Maximum")
        keeper_failed = keeper_failures.metric_approximate_number_of_messages_visible(
            period=_PERIOD, statistic="Maximum"
        )

        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=n.dashboard)
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Lateness (start - due), ms", left=lateness, width=8),
            cloudwatch.GraphWidget(
                title=f"Runs late > {constants.LATE_RUN_THRESHOLD_SECONDS:g} s", left=[late_runs], width=8
            ),
            cloudwatch.GraphWidget(title="Occurrences", left=[runs, failures, skips], width=8),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Worker errors / throttles",
                left=[worker.metric_errors(period=_PERIOD), worker.metric_throttles(period=_PERIOD)],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Worker duration, ms",
                left=[
                    worker.metric_duration(period=_PERIOD, statistic="p50"),
                    worker.metric_duration(period=_PERIOD, statistic="Maximum"),
                ],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Due tasks per run (max) / dead letters",
                left=[batch],
                right=[dlq_depth, handover_dlq_depth],
                width=8,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="API errors / duration",
                left=[api_function.metric_errors(period=_PERIOD)],
                right=[api_function.metric_duration(period=_PERIOD, statistic="p99")],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Keeper errors / failed batches / iterator age, ms",
                left=[keeper.metric_errors(period=_PERIOD), keeper_failed],
                right=[keeper_lag],
                width=12,
            ),
        )

        def alarm(
            construct_id: str, description: str, metric: cloudwatch.IMetric, threshold: float = 0
        ) -> cloudwatch.Alarm:
            """Fires on one period above `threshold`; no data is not a breach."""
            return cloudwatch.Alarm(
                self,
                construct_id,
                alarm_description=description,
                metric=metric,
                threshold=threshold,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )

        self.alarms = [
            alarm(
                "LatenessAlarm",
                f"nexttick lateness p99 above {config.lateness_threshold_ms} ms",
                scheduler_metric(constants.METRIC_LATENESS, "p99", _ALARM_PERIOD),
                config.lateness_threshold_ms,
            ),
            alarm(
                "FailuresAlarm",
                "nexttick: a task occurrence failed (all attempts used)",
                scheduler_metric(constants.METRIC_FAILURES, "Sum", _ALARM_PERIOD),
            ),
            alarm(
                "DeadLetterAlarm",
                "nexttick: worker invocations failed after retries (see the DLQ)",
                dead_letter_queue.metric_approximate_number_of_messages_visible(
                    period=_ALARM_PERIOD, statistic="Maximum"
                ),
            ),
            alarm(
                "HandoverDeadLetterAlarm",
                "nexttick: hand-over invocations of the worker failed after retries (see its DLQ and "
                "the worker's logs; the rule stays armed as the backstop)",
                handover_dead_letters.metric_approximate_number_of_messages_visible(
                    period=_ALARM_PERIOD, statistic="Maximum"
                ),
            ),
            alarm(
                "WorkerErrorsAlarm",
                "nexttick: the worker function raised errors",
                worker.metric_errors(period=_ALARM_PERIOD, statistic="Sum"),
            ),
            alarm(
                "KeeperFailuresAlarm",
                "nexttick: the keeper gave up on stream records (see its failure queue; run nexttick sync)",
                keeper_failures.metric_approximate_number_of_messages_visible(
                    period=_ALARM_PERIOD, statistic="Maximum"
                ),
            ),
            alarm(
                "KeeperIteratorAgeAlarm",
                f"nexttick: the keeper is more than {KEEPER_LAG_ALARM_MS // 1000} s behind the table",
                keeper.metric("IteratorAge", period=_ALARM_PERIOD, statistic="Maximum"),
                KEEPER_LAG_ALARM_MS,
            ),
        ]

        self.topic: sns.Topic | None = None
        if config.alarm_email:
            self.topic = sns.Topic(
                self,
                "AlarmTopic",
                topic_name=n.alarm_topic,
                master_key=self._alarm_key(),
                enforce_ssl=True,
            )
            self.topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
            for each in self.alarms:
                each.add_alarm_action(cw_actions.SnsAction(self.topic))

    def _alarm_key(self) -> kms.Key:
        """CloudWatch cannot publish to a topic under the AWS-managed SNS key: a rotated CMK that
        lets CloudWatch encrypt to the topic (about $1/month, only with alarm_email set)."""
        key = kms.Key(self, "AlarmTopicKey", enable_key_rotation=True, description="nexttick alarm topic")
        key.grant(iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey")
        return key
