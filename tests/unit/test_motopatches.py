"""The moto functions the local stack's patches replace or lean on are the ones they were written
for: a moto upgrade that changes one fails here, naming it, until its patch is re-read."""

from __future__ import annotations

import importlib.metadata

import pytest

from local.motopatches import MOTO_VERSION, PATCHED, fingerprint


@pytest.mark.parametrize("name", sorted(PATCHED))
def test_each_patched_moto_function_is_the_one_its_patch_was_written_for(name: str) -> None:
    function, recorded = PATCHED[name]
    assert fingerprint(function) == recorded, (
        f"{name} changed since moto {MOTO_VERSION} (installed: {importlib.metadata.version('moto')}): "
        "re-read local/motopatches.py against it, then record its new fingerprint"
    )


def test_the_recorded_moto_version_is_the_pinned_one() -> None:
    assert importlib.metadata.version("moto") == MOTO_VERSION
