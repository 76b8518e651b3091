"""The store's one botocore client, made cheaper per request without changing a byte it sends.

botocore builds the User-Agent header twice per request (once for the request, once more after the
request's context has collected its feature ids), each time from a dozen components that it
sanitises character by character: about a tenth of a DynamoDB request's CPU. The string depends only
on the client, which never changes, and on those feature ids, so it is computed once per set of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.context import get_context


def memoize_user_agent(client: Any) -> None:
    """Have `client` build its User-Agent string once per set of request feature ids. Both places
    botocore builds it look the method up on the client's user-agent object, so they both use this."""
    creator = client._user_agent_creator
    creator.to_string = _memoized(creator.to_string)


def _memoized(build: Callable[[], str]) -> Callable[[], str]:
    built: dict[frozenset[str], str] = {}

    def to_string() -> str:
        context = get_context()
        features = frozenset(context.features) if context is not None else frozenset()
        text = built.get(features)
        if text is None:
            text = built[features] = build()
        return text

    return to_string
