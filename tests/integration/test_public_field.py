"""A task field is declared once: added to the store's public view of a task (`TaskFields`, and the
table attribute that keeps it), it shows in the editor library, the API's OpenAPI document and the
CLI's `--json` with no other edit.

The field is added to a copy of the source tree, which then runs in a process of its own: a moto
server with the table and rule, a task created through the CLI, read back through the library and
the CLI, and the OpenAPI document generated from the copy's app."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("editor", "lambdas", "local", "nexttick", "tests/support")
DESCRIPTION = "Among tasks due together, higher runs first."
ADDED = {
    # the public view of a task ...
    "nexttick/store/records.py": (
        "    jitter_seconds: float | None = None\n",
        "    jitter_seconds: float | None = None\n"
        f'    priority: Annotated[int, Field(description="{DESCRIPTION}")] = 0\n',
    ),
    # ... and where the table keeps it
    "nexttick/store/models.py": (
        "    jitter_seconds = NumberAttribute(null=True)\n",
        "    jitter_seconds = NumberAttribute(null=True)\n    priority = NumberAttribute(default=0)\n",
    ),
}

SCRIPT = """
import contextlib, io, json, os, sys
from pathlib import Path
from local import endpoints
from local.cli.main import main
from nexttick.constants import DEFAULT_RULE_NAME, DEFAULT_TABLE_NAME
from tests.support.aws import FAKE_AWS_ENV
from tests.support.local import create_table_and_rule, local_worker, moto_server

os.environ.update(FAKE_AWS_ENV)
state = Path(sys.argv[1])


def cli(*argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--json"]) == 0
    return json.loads(out.getvalue())


with moto_server() as server, local_worker() as (endpoint, _, recorder):
    create_table_and_rule(server, DEFAULT_TABLE_NAME, DEFAULT_RULE_NAME)
    env = {
        "NEXTTICK_ENDPOINT_URL": server.url,
        "NEXTTICK_LAMBDA_ENDPOINT_URL": endpoint.url,
        "NEXTTICK_ACTIONS_CONFIG": json.dumps({"log": {"type": "log"}}),
        **FAKE_AWS_ENV,
    }
    endpoints.write(state, {"pid": os.getpid(), "api_url": "http://127.0.0.1:1", "env": env})
    os.environ["NEXTTICK_STATE_DIR"] = str(state)
    created = cli("add", "--action", "log", "--in", "1h")
    shown = cli("show", created["id"])
    os.environ.update(env)
    from editor import Editor
    from lambdas.api.openapi_file import generated

    task = Editor.from_env().get(created["id"])
    schema = json.loads(generated())["components"]["schemas"]["Task"]
    print(json.dumps({
        "library": getattr(task, "priority", "absent"),
        "cli_add": created.get("priority", "absent"),
        "cli_show": shown.get("priority", "absent"),
        "openapi": schema["properties"].get("priority", "absent"),
        "required": "priority" in schema["required"],
    }))
"""


def run_copy(tmp_path: Path, *, with_field: bool) -> dict[str, object]:
    source = tmp_path / ("with" if with_field else "without")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    (source / "tests" / "__init__.py").touch()
    if with_field:
        for relative, (anchor, replacement) in ADDED.items():
            path = source / relative
            text = path.read_text(encoding="utf-8")
            assert text.count(anchor) == 1, f"{relative}: the anchor moved; follow it in this test"
            path.write_text(text.replace(anchor, replacement), encoding="utf-8")
    state = tmp_path / f"state-{source.name}"
    state.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(state)],
        cwd=source,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(source), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_field_added_to_the_tasks_public_view_shows_in_the_library_the_api_and_the_cli(
    tmp_path: Path,
) -> None:
    # Given the tree as it is: no such field anywhere
    before = run_copy(tmp_path, with_field=False)
    assert set(before.values()) == {"absent", False}
    # When the field is added to the task's public view (and its table attribute), nothing else
    after = run_copy(tmp_path, with_field=True)
    # Then the library, the CLI's --json and the OpenAPI document all carry it, documented
    assert after["library"] == after["cli_add"] == after["cli_show"] == 0
    documented = {"default": 0, "description": DESCRIPTION, "title": "Priority", "type": "integer"}
    assert after["openapi"] == documented
    assert after["required"] is True
