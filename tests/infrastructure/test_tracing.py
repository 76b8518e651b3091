"""`tracing`: X-Ray on the functions and the API stage only when a deployment chooses it. Off, no
function is traced, no role holds X-Ray's wildcard grant and the runtime is told so
(POWERTOOLS_TRACE_DISABLED), which keeps the X-Ray SDK out of every cold start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infra.synth import build_app, synthesize
from tests.infrastructure.conftest import CONFIG, Synthesized, policy_statements, resources_of

NAMES = CONFIG.resource_names
FUNCTIONS = (NAMES.worker_function, NAMES.api_function, NAMES.keeper_function)
XRAY_WRITES = {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}


def _functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        fn["Properties"]["FunctionName"]: fn["Properties"]
        for fn in resources_of(template, "AWS::Lambda::Function").values()
        if fn["Properties"].get("FunctionName") in FUNCTIONS
    }


def _stage(template: dict[str, Any]) -> dict[str, Any]:
    [stage] = resources_of(template, "AWS::ApiGateway::Stage").values()
    return stage["Properties"]


def test_nothing_is_traced_by_default(deploy: Synthesized) -> None:
    # Given the default configuration
    functions = _functions(deploy.template)
    assert sorted(functions) == sorted(FUNCTIONS)
    # Then no function and not the stage is traced, and the runtime is told tracing is off
    for props in functions.values():
        assert "TracingConfig" not in props
        assert props["Environment"]["Variables"]["POWERTOOLS_TRACE_DISABLED"] == "true"
    assert not _stage(deploy.template).get("TracingEnabled", False)
    # And no role is granted anything on every resource
    assert all(s.get("Resource") != "*" for s in policy_statements(deploy.template))


def test_tracing_on_traces_every_function_and_the_stage(tmp_path: Path) -> None:
    # Given a deployment choosing tracing (synthesised with cdk-nag: any unacknowledged finding fails)
    config = CONFIG.model_copy(update={"tracing": True})
    built = build_app(config=config, local=False, outdir=str(tmp_path), context={"nexttick:syncToken": "t"})
    template = synthesize(built).get_stack_by_name(built.stack.stack_name).template
    # Then every function is actively traced and its runtime records to X-Ray
    functions = _functions(template)
    assert sorted(functions) == sorted(FUNCTIONS)
    for props in functions.values():
        assert props["TracingConfig"] == {"Mode": "Active"}
        assert props["Environment"]["Variables"]["POWERTOOLS_TRACE_DISABLED"] == "false"
    # And the API stage is traced
    assert _stage(template)["TracingEnabled"] is True
    # And the only grant on every resource is X-Ray's (it has no resource-level permissions)
    wildcards = [s for s in policy_statements(template) if s.get("Resource") == "*"]
    assert wildcards
    for statement in wildcards:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert set(actions) == XRAY_WRITES, statement
