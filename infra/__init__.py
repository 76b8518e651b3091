"""nexttick's CDK app: reusable constructs (TaskTable, RuleAndWorker, Api, Monitoring), the stack
composing them, configuration loading, local (Docker-free) bundling and cdk-nag wiring.

`synth_template(config, local=...)` returns the CloudFormation template as a dict without the CDK
CLI; `local=True` gives the variant moto's CloudFormation can create (see README, "Deploy").
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

# jsii runs on the machine's Node; keep its version banners out of synth output.
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20")

if TYPE_CHECKING:
    from infra.config import InfraConfig

_ROOT = Path(__file__).resolve().parent.parent


def synth_template(
    config: InfraConfig | None = None,
    local: bool = False,
    announce: Callable[[str], None] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """The synthesized CloudFormation template (see infra.synth.synth_template).

    The local variant is cached under build/ by (configuration, infra sources, aws-cdk-lib version):
    starting the local stack again skips jsii entirely. `announce` hears about a synth that is not
    cached (it takes several seconds)."""
    if local and not kwargs:
        from infra.config import load_config

        config = config or load_config({}, _ROOT)
        path = _local_cache_path(config)
        if path.is_file():
            return _read_template(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Stacks started at once on a fresh clone (or changed infra) synthesize it once between
        # them: the others wait for its file instead of each running jsii.
        with path.with_suffix(".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if path.is_file():
                return _read_template(path)
            if announce is not None:
                announce("synthesizing the CDK app's template (first start or changed infra; ~15 s) ...")
            template = _synth(config, local=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(template, sort_keys=True))
            tmp.replace(path)
        return template
    return _synth(config, local, **kwargs)


def _read_template(path: Path) -> dict[str, Any]:
    template: dict[str, Any] = json.loads(path.read_text())
    return template


def _synth(config: InfraConfig | None, local: bool, **kwargs: Any) -> dict[str, Any]:
    from infra.synth import synth_template as synth

    return synth(config, local, **kwargs)


def _local_cache_path(config: InfraConfig) -> Path:
    h = hashlib.sha256(config.model_dump_json().encode())
    sources = [*(_ROOT / "infra").glob("*.py"), _ROOT / "nexttick" / "constants.py", _ROOT / "cdk.json"]
    for source in sorted(sources):
        h.update(source.name.encode() + source.read_bytes())
    h.update(metadata.version("aws-cdk-lib").encode())
    return _ROOT / "build" / "local-template" / f"{h.hexdigest()[:20]}.json"
