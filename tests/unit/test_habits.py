"""The habits CONTRIBUTING.md describes are wired up: the pre-commit hooks are valid and run the
tools `make lint` runs, the complexity gate is on, and no module of the project code passes 350
lines."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pre_commit.clientlib import load_config

ROOT = Path(__file__).resolve().parents[2]


def _make_lint_commands() -> list[str]:
    recipe = re.search(r"^lint:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert recipe is not None
    return [line.strip().replace("$(VENV)", ".venv") for line in recipe.group(1).splitlines()]


def test_the_pre_commit_hooks_run_what_make_lint_runs() -> None:
    # Given the hooks (validated by pre-commit itself) and make lint's commands
    config = load_config(ROOT / ".pre-commit-config.yaml")
    entries = [hook["entry"] for repo in config["repos"] for hook in repo["hooks"]]
    commands = _make_lint_commands()
    # Then every hook is one of those commands, limited to the files given (ruff's excludes kept),
    # and every command has its hook
    assert all(repo["repo"] == "local" for repo in config["repos"])  # nothing to download
    as_commands = [entry.replace(" --force-exclude", " .") if "ruff" in entry else entry for entry in entries]
    assert sorted(as_commands) == sorted(commands)


def test_the_complexity_gate_is_on_for_the_project_code() -> None:
    lint = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert "C90" in lint["select"] and 0 < lint["mccabe"]["max-complexity"] <= 15
    assert "C901" not in lint.get("ignore", [])


MAX_MODULE_LINES = 350
PROJECT_PACKAGES = ("nexttick", "editor", "lambdas", "local", "infra")


def test_no_module_of_the_project_code_passes_the_size_limit() -> None:
    # Given every module of the deployed packages, the local stack and the infrastructure
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines())
        for package in PROJECT_PACKAGES
        for path in (ROOT / package).rglob("*.py")
    }
    # Then each is short enough to read as one concern (a longer one is split by concern)
    assert len(sizes) > 50
    assert {path: n for path, n in sizes.items() if n > MAX_MODULE_LINES} == {}
