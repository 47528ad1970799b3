"""Fixtures for the reliability suite: a real embedded Jobs server with its fault hooks armed, and
a backend whose client retries fast (so a test of five retries takes a fraction of a second)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from console.backend import Backend, ClientPolicy, connect
from console.config import Config, ServerSettings
from console.server import LocalServer, ServerOptions

NAMESPACE = "oncall"


def fast_policy(**overrides: float) -> ClientPolicy:
    values = dict(timeout=1.0, connect_timeout=1.0, base_delay=0.02, max_delay=0.1,
                  max_retry_after=3.0, budget=10.0)
    values.update(overrides)
    return ClientPolicy(**values)


@pytest.fixture
def server(monkeypatch) -> Iterator[LocalServer]:
    srv = LocalServer(ServerOptions(namespace=NAMESPACE, max_running_jobs=4, faults=True))
    srv.start()
    monkeypatch.setenv("CONSOLE_SERVER_TOKEN", srv.token)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def cfg(server) -> Config:
    return Config(namespace=NAMESPACE, plan="pro", endpoint=server.url,
                  server=ServerSettings(max_running_jobs=4))


@pytest.fixture
def backend(cfg) -> Iterator[Backend]:
    b = connect(cfg, policy=fast_policy())
    try:
        yield b
    finally:
        b.close()


def run_python(backend: Backend, code: str, *, labels: dict[str, str] | None = None,
               timeout: int = 120, **kw):
    return backend.api.run_job(
        image="python:3.12", command=[sys.executable, "-u", "-c", code], flavor="t4-small",
        labels=labels or {"app": "console", "tenant": "acme", "kind": "sft", "env": "dev"},
        timeout=timeout, namespace=backend.namespace, **kw,
    )


def job_count(backend: Backend) -> int:
    return len(list(backend.api.list_jobs(namespace=backend.namespace)))


COUNTER = "import time\nfor i in range({n}):\n    print('line', i, flush=True)\n    time.sleep({pause})\n"
"""A job printing `line 0` .. `line n-1`, one every `pause` seconds."""
