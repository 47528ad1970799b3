"""Fixtures for the on-call tests: a real embedded Jobs server running real jobs, a backend on it,
an HTTP listener on 127.0.0.1 that records webhook POSTs, and jobs that fail, stall or report
Trackio steps too slowly for their timeout."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from console.backend import Backend, connect
from console.config import Config, ServerSettings
from console.server import LocalServer, ServerOptions

NAMESPACE = "pager"
TIMEOUT_S = 60


@pytest.fixture
def server(monkeypatch) -> Iterator[LocalServer]:
    srv = LocalServer(ServerOptions(namespace=NAMESPACE, max_running_jobs=4))
    srv.start()
    monkeypatch.setenv("CONSOLE_SERVER_TOKEN", srv.token)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def cfg(server) -> Config:
    cfg = Config(namespace=NAMESPACE, plan="pro", endpoint=server.url,
                 server=ServerSettings(max_running_jobs=4))
    cfg.notify.stall_after_s = 1  # the config's floor is 10 s; the detector takes any
    return cfg


@pytest.fixture
def backend(cfg) -> Iterator[Backend]:
    b = connect(cfg)
    try:
        yield b
    finally:
        b.close()


def labels(tenant: str, run: str | None = None, **extra: str) -> dict[str, str]:
    out = {"app": "console", "tenant": tenant, "kind": "sft", "env": "dev", "timeout": str(TIMEOUT_S)}
    if run:
        out["run"] = run
    out.update(extra)
    return out


def run_python(backend: Backend, code: str, *, tenant: str = "acme", run: str | None = None,
               timeout: int = TIMEOUT_S, **extra: str):
    """A job running `python -u -c code` on t4-small, labelled as the console labels its jobs."""
    return backend.api.run_job(
        image="python:3.12", command=[sys.executable, "-u", "-c", code], flavor="t4-small",
        labels=labels(tenant, run, timeout=str(timeout), **extra), timeout=timeout,
        namespace=backend.namespace,
    )


SLEEPER = "import time\nprint('loading the data set', flush=True)\ntime.sleep(300)\n"
"""A job that prints one line, then sleeps: stalled, and billing."""

FAILING = (
    "print('step 1', flush=True)\n"
    "def train():\n    return 1 / 0\n"
    "train()\n"
)
"""A job that dies with a Python traceback (ZeroDivisionError)."""

SLOW_TRACKIO = """
import time, trackio
trackio.init(project={project!r}, name={run!r}, config={{"max_steps": {max_steps}}})
for step in range(1, {max_steps} + 1):
    trackio.log({{"train/loss": 1.0 / step, "train/global_step": step}})
    print(f"progress step={{step}}/{max_steps}", flush=True)
    if step == 3:
        trackio.alert(title="Loss diverged", text="loss went up 10x", level=trackio.AlertLevel.ERROR)
    time.sleep({pause})
"""
"""A job reporting Trackio steps slowly: {max_steps} steps at one per {pause} s will not fit in
its timeout. It raises one Trackio ERROR alert at step 3."""


def slow_trackio_code(project: str, run: str, max_steps: int = 1000, pause: float = 0.2) -> str:
    return SLOW_TRACKIO.format(project=project, run=run, max_steps=max_steps, pause=pause)


def wait_for(check, timeout: float = 30.0, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


def wait_stage(backend: Backend, job_id: str, stages=("COMPLETED", "ERROR", "CANCELED"),
               timeout: float = 30.0) -> str:
    info = backend.api.wait_for_job(job_id, timeout=timeout, poll_interval=0.05, stages=list(stages),
                                    namespace=backend.namespace)
    return info.status.stage


def log_has(backend: Backend, job_id: str, text: str) -> bool:
    lines = backend.api.fetch_job_logs(job_id=job_id, namespace=backend.namespace, follow=False)
    return any(text in line for line in lines)


def job_stage(backend: Backend, job_id: str) -> str:
    return backend.api.inspect_job(job_id=job_id, namespace=backend.namespace).status.stage


@pytest.fixture
def fleet(backend):
    """Two running acme jobs, one finished acme job, one running globex job."""
    done = run_python(backend, "print('ok')", tenant="acme")
    assert wait_stage(backend, done.id) == "COMPLETED"
    acme = [run_python(backend, SLEEPER, tenant="acme", timeout=600) for _ in range(2)]
    globex = run_python(backend, SLEEPER, tenant="globex", timeout=600)
    for job in [*acme, globex]:
        wait_for(lambda job=job: log_has(backend, job.id, "loading the data set"))
    yield {"acme": sorted(j.id for j in acme), "globex": globex.id, "done": done.id}
    for job in [*acme, globex]:
        if job_stage(backend, job.id) == "RUNNING":
            backend.api.cancel_job(job_id=job.id, namespace=backend.namespace)


@dataclass
class Listener:
    """An HTTP server on 127.0.0.1 recording each POST's path and JSON body."""

    url: str
    posts: list[tuple[str, dict]] = field(default_factory=list)
    delay: float = 0.0
    status: int = 200
    got: threading.Event = field(default_factory=threading.Event)

    def bodies(self, path: str | None = None) -> list[dict]:
        return [b for p, b in self.posts if path is None or p == path]


@pytest.fixture
def listener() -> Iterator[Listener]:
    state = Listener(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if state.delay:
                time.sleep(state.delay)
            state.posts.append((self.path, json.loads(body or b"null")))
            state.got.set()
            try:
                self.send_response(state.status)
                self.end_headers()
                self.wfile.write(b"ok")
            except OSError:  # the client gave up waiting (a slow-webhook test)
                pass

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


def write_config(path: Path, cfg: Config) -> Path:
    from console.config import save

    return save(cfg, path)
