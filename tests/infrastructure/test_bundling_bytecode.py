"""The asset ships bytecode when the build runs the Lambda runtime's Python: a cold start then
loads it instead of compiling every module (Lambda cannot write bytecode back)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from infra import names
from infra.bundling import compile_bytecode, ships_bytecode

_IMPORT = "import sys; sys.path.insert(0, sys.argv[1]); import pkg.mod as m; print(m.VALUE, m.__cached__)"


def test_bytecode_is_shipped_only_for_the_runtime_python_version() -> None:
    assert ships_bytecode(names.LAMBDA_PYTHON_VERSION)
    assert not ships_bytecode("3.11") and not ships_bytecode("3.99")


def test_compiled_modules_load_from_bytecode_without_reading_their_source(tmp_path: Path) -> None:
    # Given a package in an asset tree, compiled
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text("VALUE = 'compiled'\n")
    compile_bytecode(tmp_path)
    compiled = sorted(p.name.split(".")[0] for p in (package / "__pycache__").glob("*.pyc"))
    assert compiled == ["__init__", "mod"]
    # When its source changes afterwards (what no asset does: the check is skipped, not only passed)
    (package / "mod.py").write_text("VALUE = 'source'\n")
    # Then a fresh interpreter that may not write bytecode (as in Lambda) loads the compiled module
    done = subprocess.run(
        [sys.executable, "-I", "-B", "-c", _IMPORT, str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    value, cached = done.stdout.split()
    assert value == "compiled" and Path(cached).is_file()
