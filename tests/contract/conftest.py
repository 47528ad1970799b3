"""The contract tests import the HF answer shapes (`hf_shapes`) from this folder; `api` is the
real client on a real embedded server in strict mode (answering in HF's shapes)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from huggingface_hub import HfApi

from console.server import LocalServer, ServerOptions

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def api() -> Iterator[HfApi]:
    with LocalServer(ServerOptions(namespace="acme-ml", strict=True)) as server:
        yield HfApi(endpoint=server.url, token=server.token)
