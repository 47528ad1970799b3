"""Helpers shared by the Jobs server tests (imported by conftest and the test modules)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from huggingface_hub import HfApi

from console.server import LocalServer, ServerOptions

NAMESPACE = "tester"
HF_BIN = Path(sys.executable).parent / "hf"


def make_server(**kw: object) -> LocalServer:
    opts = ServerOptions(namespace=NAMESPACE, port=0, max_running_jobs=4)
    for key, value in kw.items():
        setattr(opts, key, value)
    return LocalServer(opts)


def wait_stage(api: HfApi, job_id: str, stages: tuple[str, ...] = (), timeout: float = 15.0):
    """Poll until the job reaches one of `stages` (or any terminal stage)."""
    return api.wait_for_job(
        job_id, timeout=timeout, poll_interval=0.05, stages=list(stages) or None,
        namespace=NAMESPACE,
    )


def wait_until(check: Callable[[], object], timeout: float = 10.0, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


def job_processes(job_id: str) -> list[int]:
    """The live processes of a job, as this machine sees them (a sandboxed job numbers its own
    processes from 1 inside its PID namespace, so the pids it prints mean nothing out here)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get("JOB_ID") == job_id:
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found


def shared_folder(name: str) -> Path:
    """A folder of this machine that a job with no tenant label sees at the same path: in its
    artifact folder (`_shared`, bound writable). The sandbox shows no other host path, not even
    one the command names: a test that signals a job through a file puts the file here."""
    from console.server import paths

    folder = paths.tenant_artifacts_dir(None) / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder
