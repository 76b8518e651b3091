"""`make bench`: nexttick measured side by side with its baselines; results written to bench/."""

import os

# Before any nexttick module creates its Powertools logger: per-task INFO lines would swamp the report.
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
