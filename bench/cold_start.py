"""Cold start of the Lambda handlers: the deployable asset's size, and how long importing each
handler takes in a fresh interpreter (median of 5), with and without shipped bytecode.

The asset (`build_lambda_asset`, as `make synth` builds it) holds wheels for the Lambda platform and
Python, which this machine may not be able to import. The import is therefore timed on a replica:
the same runtime files beside the same pinned requirements installed for this machine's Python
(`pip install --target`, no bytecode), once as Lambda receives an asset without bytecode and once
compiled as `infra.bundling.compile_bytecode` compiles an asset. Each run is `python -I -S -B`: no
site packages, no bytecode written, so every run is a cold one.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from bench.localstack import REPO
from infra import names
from infra.bundling import build_lambda_asset, compile_bytecode, runtime_files, ships_bytecode
from infra.config import InfraConfig

RUNS = 5
HANDLERS = {"worker": names.WORKER_HANDLER, "api": names.API_HANDLER, "keeper": names.KEEPER_HANDLER}
_TIME_IMPORT = (
    "import sys, time; sys.path[:0] = sys.argv[1:3]; started = time.perf_counter(); "
    "__import__(sys.argv[3]); print((time.perf_counter() - started) * 1000)"
)


def _host_dependencies() -> Path:
    """requirements.txt installed for this machine's Python (once per requirements and Python)."""
    requirements = REPO / names.REQUIREMENTS_FILE
    key = hashlib.sha256(requirements.read_bytes() + sys.version.encode()).hexdigest()[:16]
    target = REPO / names.BUILD_DIR / "bench-deps" / key
    if not target.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)  # a fresh clone has no build directory
        work = Path(tempfile.mkdtemp(dir=target.parent))
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "--no-compile", "--target", str(work), "-r", str(requirements)],
            check=True,
        )  # fmt: skip
        work.rename(target)
    return target


def _replica(dependencies: Path, into: Path, *, bytecode: bool) -> Path:
    """The runtime files beside a copy of the dependencies, compiled or not."""
    shutil.copytree(dependencies, into / "deps")
    for rel in runtime_files(REPO):
        (into / "code" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, into / "code" / rel)
    if bytecode:
        compile_bytecode(into)
    return into


def _import_ms(replica: Path, handler: str) -> float:
    module = handler.rpartition(".")[0].replace("/", ".")
    environment = {
        **InfraConfig().runtime_environment(),
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "PATH": "/usr/bin:/bin",
    }
    runs = []
    for _ in range(RUNS):
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-B", "-c", _TIME_IMPORT,
             str(replica / "code"), str(replica / "deps"), module],
            env=environment, capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        runs.append(float(done.stdout.split()[-1]))
    return round(statistics.median(runs), 1)


def _asset_size() -> dict[str, Any]:
    asset = build_lambda_asset(REPO)
    files = [p for p in asset.path.rglob("*") if p.is_file()]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            archive.write(path, path.relative_to(asset.path).as_posix())
    return {
        "asset_mb": round(sum(p.stat().st_size for p in files) / 1e6, 1),
        "asset_zipped_mb": round(len(buffer.getvalue()) / 1e6, 1),
        "asset_files": len(files),
    }


def run() -> dict[str, Any]:
    dependencies = _host_dependencies()
    results: dict[str, Any] = {
        **_asset_size(),
        "runtime_python": names.LAMBDA_PYTHON_VERSION,
        "build_python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "bytecode_shipped": ships_bytecode(),
        "runs": RUNS,
    }
    with tempfile.TemporaryDirectory() as scratch:
        source_only = _replica(dependencies, Path(scratch) / "source", bytecode=False)
        compiled = _replica(dependencies, Path(scratch) / "compiled", bytecode=True)
        results["import_ms_p50"] = {
            name: {"source_only": _import_ms(source_only, h), "bytecode": _import_ms(compiled, h)}
            for name, h in HANDLERS.items()
        }
    return results
