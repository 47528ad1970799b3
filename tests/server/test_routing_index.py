"""The server's router tries only the routes a request's first path segment can match
(console.server.routing.IndexedRouter), and every request still reaches the route it would reach
with every route tried in order: the real server's routes, for paths made from each of them and
for paths built to sit on the boundaries between them."""

from __future__ import annotations

import itertools

import pytest
from starlette.routing import Match, Router

from console.server import LocalServer, ServerOptions
from console.server.routing import IndexedRouter

METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH")
SAMPLES = ("resolve", "api", "xet", "datasets", "buckets", "openapi.json", "me", "a.git", "x")


def _picked(routes, method: str, path: str):
    """The route Starlette's router answers with: the first full match, else the first partial."""
    scope = {"type": "http", "method": method, "path": path, "root_path": "", "path_params": {}}
    partial = None
    for route in routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return route
        if match is Match.PARTIAL and partial is None:
            partial = route
    return partial


def _paths(routes) -> set[str]:
    out = {"/", "//api/models", "/api", "/api/", "/xet", "/openapi.json/x", "/datasets", "/a/b/resolve",
           "/api/models/resolve/main/x", "/api/jobs/resolve/x", "/datasets/a/b/resolve/main/f.txt"}
    for route in routes:
        parts = route.path.split("/")
        holes = [i for i, p in enumerate(parts) if "{" in p]
        for fill in itertools.product(SAMPLES, repeat=min(len(holes), 2)):
            filled = list(parts)
            for i, hole in enumerate(holes):
                filled[hole] = fill[i] if i < len(fill) else "f"
            out.add("/".join(filled))
    return out


@pytest.fixture(scope="module")
def router(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("CONSOLE_DATA_DIR", str(tmp_path_factory.mktemp("data")))
    mp.delenv("CONSOLE_SERVER_TOKEN", raising=False)
    server = LocalServer(ServerOptions(namespace="me"))
    try:
        found = server.app.app.router
        assert isinstance(found, IndexedRouter)
        yield found
    finally:
        server.service.store.close()
        mp.undo()


def test_every_request_reaches_the_route_it_would_with_every_route_tried(router) -> None:
    whole = Router(routes=router.routes)
    paths = _paths(router.routes)
    assert len(paths) > 300
    for path in sorted(paths):
        head = path.lstrip("/").split("/", 1)[0]
        tried = router._by_head.get(head, router._open).routes
        for method in METHODS:
            assert _picked(tried, method, path) is _picked(whole.routes, method, path), (method, path)


def test_a_download_tries_a_handful_of_routes_not_all(router) -> None:
    tried = router._open.routes
    assert len(tried) <= 6 < len(router.routes)
    assert _picked(tried, "HEAD", "/me/model/resolve/main/config.json").path == "/{ns}/{name}/resolve/{rest:path}"
