"""The README's editor-library example, executed as written against moto: every call it shows works
(`Editor.from_env()` is pointed at the test's editor; the clock is the real one)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from editor import Editor

README = Path(__file__).resolve().parents[2] / "README.md"


def library_example() -> str:
    section = re.search(r"^## Editor library\n(.*?)(?=^## )", README.read_text(), re.S | re.M)
    assert section, "README has no 'Editor library' section"
    block = re.search(r"^```python\n(.*?)^```", section.group(1), re.S | re.M)
    assert block, "the 'Editor library' section has no python block"
    return block.group(1)


def test_the_readme_library_example_runs(editor: Editor, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Editor, "from_env", classmethod(lambda cls: editor))
    namespace: dict[str, object] = {}
    exec(compile(library_example(), str(README), "exec"), namespace)
    task = namespace["task"]
    assert editor.get(task.id).status == "cancelled"  # type: ignore[attr-defined]
    assert namespace["runs"].items == []  # type: ignore[attr-defined]
