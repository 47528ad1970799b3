"""The embedded Jobs server: the HF Jobs REST + SSE API on 127.0.0.1, running jobs on this machine.

The console talks to it only through `huggingface_hub.HfApi` (see :mod:`console.backend`), and so
can the `hf jobs` CLI (`HF_ENDPOINT=<url> HF_TOKEN=<token>`). It never imports Textual.

- :class:`~console.server.serve.LocalServer` / :class:`~console.server.serve.ServerOptions`: run it
- :mod:`console.server.paths`: where jobs, logs, token, artifacts and Trackio data live
"""

from __future__ import annotations

from console.server.serve import LocalServer, ServerBusyError, ServerOptions

__all__ = ["LocalServer", "ServerBusyError", "ServerOptions"]
