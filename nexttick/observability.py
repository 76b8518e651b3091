"""The one place that creates the Powertools Logger, Metrics and Tracer used by every handler.

Service name from `POWERTOOLS_SERVICE_NAME` (default "nexttick"); metrics namespace "nexttick"
unless `POWERTOOLS_METRICS_NAMESPACE` says otherwise. The tracer is inert outside Lambda.
"""

from __future__ import annotations

import os

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from nexttick.constants import APP_NAME

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", APP_NAME)
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", APP_NAME)

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
tracer = Tracer(service=SERVICE)

__all__ = ["NAMESPACE", "SERVICE", "MetricUnit", "logger", "metrics", "tracer"]
