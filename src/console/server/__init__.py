"""The embedded Jobs server: the HF Jobs REST + SSE API on 127.0.0.1, running jobs on this machine.

The console talks to it only through `huggingface_hub.HfApi` (see :mod:`console.backend`), and so
can the `hf jobs` CLI (`HF_ENDPOINT=<url> HF_TOKEN=<token>`). It never imports Textual.

- :class:`~console.server.serve.LocalServer` / :class:`~console.server.serve.ServerOptions`: run it
- :mod:`console.server.paths`: where jobs, logs, token, artifacts and Trackio data live

Importing this package (or `console.server.paths`) is cheap: the HTTP server (uvicorn, starlette)
loads only when `LocalServer` is first used, so a console that connects to a running server
never pays for it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LocalServer", "ServerBusyError", "ServerOptions"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from console.server import serve

        return getattr(serve, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
