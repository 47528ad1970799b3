"""Helpers shared by the Jobs server tests (imported by conftest and the test modules)."""

from __future__ import annotations

import os
import subprocess
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


def fill_disk(path: Path) -> None:
    """Take every byte left on the disk holding `path`."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for size in (65536, 4096, 512, 1):  # down to the last blocks
            try:
                while os.write(fd, b"\0" * size):
                    pass
            except OSError:
                pass
    finally:
        os.close(fd)


def mount_tmpfs(where: Path, size: str = "3m") -> bool:
    """A real tmpfs of `size` at `where` (False where this machine does not allow the mount)."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    return done.returncode == 0


def shared_folder(name: str) -> Path:
    """A folder of this machine that a job with no tenant label sees at the same path: in its
    artifact folder (`_shared`, bound writable). The sandbox shows no other host path, not even
    one the command names: a test that signals a job through a file puts the file here."""
    from console.server import paths

    folder = paths.tenant_artifacts_dir(None) / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


TOKEN_PROBE = """
import json, os, sys, urllib.error, urllib.request

ns, other = sys.argv[1], sys.argv[2]

def call(method, path, body=None):
    req = urllib.request.Request(os.environ["HF_ENDPOINT"] + path, method=method, data=body,
                                 headers={"authorization": "Bearer " + os.environ["HF_TOKEN"],
                                          "content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=20) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code

print(json.dumps({
    "own": call("GET", f"/api/jobs/{ns}/{os.environ['JOB_ID']}"),
    "list": call("GET", f"/api/jobs/{ns}"),
    "read_other": call("GET", f"/api/jobs/{ns}/{other}"),
    "cancel_other": call("POST", f"/api/jobs/{ns}/{other}/cancel"),
    "start": call("POST", f"/api/jobs/{ns}", b'{"dockerImage": "ubuntu", "command": ["true"]}'),
}))
"""
"""A job's view of the Jobs API with the token it was given (standard library only): the status
of reading its own job, listing jobs, reading and cancelling another, starting one."""
TOKEN_PROBE_DENIED = {"own": 200, "list": 403, "read_other": 403, "cancel_other": 403, "start": 403}
GROW = ("import time\nblocks = []\nwhile True:\n    blocks.append(b'x' * (4 * 2**20))\n"
        "    print(len(blocks) * 4, 'MiB', flush=True)\n    time.sleep(0.02)\n")
"""A job that takes 4 MiB more memory every 20 ms, saying how much it holds, until it is stopped."""
