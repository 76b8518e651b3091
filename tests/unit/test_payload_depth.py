"""The editor library enforces the payload nesting limit itself (library users never pass the API's
door), without recursing over the client's depth."""

from __future__ import annotations

from typing import Any

import pytest

from editor.specs import check_payload
from nexttick.constants import MAX_PAYLOAD_DEPTH
from nexttick.errors import ValidationError


def levels(value: Any) -> int:
    depth, layer = 0, [value]
    while layer:
        depth += 1
        layer = [c for node in layer for c in (node.values() if isinstance(node, dict) else node)]
        layer = [c for c in layer if isinstance(c, dict | list)]
    return depth


def test_a_payload_at_the_limit_is_accepted() -> None:
    payload: dict[str, Any] = {"a": {"b": [[{"c": 1}]]}}
    while levels(payload) < MAX_PAYLOAD_DEPTH:
        payload = {"x": payload}
    assert levels(payload) == MAX_PAYLOAD_DEPTH
    assert check_payload(payload) is payload


@pytest.mark.parametrize("depth", [MAX_PAYLOAD_DEPTH + 1, 100, 5000, 50_000])
def test_a_deeper_payload_is_refused_naming_the_limit(depth: int) -> None:
    payload: dict[str, Any] = {"leaf": True}
    for _ in range(depth - 1):
        payload = {"a": payload}
    with pytest.raises(ValidationError) as raised:
        check_payload(payload)
    assert raised.value.field == "payload"
    assert raised.value.message == f"payload: nested deeper than {MAX_PAYLOAD_DEPTH} levels"
