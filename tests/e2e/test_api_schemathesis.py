"""schemathesis against the API served over HTTP on loopback (local API Gateway + moto in-process).

`make test` runs a short, seeded pass; `make fuzz` sets NEXTTICK_FUZZ_EXAMPLES /
NEXTTICK_FUZZ_MIN_REQUESTS for >= 1,000 requests. Every built-in check runs (no 5xx, status codes,
content types, headers and bodies conform to the document, negative data rejected, undeclared
methods answered 405 with Allow, stateful create -> read/update/cancel through the links) except
`use_after_free`: DELETE cancels, and by contract `GET` afterwards shows the task `cancelled`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from lambdas.api.app import RESOURCES, build_app
from local.gateway import serve

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
EXAMPLES = int(os.environ.get("NEXTTICK_FUZZ_EXAMPLES", "3"))
MIN_REQUESTS = int(os.environ.get("NEXTTICK_FUZZ_MIN_REQUESTS", "100"))
SEED = os.environ.get("NEXTTICK_FUZZ_SEED", "20301")  # "random" for a fresh seed


class CountingHandler:
    """Wraps the Lambda handler and tallies the status code of every request it answers."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.statuses: Counter[int] = Counter()
        self.errors: Counter[str] = Counter()
        self.seconds = 0.0
        self._lock = threading.Lock()

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        started = time.perf_counter()
        result = self.inner(event, context)
        with self._lock:
            self.seconds += time.perf_counter() - started
            self.statuses[int(result["statusCode"])] += 1
            if int(result["statusCode"]) >= 400 and result.get("body", "").startswith("{"):
                body = json.loads(result["body"])
                self.errors[f"{result['statusCode']} {body['message'][:48]}"] += 1
        return result


@pytest.mark.slow
def test_generated_requests_get_no_5xx_and_conforming_responses(
    editor: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given the API Lambda behind the local gateway on a free loopback port, moto behind it
    from lambdas.api import handler as module

    monkeypatch.setattr(module, "app", build_app(lambda: editor))
    counting = CountingHandler(module.handler)
    report = tmp_path / "report.json"
    with serve(counting, resources=RESOURCES) as server:
        # When schemathesis generates requests from the served document, all checks enabled
        command = [
            sys.executable, "-m", "schemathesis.cli", "--config-file", str(HERE / "schemathesis.toml"),
            "run", f"{server.url}/openapi.json", "--checks", "all", "--exclude-checks", "use_after_free",
            "--max-examples", str(EXAMPLES),
            "--workers", "1", "--report", "json", "--report-json-path", str(report),
            "--request-timeout", "30", "--output-truncate", "true",
        ]  # fmt: skip
        if SEED != "random":
            command += ["--seed", SEED]
        env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.e2e.schemathesis_hooks", "PYTHONPATH": str(ROOT)}
        result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    summary = json.loads(report.read_text())
    total = sum(counting.statuses.values())
    print(f"schemathesis test cases: {summary['test_cases']}")
    print(f"requests served: {total}; by status: {dict(sorted(counting.statuses.items()))}")
    print(f"time in the handler: {counting.seconds:.1f} s")
    print(f"most frequent errors: {counting.errors.most_common(12)}")
    # Then every check passed, enough requests were made and none was answered with a 5xx
    failures = (
        result.stdout[result.stdout.find("FAILURES") :] if "FAILURES" in result.stdout else result.stdout
    )
    assert result.returncode == 0, failures[:30000] + result.stderr[-5000:]
    assert summary["failures"] == [] and summary["errors"] == []
    assert total >= MIN_REQUESTS
    assert not [status for status in counting.statuses if status >= 500]
    # And the run reached the API's success paths, not only its error answers
    assert counting.statuses[201] > 0 and counting.statuses[200] > 0
