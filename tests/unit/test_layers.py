"""The layer picture of docs/architecture.md, checked: every import in the project points down (or
sideways within a layer), no two files import each other however indirectly, PynamoDB stays
inside the store, and nothing deployed imports developer tooling, the CDK app or the tests."""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Collection
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Bottom (0) to top; the longest matching prefix names a module's layer.
LAYERS: dict[str, int] = {
    "nexttick.constants": 0,
    "nexttick.errors": 0,
    "nexttick.config": 0,
    "nexttick.timeutil": 0,
    "nexttick.clock": 0,
    "nexttick.observability": 0,
    "nexttick": 0,  # the package itself: its version and name
    "nexttick.store": 1,
    "nexttick.schedules": 1,
    "nexttick.ruletiming": 1,
    "nexttick.aws": 1,
    "nexttick.actions": 1,
    "nexttick.rulearm": 2,
    "nexttick.rulehead": 2,
    "nexttick.rulewait": 2,
    "nexttick.rulesync": 2,
    "nexttick.runtime": 2,
    "editor": 3,
    "nexttick.worker": 3,
    "nexttick.keeper": 3,
    "lambdas": 4,
    "infra": 5,
    "local": 6,
    "bench": 7,
    "tests": 8,
}
DEPLOYED = ("nexttick", "editor", "lambdas")


def _layer(module: str) -> int | None:
    matches = [prefix for prefix in LAYERS if module == prefix or module.startswith(f"{prefix}.")]
    return LAYERS[max(matches, key=len)] if matches else None


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, root: Path = ROOT, modules: Collection[str] = ()) -> set[str]:
    """Every module `path` imports, at any depth (imports inside functions count too). `from a
    import b` imports `a.b` when that is one of `modules`, else `a`."""
    module = _module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            named = {f"{base}.{alias.name}" for alias in node.names}
            submodules = named & set(modules)
            found |= submodules
            if len(submodules) < len(named):  # names defined in `base` itself
                found.add(base)
    return found


def _import_cycle(root: Path, sources: list[Path]) -> list[str] | None:
    """A cycle of files importing one another (each imports the next), or None."""
    modules = {_module_name(path, root): path for path in sources}
    graph = {
        module: (_imports(path, root, modules.keys()) & modules.keys()) - {module}
        for module, path in modules.items()
    }
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return list(error.args[1])
    return None


SOURCES = sorted(
    path
    for top in LAYERS
    if "." not in top and top != "tests"
    for path in (ROOT / top).rglob("*.py")
    if "__pycache__" not in path.parts
)


def test_every_package_of_the_picture_has_sources() -> None:
    assert {_module_name(path).split(".")[0] for path in SOURCES} == {
        top for top in LAYERS if "." not in top and top != "tests"
    }


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_imports_point_down_the_layers(path: Path) -> None:
    # Given a project module and its layer
    module = _module_name(path)
    own = _layer(module)
    assert own is not None
    # When its imports are mapped to layers, Then none is above it
    upward = sorted(
        imported for imported in _imports(path) if (layer := _layer(imported)) is not None and layer > own
    )
    assert upward == [], f"{module} (layer {own}) imports from above: {upward}"


def test_no_files_import_each_other() -> None:
    assert _import_cycle(ROOT, SOURCES) is None


def test_the_cycle_check_finds_a_planted_cycle(tmp_path: Path) -> None:
    # Given a package whose app imports its routes, which import a document module that imports
    # the app back inside a function (as `lambdas/api` once did)
    package = tmp_path / "api"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "app.py").write_text("from api import routes\n")
    (package / "routes.py").write_text("from api.document import text\n")
    (package / "document.py").write_text("def text():\n    from api.app import build\n")
    (package / "leaf.py").write_text("import api.routes\n")
    # When the check runs over it, Then it names the cycle, and only that
    cycle = _import_cycle(tmp_path, sorted(package.glob("*.py")))
    assert cycle is not None and set(cycle) == {"api.app", "api.routes", "api.document"}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_pynamodb_stays_inside_the_store(path: Path) -> None:
    module = _module_name(path)
    if module.startswith("nexttick.store"):
        return
    assert not [name for name in _imports(path) if name.split(".")[0] == "pynamodb"], module


def test_the_api_speaks_through_the_editor_not_the_store() -> None:
    offenders = {
        _module_name(path): sorted(name for name in _imports(path) if name.startswith("nexttick.store"))
        for path in SOURCES
        if _module_name(path).startswith("lambdas.api")
    }
    assert {module: names for module, names in offenders.items() if names} == {}


def test_nothing_deployed_imports_tooling_infra_or_tests() -> None:
    offenders = {
        _module_name(path): sorted(
            name for name in _imports(path) if name.split(".")[0] in ("local", "bench", "infra", "tests")
        )
        for path in SOURCES
        if _module_name(path).split(".")[0] in DEPLOYED
    }
    assert {module: names for module, names in offenders.items() if names} == {}
