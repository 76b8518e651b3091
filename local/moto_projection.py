"""How the local stack's moto answers a projection of top-level attribute names: by copying those
attributes only. The sorted-partition Query (local/moto_query.py) and the bench's stand-in
(bench/standin.py) project this way.

Written for moto 5.2.5 (`MOTO_VERSION`); `FINGERPRINTS` records the moto functions whose behaviour
this reproduces, checked by tests/unit/test_motopatches.py.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, cast

from moto.dynamodb.models.dynamo_type import Item, LimitedSizeDict

MOTO_VERSION = "5.2.5"

# sha256 of the source of each moto function as moto 5.2.5 ships it: `Item.project` is answered for
# top-level names by a copy built as `Item.__deepcopy__` builds one.
FINGERPRINTS: dict[str, tuple[Callable[..., Any], str]] = {
    "moto.dynamodb.models.dynamo_type.Item.project": (
        Item.project,
        "f411e6d8b56886f45f401edc20c2fd6d4e671136d9cf7ff21c434479b1e84a79",
    ),
    "moto.dynamodb.models.dynamo_type.Item.__deepcopy__": (
        Item.__deepcopy__,
        "7621d16ad7ce49d93f1da0ff2a799ec0ca57b34d30249ef65bc2557c2acc5168",
    ),
}


def is_top_level(path: list[str]) -> bool:
    """A projection path that names one top-level attribute (no nesting, no list index)."""
    return len(path) == 1 and "[" not in path[0]


def project_top_level(item: Item, paths: list[list[str]]) -> Item:
    """A copy of `item` holding only the top-level attributes `paths` name, as stored: what
    moto's `Item.project` answers for such paths, without its round trip of the whole item through
    plain JSON once per path (most of a queue read's time when the items carry payloads)."""
    attrs = LimitedSizeDict.__new__(LimitedSizeDict)  # as Item.__deepcopy__ builds one: no size re-check
    dict.__init__(attrs)
    for (name,) in paths:
        if name in item.attrs:
            dict.__setitem__(attrs, name, copy.deepcopy(item.attrs[name]))
    projected = cast(Item, Item.__new__(Item))
    projected.hash_key, projected.range_key, projected.attrs = item.hash_key, item.range_key, attrs
    return projected
