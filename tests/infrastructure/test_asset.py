"""The Lambda asset holds runtime code only: no developer tooling (`names.DEV_PACKAGES`), and each
handler imports from the asset's files alone, so a runtime import of dev-only code fails here
rather than in a cold start."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from infra import names
from infra.bundling import runtime_files
from infra.synth import PROJECT_ROOT
from lambdas.api.console import ASSETS, STATIC_DIR
from tests.infrastructure.conftest import CONFIG

HANDLERS = (names.WORKER_HANDLER, names.API_HANDLER, names.KEEPER_HANDLER)

# Run with -I -S: no PYTHON* variables, no script directory, and no site processing, so neither the
# repo root nor the editable install's finder (a .pth file, which would resolve any nexttick module
# from the repo) can supply a module; sys.path is the standard library plus what is prepended here.
_IMPORT_HANDLERS = """
import json, sys
asset, site_packages, modules = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path[:0] = [asset, site_packages]
for module in modules:
    __import__(module)
roots = set(json.loads(sys.argv[4]))
print(json.dumps(sorted(
    name for name, module in sys.modules.items()
    if name.split(".")[0] in roots and not (getattr(module, "__file__", None) or "").startswith(asset)
)))
"""


def _module(handler: str) -> str:
    return handler.rpartition(".")[0].replace("/", ".")


def test_asset_file_list_leaves_out_developer_tooling_and_holds_the_handlers() -> None:
    # Given the files the asset is built from
    files = {path.as_posix() for path in runtime_files(PROJECT_ROOT)}
    # Then each is in a runtime package, none is developer tooling
    assert {f.split("/")[0] for f in files} == set(names.RUNTIME_PACKAGES)
    assert not set(names.RUNTIME_PACKAGES) & set(names.DEV_PACKAGES)
    # ... and the three handlers are there
    for handler in HANDLERS:
        assert f"{_module(handler).replace('.', '/')}.py" in files, handler


def test_the_asset_holds_every_file_the_web_console_serves() -> None:
    # Given the files the asset is built from
    files = {path.as_posix() for path in runtime_files(PROJECT_ROOT)}
    # Then the console's page, script, style sheet and icon ship beside the API that serves them
    static = STATIC_DIR.relative_to(PROJECT_ROOT).as_posix()
    assert static.startswith(_module(names.API_HANDLER).rpartition(".")[0].replace(".", "/"))
    assert {f"{static}/{name}" for name in ASSETS} <= files


def test_each_handler_imports_from_the_asset_files_alone(tmp_path: Path) -> None:
    # Given a copy of the asset's runtime files, beside the venv's installed dependencies only
    asset = tmp_path / "asset"
    for rel in runtime_files(PROJECT_ROOT):
        (asset / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(PROJECT_ROOT / rel, asset / rel)
    site_packages = sysconfig.get_paths()["purelib"]
    environment = {
        **CONFIG.runtime_environment(),
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    modules = [_module(handler) for handler in HANDLERS]
    # When each handler module is imported there, as Lambda does at a cold start
    done = subprocess.run(
        [
            sys.executable, "-I", "-S", "-c", _IMPORT_HANDLERS, f"{asset}/", site_packages,
            json.dumps(modules), json.dumps(names.RUNTIME_PACKAGES),
        ],
        env=environment, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    # Then every import succeeds, and every project module it loaded came from the asset
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []
