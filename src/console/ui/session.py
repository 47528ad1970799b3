"""The session: what every part of the TUI shares about the backend it works against.

The config, the backend (its `HfApi` and namespace), the clock, the price book and the Trackio
reader, in one plain object handed to the refresher, the job view and the actions. Keeping it
apart from the app lets those parts take it without importing the app.

Imports no Textual and nothing else from `console.ui`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from console.config import Config
from console.prices import PriceBook


@dataclass
class Session:
    cfg: Config
    backend: Any
    """A `console.backend.Backend` or the like: `.api` (an HfApi), `.kind`, `.namespace`, `.url`."""
    clock: Callable[[], datetime]
    prices: PriceBook
    metrics_reader: Any
    """Where Trackio curves and alerts are read (`console.metrics.reader_for`)."""
    namespace: str = field(init=False)

    def __post_init__(self) -> None:
        self.namespace = getattr(self.backend, "namespace", None) or self.cfg.namespace

    @property
    def api(self) -> Any:
        return self.backend.api

    @property
    def backend_kind(self) -> str:
        return getattr(self.backend, "kind", self.cfg.backend)

    def hub_token(self) -> str | None:
        """The token a Hub submission passes as its HF_TOKEN secret (None on the local backend)."""
        if self.backend_kind != "hub":
            return None
        from huggingface_hub import get_token

        return get_token()
