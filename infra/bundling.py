"""Builds the Lambda asset directory locally, without Docker.

Dependencies come from requirements.txt as wheels for the Lambda platform (`pip install --platform
manylinux... --only-binary=:all:`, so compiled packages such as pydantic-core get the Lambda
build), installed once per (requirements, architecture, Python) into build/deps/<hash>/. The asset is
that directory plus the runtime packages (nexttick/, editor/, lambdas/ — .py files, and the web
console's .html/.js/.css/.svg; the developer tooling lives in packages of its own), assembled under
build/lambda/<hash>/ and handed to CDK with that hash, so unchanged code keeps the same asset and
repeated synths skip pip entirely.

Lambda's file system is read-only, so every module shipped without bytecode is compiled again at
every cold start. Bytecode is valid only for the Python version that wrote it: the asset gets it
when the build runs the Lambda runtime's Python, and goes without it otherwise.
"""

from __future__ import annotations

import compileall
import hashlib
import os
import py_compile
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from infra import names

# Bump to invalidate cached builds when the recipe below changes.
_RECIPE_VERSION = "2"
_PLATFORMS = {
    "arm64": ("manylinux2014_aarch64", "manylinux_2_28_aarch64"),
    "x86_64": ("manylinux2014_x86_64", "manylinux_2_28_x86_64"),
}
# The web console's static files (lambdas/api/console/static/) ship beside the code that serves them.
_RUNTIME_SUFFIXES = (".py", ".typed", ".json", ".html", ".js", ".css", ".svg")
# Not needed at run time in Lambda: console scripts and bytecode for the build machine's Python.
_PRUNE_DIRS = ("bin", "__pycache__")


@dataclass(frozen=True)
class LambdaAsset:
    path: Path
    asset_hash: str


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()[:20]


def runtime_files(root: Path) -> list[Path]:
    """The runtime source files shipped to Lambda, relative to `root`, sorted."""
    files: list[Path] = []
    for package in names.RUNTIME_PACKAGES:
        base = root / package
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            rel = path.relative_to(root)
            if path.is_file() and path.suffix in _RUNTIME_SUFFIXES and "__pycache__" not in rel.parts:
                files.append(rel)
    return sorted(files)


def ships_bytecode(python_version: str | None = None) -> bool:
    """True when this build can write bytecode the Lambda runtime will load (same Python version)."""
    running = python_version or f"{sys.version_info.major}.{sys.version_info.minor}"
    return running == names.LAMBDA_PYTHON_VERSION


def compile_bytecode(tree: Path) -> None:
    """Bytecode for every module of `tree`, checked against nothing at import: the asset never changes
    in place, so neither source timestamps nor hashes need to be read at a cold start."""
    compileall.compile_dir(
        tree, quiet=2, workers=0, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH
    )  # a file that does not compile stays source only, and fails only if it is ever imported


def _pip_install(requirements: Path, target: Path, architecture: str) -> None:
    platforms = [arg for p in _PLATFORMS[architecture] for arg in ("--platform", p)]
    subprocess.run(
        [
            sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
            "--no-compile", "--only-binary=:all:", "--implementation", "cp",
            "--python-version", names.LAMBDA_PYTHON_VERSION, *platforms,
            "--target", str(target), "-r", str(requirements),
        ],
        check=True,
    )  # fmt: skip
    for name in _PRUNE_DIRS:
        for path in sorted(target.rglob(name), reverse=True):
            if path.is_dir():
                shutil.rmtree(path)


def dependencies_dir(root: Path, architecture: str) -> Path:
    """build/deps/<hash>/ with requirements.txt installed for Lambda (built once, then reused)."""
    requirements = root / names.REQUIREMENTS_FILE
    key = _digest(
        _RECIPE_VERSION.encode(), requirements.read_bytes(), architecture.encode(),
        names.LAMBDA_PYTHON_VERSION.encode(),
    )  # fmt: skip
    final = root / names.BUILD_DIR / "deps" / key
    if final.is_dir():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=final.parent))
    try:
        _pip_install(requirements, work, architecture)
        work.rename(final)  # atomic: a concurrent build of the same key just loses the race
    except OSError:
        if not final.is_dir():
            raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


def build_lambda_asset(root: Path, architecture: str = "arm64") -> LambdaAsset:
    """Assemble dependencies + runtime packages into build/lambda/<hash>/ (reused when unchanged)."""
    deps = dependencies_dir(root, architecture)
    files = runtime_files(root)
    missing = [p for p in ("nexttick/__init__.py",) if Path(p) not in files]
    if missing:
        raise FileNotFoundError(f"runtime package missing from {root}: {missing}")
    code_parts = [part for rel in files for part in (rel.as_posix().encode(), (root / rel).read_bytes())]
    bytecode = ships_bytecode()
    asset_hash = _digest(deps.name.encode(), str(bytecode).encode(), *code_parts)
    final = root / names.BUILD_DIR / "lambda" / asset_hash
    if not final.is_dir():
        work = Path(tempfile.mkdtemp(prefix=f".{asset_hash}-", dir=final.parent.parent))
        try:
            stage = work / "asset"
            # Hard links: the dependency tree is large and never modified in place.
            shutil.copytree(deps, stage, copy_function=os.link)
            for rel in files:
                (stage / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(root / rel, stage / rel)
            if bytecode:
                compile_bytecode(stage)  # new files in new __pycache__ directories: no link is written
            final.parent.mkdir(parents=True, exist_ok=True)
            stage.rename(final)
        except OSError:
            if not final.is_dir():
                raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
        _prune_old(final)
    return LambdaAsset(final, asset_hash)


def _prune_old(keep: Path, retain: int = 3) -> None:
    """Keep the newest few assembled assets so build/ does not grow without bound."""
    siblings = sorted(
        (p for p in keep.parent.iterdir() if p.is_dir() and p != keep and not p.name.startswith(".")),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for old in siblings[retain - 1 :]:
        shutil.rmtree(old, ignore_errors=True)
