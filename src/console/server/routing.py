"""The server's router: Starlette's, trying for each request only the routes that can match it.

Starlette tries every route in order until one matches; the server has some fifty, and a download
(`/{ns}/{name}/resolve/...`, thousands of them in a `snapshot_download`) comes near the end, so
most of a small request's routing went to patterns that could never match it. A route whose path
begins with a fixed segment (`/api/...`, `/xet/...`, `/openapi.json`) matches only paths that begin
with that segment, so :class:`IndexedRouter` keeps, for each such first segment, the routes that
begin with it or with a parameter, in their order, and hands a request to that list (a path whose
first segment no route names gets the routes that begin with a parameter). Which route answers is
the same as with every route tried in order: the ones left out could not have matched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette._utils import get_route_path
from starlette.routing import BaseRoute, Route, Router


def first_segment(route: BaseRoute) -> str | None:
    """The fixed first segment of a route's path (`api` for `/api/jobs/{namespace}`), or None when
    it may match any first segment (a parameter, a mount, anything but a plain `Route`)."""
    if not isinstance(route, Route):
        return None
    head = route.path.lstrip("/").split("/", 1)[0]
    return None if not head or "{" in head else head


class IndexedRouter(Router):
    """A `Router` that tries only the routes whose first path segment can match the request's.

    Reverse lookups (`url_for`) and everything else see the whole list of routes."""

    def __init__(self, routes: Sequence[BaseRoute], **kwargs: Any) -> None:
        super().__init__(routes=list(routes), **kwargs)
        heads = [first_segment(route) for route in self.routes]
        self._open = Router(routes=[r for r, h in zip(self.routes, heads, strict=True) if h is None],
                            redirect_slashes=self.redirect_slashes, default=self.default)
        self._by_head = {
            head: Router(routes=[r for r, h in zip(self.routes, heads, strict=True) if h in (head, None)],
                         redirect_slashes=self.redirect_slashes, default=self.default)
            for head in {h for h in heads if h is not None}
        }

    async def app(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await super().app(scope, receive, send)
            return
        if "router" not in scope:
            scope["router"] = self  # reverse lookups see every route
        head = get_route_path(scope).lstrip("/").split("/", 1)[0]
        await self._by_head.get(head, self._open).app(scope, receive, send)
