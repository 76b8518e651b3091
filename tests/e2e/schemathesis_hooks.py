"""schemathesis hooks for the nexttick API (loaded through SCHEMATHESIS_HOOKS by the fuzz test).

The document cannot know a deployment's action names; the test deployment configures `log` and
`hook`, so positive cases name one of those and negative cases anything else.
"""

from __future__ import annotations

from typing import Any

import schemathesis

DEPLOYED_ACTIONS = ["log", "hook"]


@schemathesis.hook
def before_load_schema(context: schemathesis.HookContext, raw_schema: dict[str, Any]) -> None:
    action = raw_schema["components"]["schemas"]["CreateTaskRequest"]["properties"]["action"]
    action["enum"] = DEPLOYED_ACTIONS
