"""nexttick's CDK app: reusable constructs (TaskStore, RuleAndWorker, Api, Monitoring), the stack
composing them, configuration loading, local (Docker-free) bundling and cdk-nag wiring.

`synth_template(config, local=...)` returns the CloudFormation template as a dict without the CDK
CLI; `local=True` gives the variant moto's CloudFormation can create (see README, "Deploy").
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

# jsii runs on the machine's Node; keep its version banners out of synth output.
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20")

if TYPE_CHECKING:
    from infra.config import InfraConfig


def synth_template(config: InfraConfig | None = None, local: bool = False, **kwargs: Any) -> dict[str, Any]:
    """The synthesized CloudFormation template (see infra.synth.synth_template)."""
    from infra.synth import synth_template as _synth

    return _synth(config, local, **kwargs)
