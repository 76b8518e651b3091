"""The API's routes, one Powertools `Router` per resource: each route parses its request, calls the
editor and answers JSON. No logic beyond that lives here; errors are raised and mapped in `errors.py`.

The editor and the app reach a route through Powertools dependencies (`Depends`, in `routing.py`),
which `build_app` binds per app with `dependency_overrides`: the app resolves every included
router's dependencies, so one binding serves them all."""

from __future__ import annotations

from lambdas.api.routes import service, steering, tasks, views

# Every router, in the order the app includes them; importing them fills `routing.ROUTE_METHODS`.
ROUTERS = (tasks.router, views.router, steering.router, service.router)

__all__ = ["ROUTERS"]
