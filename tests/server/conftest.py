"""Fixtures for the embedded Jobs server: a real server on port 0 in a tmp data folder, driven by
`huggingface_hub.HfApi` and by the `hf` CLI as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from huggingface_hub import HfApi

from console.server import LocalServer

sys.path.insert(0, str(Path(__file__).parent))  # the test modules import jobs_helpers

from jobs_helpers import HF_BIN, make_server  # noqa: E402


@pytest.fixture
def server() -> Iterator[LocalServer]:
    srv = make_server()
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def api(server: LocalServer) -> HfApi:
    return HfApi(endpoint=server.url, token=server.token)


@pytest.fixture
def hf(server: LocalServer) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the `hf` CLI against the server; returns the completed process (text)."""
    env = dict(os.environ)
    env.update(
        HF_ENDPOINT=server.url,
        HF_TOKEN=server.token,
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_UPDATE_CHECK="1",
        NO_COLOR="1",
        COLUMNS="250",
    )

    def run(
        *args: str, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(HF_BIN), *args], env=env, capture_output=True, text=True, timeout=timeout
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"hf {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
            )
        return proc

    return run


def pytest_terminal_summary(terminalreporter) -> None:
    """The API fuzz test's figures (its `fuzz_summary` property) in the run's output, with or
    without -s or -n: a passing test's prints are not shown, its properties reach the summary."""
    for report in terminalreporter.stats.get("passed", []):
        for name, value in getattr(report, "user_properties", []):
            if name == "fuzz_summary":
                terminalreporter.write_line(str(value))
