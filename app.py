#!/usr/bin/env python3
"""CDK entry point: `python app.py` (make synth) or the CDK CLI (make deploy) via cdk.json."""

from __future__ import annotations

import sys

import infra  # noqa: F401  (sets the jsii environment before aws_cdk loads)
from infra.config import ConfigError
from infra.synth import NagFindingsError, build_app, synthesize


def main() -> int:
    try:
        built = build_app()
        assembly = synthesize(built)
    except (ConfigError, NagFindingsError) as exc:
        print(f"synth failed: {exc}", file=sys.stderr)
        return 1
    print(f"synthesized {built.stack.stack_name} to {assembly.directory}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
