"""Builds the CDK app (used by app.py, tests and the local stack) without the CDK CLI."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_

from infra import names
from infra.bundling import build_lambda_asset
from infra.config import InfraConfig, load_config
from infra.nag import apply_nag
from infra.stack import NextTickStack

PROJECT_ROOT = Path(__file__).resolve().parent.parent

# The local variant's functions never run inside moto (the local stack runs the handlers in-process),
# so they carry this placeholder instead of a bundled asset: no pip, no network, no S3 upload.
LOCAL_PLACEHOLDER_CODE = (
    '"""Placeholder: the nexttick local stack runs this function\'s handler in-process."""\n'
    "def handler(event, context):\n"
    '    raise RuntimeError("placeholder code of the local (moto) template")\n'
)


class NagFindingsError(RuntimeError):
    """cdk-nag reported findings that carry no suppression."""


@dataclass
class Built:
    app: cdk.App
    stack: NextTickStack
    config: InfraConfig


def lambda_code(config: InfraConfig, local: bool, root: Path = PROJECT_ROOT) -> lambda_.Code:
    if local:
        return lambda_.Code.from_inline(LOCAL_PLACEHOLDER_CODE)
    asset = build_lambda_asset(root, config.architecture)
    return lambda_.Code.from_asset(str(asset.path), asset_hash=asset.asset_hash)


def default_sync_token() -> str:
    """Changes on every synth, so every deploy re-runs the post-deploy rule sync."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")


def build_app(
    *,
    context: dict[str, Any] | None = None,
    config: InfraConfig | None = None,
    local: bool | None = None,
    outdir: str | None = None,
    root: Path = PROJECT_ROOT,
) -> Built:
    """The app with its one stack. Without `config`, it is loaded from the file + context.

    cdk.json's context (feature flags included) is always the base, so `python app.py` and the
    CDK CLI synthesize the same template; `context` and the CLI's `-c` values override it."""
    app = cdk.App(context={**project_context(root), **(context or {})}, outdir=outdir)
    ctx = _context(app, context)
    if config is None:
        config = load_config(ctx, root)
    if local is None:
        local = str(ctx.get(names.CONTEXT_LOCAL, "false")).lower() in ("1", "true", "yes")
    sync_token = None if local else str(ctx.get(names.CONTEXT_SYNC_TOKEN) or default_sync_token())
    stack = NextTickStack(
        app,
        config.stack_name,
        config=config,
        code=lambda_code(config, local, root),
        sync_token=sync_token,
        # The local template has no assets; moto cannot resolve the bootstrap-version SSM parameter.
        synthesizer=cdk.DefaultStackSynthesizer(generate_bootstrap_version_rule=False) if local else None,
        env=cdk.Environment(
            account=os.environ.get("CDK_DEFAULT_ACCOUNT"), region=os.environ.get("CDK_DEFAULT_REGION")
        ),
    )
    if not local:
        apply_nag(app, stack, tracing=config.tracing)
    return Built(app, stack, config)


def project_context(root: Path = PROJECT_ROOT) -> dict[str, Any]:
    """The `context` object of cdk.json."""
    path = root / "cdk.json"
    if not path.is_file():
        return {}
    context: dict[str, Any] = json.loads(path.read_text()).get("context", {})
    return context


def _context(app: cdk.App, explicit: dict[str, Any] | None) -> dict[str, Any]:
    """Context as the app sees it (cdk.json and -c values arrive via CDK_CONTEXT_JSON)."""
    keys = {names.CONTEXT_CONFIG_FILE, names.CONTEXT_OVERRIDES, names.CONTEXT_LOCAL, names.CONTEXT_SYNC_TOKEN}
    keys |= {f"{names.CONTEXT_OVERRIDES}:{f}" for f in InfraConfig.model_fields}
    values = dict(explicit or {})
    for key in keys:
        value = app.node.try_get_context(key)
        if value is not None:
            values[key] = value
    return values


def synthesize(built: Built) -> cdk.cx_api.CloudAssembly:
    """Synthesize; raise NagFindingsError if any error annotation (unsuppressed finding) exists."""
    assembly = built.app.synth()
    artifact = assembly.get_stack_by_name(built.stack.stack_name)
    errors = [
        f"{m.id}: {m.entry.data}"
        for m in artifact.messages
        if m.level == cdk.cx_api.SynthesisMessageLevel.ERROR
    ]
    if errors:
        raise NagFindingsError("unsuppressed cdk-nag findings:\n" + "\n".join(errors))
    return assembly


def synth_template(
    config: InfraConfig | None = None,
    local: bool = False,
    *,
    context: dict[str, Any] | None = None,
    outdir: str | None = None,
    root: Path = PROJECT_ROOT,
) -> dict[str, Any]:
    """The stack's CloudFormation template as a dict. `local=True`: the variant moto can create
    (placeholder inline code, no post-deploy custom resource, no cdk-nag)."""
    built = build_app(context=context, config=config, local=local, outdir=outdir, root=root)
    assembly = synthesize(built)
    template: dict[str, Any] = assembly.get_stack_by_name(built.stack.stack_name).template
    return template
