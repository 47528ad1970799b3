"""The session: what every part of the TUI shares about the backend it works against.

The config, the backend (its `HfApi` and namespace), the clock, the price book, the Trackio reader
and the local cache of every job seen, in one plain object handed to the refresher, the job view
and the actions. Keeping it apart from the app lets those parts take it without importing the app.

The backend may still be connecting when the app starts: the first frame is painted from the
local cache before huggingface_hub is imported. Such a backend has `ensure_connected()`, which
the first refresh calls in its worker thread; `api` waits for the connection.

Imports no Textual and nothing else from `console.ui`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from console.cache import JobCache, cache_path
from console.config import Config
from console.prices import PriceBook


@dataclass
class Session:
    cfg: Config
    backend: Any
    """A `console.backend.Backend` or the like: `.api` (an HfApi), `.kind`, `.namespace`, `.url`;
    or one still connecting (it has `ensure_connected()`, see the module docstring)."""
    clock: Callable[[], datetime]
    prices: PriceBook
    metrics_reader_factory: Callable[[], Any] | None = None
    """Makes the Trackio reader on first use (a Space reader imports huggingface_hub)."""
    namespace: str = field(init=False)
    cache: JobCache = field(init=False)
    """Every job seen, and the last picture shown (`console.cache`)."""
    _metrics_reader: Any = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.namespace = getattr(self.backend, "namespace", None) or self.cfg.namespace
        self.cache = JobCache(cache_path(self.backend_kind, self.namespace, self.cfg.endpoint))

    @property
    def metrics_reader(self) -> Any:
        """Where Trackio curves and alerts are read (`console.trackio_metrics.reader_for`), made on the
        first read of a curve (panels hold this stand-in until then)."""
        return _LazyReader(self)

    def _make_reader(self) -> Any:
        if self._metrics_reader is None:
            if self.metrics_reader_factory is None:
                from console.trackio_metrics import reader_for

                self._metrics_reader = reader_for(self.cfg, self.backend_kind)
            else:
                self._metrics_reader = self.metrics_reader_factory()
        return self._metrics_reader

    @property
    def connected(self) -> bool:
        return bool(getattr(self.backend, "connected", True))

    def ensure_connected(self) -> None:
        """Connect a backend that is still connecting (in a worker thread: it may take seconds)."""
        connect = getattr(self.backend, "ensure_connected", None)
        if connect is not None:
            connect()

    @property
    def api(self) -> Any:
        return self.backend.api

    @property
    def endpoint(self) -> str:
        return getattr(self.backend, "url", "") or ""

    @property
    def backend_kind(self) -> str:
        return getattr(self.backend, "kind", self.cfg.backend)

    def hub_token(self) -> str | None:
        """The token a run that pushes to a Hub repo passes as its HF_TOKEN secret: the user's on
        the Hub, the local server's on the local backend (its repos are the local Hub)."""
        if self.backend_kind != "hub":
            return getattr(self.api, "token", None) or None
        from huggingface_hub import get_token

        return get_token()


class _LazyReader:
    """The session's Trackio reader, made when first used (every attribute is the real one's)."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session._make_reader(), name)
