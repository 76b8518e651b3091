"""cdk-nag (AwsSolutions, zero unacknowledged findings, each with a reason), cfn-lint, and the
contents of the bundled Lambda asset."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from infra import names
from infra.bundling import build_lambda_asset
from infra.nag import FINDINGS
from infra.synth import PROJECT_ROOT, build_app, synthesize
from tests.infrastructure.conftest import CONFIG, Synthesized

EXPECTED_ACKNOWLEDGED = {rule for findings in FINDINGS.values() for rule, _ in findings}


def _nag_report(outdir: Path) -> dict[str, Any]:
    report = json.loads((outdir / "validation-report.json").read_text())
    (nag,) = [r for r in report["pluginReports"] if r["pluginName"] == "AwsSolutions"]
    return nag


def test_cdk_nag_reports_no_violation_and_every_acknowledgement_has_a_reason(deploy: Synthesized) -> None:
    # Given the synthesized deployable stack (synth would have raised on a finding)
    nag = _nag_report(deploy.outdir)
    # Then AwsSolutions passed, and each acknowledged finding is one we reasoned about
    assert nag["conclusion"] == "success"
    assert nag["violations"] == []
    acknowledged = {v["ruleName"] for v in nag["suppressedViolations"]}
    assert acknowledged <= EXPECTED_ACKNOWLEDGED
    for violation in nag["suppressedViolations"]:
        assert len(violation["reason"]) > 40, violation["ruleName"]


def test_an_unacknowledged_finding_fails_the_synth(tmp_path: Path) -> None:
    # Given the stack plus a resource breaking an AwsSolutions rule (an unencrypted, SSL-optional queue)
    from aws_cdk import aws_sqs as sqs

    built = build_app(config=CONFIG, local=False, outdir=str(tmp_path), context={"nexttick:syncToken": "x"})
    sqs.Queue(built.stack, "Careless", encryption=sqs.QueueEncryption.UNENCRYPTED)
    # When it is synthesized / Then synthesis is interrupted
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        synthesize(built)
    violations = {v["ruleName"] for v in _nag_report(tmp_path)["violations"]}
    assert {"AwsSolutions-SQS3", "AwsSolutions-SQS4"} <= violations


# W3005 "obsolete DependsOn": aws-lambda's Function always adds a construct dependency on its role
# (rendered as DependsOn next to the GetAtt of the role). That one CDK-internal pattern is accepted;
# any other error or warning fails the test.
_ROLE_DEPENDS_ON = re.compile(
    r"^\[W3005: .*\] \('\w+' dependency already enforced by a 'GetAtt' at 'Resources/\w+/Properties/Role'\)"
)


def _lint(template: dict[str, Any]) -> list[str]:
    from cfnlint.api import lint
    from cfnlint.config import ManualArgs

    matches = lint(
        json.dumps(template),
        config=ManualArgs(regions=["us-east-1", "eu-west-1"]),
    )
    return [str(m) for m in matches if not _ROLE_DEPENDS_ON.match(str(m))]


def test_cfn_lint_is_clean_on_the_deployable_template(deploy: Synthesized) -> None:
    assert _lint(deploy.template) == []


def test_cfn_lint_is_clean_on_the_local_template(local_template: dict[str, Any]) -> None:
    assert _lint(local_template) == []


def test_cfn_lint_would_catch_a_broken_template(deploy: Synthesized) -> None:
    # Given the template with an invalid property value / Then the lint check reports it
    broken = json.loads(json.dumps(deploy.template))
    table = next(r for r in broken["Resources"].values() if r["Type"] == "AWS::DynamoDB::Table")
    table["Properties"]["BillingMode"] = "FREE"
    assert any("BillingMode" in m or "FREE" in m for m in _lint(broken))


def test_asset_holds_runtime_code_and_lambda_platform_wheels_only(deploy: Synthesized) -> None:
    # Given the asset the deployable template points at
    worker = next(
        r
        for r in deploy.template["Resources"].values()
        if r["Properties"].get("FunctionName") == "nexttick-worker"
    )
    asset_id = worker["Properties"]["Code"]["S3Key"].removesuffix(".zip")
    manifest = json.loads((deploy.outdir / f"{CONFIG.stack_name}.assets.json").read_text())
    staged = deploy.outdir / manifest["files"][asset_id]["source"]["path"]
    top = {p.name for p in staged.iterdir()}
    # Then the runtime packages are there, project-only trees are not
    assert {"nexttick", "editor"} <= top
    assert not {"tests", "infra", "bench", "local", "docs", "app.py", "cdk.json", "bin"} & top
    assert not list(staged.rglob("__pycache__"))
    assert not [
        p for p in staged.glob("nexttick/**/*") if p.is_file() and p.suffix not in {".py", ".typed", ".json"}
    ]
    # ... and the compiled dependency is the Lambda build (cp312, Linux, the configured architecture)
    (core,) = staged.glob("pydantic_core/_pydantic_core.*.so")
    assert core.name == "_pydantic_core.cpython-312-aarch64-linux-gnu.so"
    with (core).open("rb") as binary:
        assert binary.read(4) == b"\x7fELF"
    for requirement in (PROJECT_ROOT / names.REQUIREMENTS_FILE).read_text().splitlines():
        package = requirement.split("#")[0].split("==")[0].split("[")[0].strip()
        if package:
            assert list(staged.glob(f"{package.replace('-', '_')}-*.dist-info")), package


def test_handlers_named_by_the_template_exist_in_the_asset(deploy: Synthesized) -> None:
    asset = build_lambda_asset(PROJECT_ROOT, CONFIG.architecture)
    for handler in (names.WORKER_HANDLER, names.API_HANDLER):
        module, _, function = handler.rpartition(".")
        source = asset.path / f"{module}.py"
        assert source.is_file(), f"{handler}: {source.name} missing from the asset"
        assert f"def {function}(" in source.read_text()


def test_unchanged_code_reuses_the_same_asset() -> None:
    # Given two builds without a change in between / Then one hash (no needless function update)
    first = build_lambda_asset(PROJECT_ROOT, CONFIG.architecture)
    assert build_lambda_asset(PROJECT_ROOT, CONFIG.architecture) == first
