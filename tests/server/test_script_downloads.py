"""`uv run http://...` scripts are fetched away from the runner: a server that sends a short or a slow
body ends that job ERROR with the reason, once, while other jobs start, cancel and time out on time."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from huggingface_hub import HfApi
from jobs_helpers import NAMESPACE, wait_stage, wait_until

SCRIPT = b"print('fetched script ran')\n"


class _ScriptServer(ThreadingHTTPServer):
    daemon_threads = True
    requests: dict[str, int]
    release: threading.Event


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        server: _ScriptServer = self.server  # type: ignore[assignment]
        server.requests[self.path] = server.requests.get(self.path, 0) + 1
        self.send_response(200)
        self.send_header("Content-Type", "text/x-python")
        if self.path == "/ok.py":
            self.send_header("Content-Length", str(len(SCRIPT)))
            self.end_headers()
            self.wfile.write(SCRIPT)
        elif self.path == "/short.py":  # promises 4 KB, sends 10 bytes, hangs up
            self.send_header("Content-Length", "4096")
            self.end_headers()
            self.wfile.write(b"print('x')")
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        elif self.path == "/slow.py":  # a byte every 0.2 s, for far longer than the deadline
            self.send_header("Content-Length", "1000")
            self.end_headers()
            try:
                for _ in range(1000):
                    self.wfile.write(b"#")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                pass
        elif self.path == "/held.py":  # a byte every 0.2 s until the test lets go, then hangs up
            self.send_header("Content-Length", "1000")
            self.end_headers()
            try:
                while not server.release.wait(0.2):
                    self.wfile.write(b"#")
                    self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


@pytest.fixture
def script_server() -> Iterator[_ScriptServer]:
    srv = _ScriptServer(("127.0.0.1", 0), _Handler)
    srv.requests = {}
    srv.release = threading.Event()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.release.set()
        srv.shutdown()
        srv.server_close()


def _run(api: HfApi, command: list[str], **kw: object):
    return api.run_job(image="python:3.12", command=command, namespace=NAMESPACE, **kw)


def test_bad_script_servers_do_not_hold_up_other_jobs(api: HfApi, server, script_server) -> None:
    base = f"http://127.0.0.1:{script_server.server_port}"
    server.service.runner.fetcher.deadline = 600.0
    held = _run(api, ["uv", "run", f"{base}/held.py"])  # downloading until the test lets it go
    wait_until(lambda: script_server.requests.get("/held.py"))
    server.service.runner.fetcher.deadline = 3.0
    slow = _run(api, ["uv", "run", f"{base}/slow.py"])
    short = _run(api, ["uv", "run", f"{base}/short.py"])
    wait_until(lambda: script_server.requests.get("/slow.py") and script_server.requests.get("/short.py"))
    assert "Downloading the script" in api.inspect_job(job_id=slow.id, namespace=NAMESPACE).status.message

    # Meanwhile the runner starts, cancels and times out other jobs, all while a download is still
    # under way: it never waits for one.
    quick = _run(api, ["python", "-c", "print('quick')"])
    assert wait_stage(api, quick.id, timeout=30).status.stage == "COMPLETED"
    sleeper = _run(api, ["python", "-c", "import time; time.sleep(60)"])
    wait_stage(api, sleeper.id, ("RUNNING",), timeout=30)
    api.cancel_job(job_id=sleeper.id, namespace=NAMESPACE)
    assert wait_stage(api, sleeper.id, timeout=30).status.stage == "CANCELED"
    timed = _run(api, ["python", "-c", "import time; time.sleep(60)"], timeout=1)
    timed_info = wait_stage(api, timed.id, timeout=30)
    assert timed_info.status.stage == "ERROR" and "timed out" in timed_info.status.message
    held_now = api.inspect_job(job_id=held.id, namespace=NAMESPACE).status
    assert held_now.stage not in ("COMPLETED", "ERROR", "CANCELED")
    assert "Downloading the script" in held_now.message
    script_server.release.set()
    held_info = wait_stage(api, held.id, timeout=10)
    assert held_info.status.stage == "ERROR" and "closed the connection" in held_info.status.message

    short_info = wait_stage(api, short.id, timeout=10)
    assert short_info.status.stage == "ERROR"
    assert "could not download the script" in short_info.status.message
    assert "closed the connection" in short_info.status.message
    slow_info = wait_stage(api, slow.id, timeout=10)
    assert slow_info.status.stage == "ERROR"
    assert "no complete answer within 3s" in slow_info.status.message
    assert script_server.requests == {"/held.py": 1, "/slow.py": 1, "/short.py": 1}  # tried once, not on every tick
    logs = "\n".join(api.fetch_job_logs(job_id=short.id, namespace=NAMESPACE))
    assert "could not download the script" in logs


def test_a_fetched_script_runs_and_a_canceled_download_is_dropped(api: HfApi, server, script_server) -> None:
    base = f"http://127.0.0.1:{script_server.server_port}"
    ok = _run(api, ["uv", "run", f"{base}/ok.py"])
    assert wait_stage(api, ok.id, timeout=15).status.stage == "COMPLETED"
    assert "fetched script ran" in "\n".join(api.fetch_job_logs(job_id=ok.id, namespace=NAMESPACE))
    slow = _run(api, ["uv", "run", f"{base}/slow.py"])
    wait_until(lambda: script_server.requests.get("/slow.py"))
    api.cancel_job(job_id=slow.id, namespace=NAMESPACE)
    assert wait_stage(api, slow.id, timeout=5).status.stage == "CANCELED"
