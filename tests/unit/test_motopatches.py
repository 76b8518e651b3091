"""The moto functions the local stack's patches replace or lean on are the ones they were written
for: a moto upgrade that changes one fails here, naming it and the module whose patch to re-read."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path
from types import ModuleType

import pytest

import local
from local.motopatches import PATCH_MODULES, fingerprint

RECORDED = [(module, name) for module in PATCH_MODULES for name in sorted(module.FINGERPRINTS)]


@pytest.mark.parametrize(("module", "name"), RECORDED, ids=[name for _, name in RECORDED])
def test_each_patched_moto_function_is_the_one_its_patch_was_written_for(
    module: ModuleType, name: str
) -> None:
    function, recorded = module.FINGERPRINTS[name]
    assert fingerprint(function) == recorded, (
        f"{name} changed since moto {module.MOTO_VERSION} (installed: {importlib.metadata.version('moto')}): "
        f"re-check the patch in {module.__name__.replace('.', '/')}.py against the new moto, then record "
        "its new fingerprint and version"
    )


@pytest.mark.parametrize("module", PATCH_MODULES, ids=[module.__name__ for module in PATCH_MODULES])
def test_each_patch_names_the_installed_moto_version(module: ModuleType) -> None:
    assert importlib.metadata.version("moto") == module.MOTO_VERSION
    assert f"Written for moto {module.MOTO_VERSION}" in (module.__doc__ or "")


def test_every_module_recording_moto_fingerprints_is_checked() -> None:
    # a patch module missing from PATCH_MODULES would have its fingerprints never compared
    package = Path(local.__file__).parent
    recording = {
        path.relative_to(package.parent).with_suffix("").as_posix().replace("/", ".")
        for path in package.rglob("*.py")
        if re.search(r"^FINGERPRINTS\b", path.read_text(), re.MULTILINE)
    }
    assert recording == {module.__name__ for module in PATCH_MODULES}
