"""Integration fixtures (moto in-process; the chain itself lives in tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.support.api import LambdaApi


@pytest.fixture
def api(editor, monkeypatch: pytest.MonkeyPatch) -> LambdaApi:  # type: ignore[no-untyped-def]
    """The API Lambda handler, its editor injected (moto-backed), called with REST proxy events."""
    from lambdas.api import handler as module
    from nexttick.api.app import build_app

    monkeypatch.setattr(module, "app", build_app(lambda: editor))
    return LambdaApi(module.handler)
