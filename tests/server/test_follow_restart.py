"""A console follows the data dir's server when it comes back elsewhere: after a `kill -9` of the
daemon, `console server start` starts one on another port, and an open backend (the TUI's) and a
running `console watch` find it through ``server.json`` at their next request instead of calling
the old port forever."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from huggingface_hub import HfApi
from tests.ui.conftest import wait_for

from console import backend
from console.config import Config
from console.server import paths

NAMESPACE = "acme-org"


def _console(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True, timeout=120)


def _config() -> Config:
    path = Path(os.environ["CONSOLE_CONFIG"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'namespace = "{NAMESPACE}"\n')
    return Config(namespace=NAMESPACE, path=path)


def _start_daemon() -> dict:
    started = _console("server", "start")
    assert started.returncode == 0, started.stderr
    return json.loads(paths.server_info_path().read_text())


def _kill_and_restart(info: dict) -> dict:
    """kill -9 the daemon, then `console server start` until it listens on another port."""
    os.kill(info["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and Path(f"/proc/{info['pid']}").exists():
        try:
            os.waitpid(info["pid"], os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.05)
    again = _start_daemon()
    assert again["pid"] != info["pid"]
    if again["url"] == info["url"]:  # the kernel gave the same port back: try once more
        return _kill_and_restart(again)
    return again


def _failing_job(url: str) -> str:
    api = HfApi(endpoint=url, token=paths.read_token())
    job = api.run_job(image="python:3.12", command=[sys.executable, "-c", "import sys; sys.exit(7)"],
                      labels={"tenant": "acme"}, namespace=NAMESPACE)
    return job.id


def test_an_open_backend_follows_the_daemon_to_its_new_port():
    cfg = _config()
    old = _start_daemon()
    b = backend.connect(cfg, start=backend.NEVER)
    try:
        assert b.url == old["url"]
        assert list(b.api.list_jobs(namespace=NAMESPACE)) == []
        new = _kill_and_restart(old)
        job_id = _failing_job(new["url"])
        listed = [j.id for j in b.api.list_jobs(namespace=NAMESPACE)]  # the first call after the restart
        assert listed == [job_id]
        assert b.url == new["url"] and b.api.endpoint == new["url"]
    finally:
        b.close()


def test_console_watch_recovers_within_a_minute_after_the_daemon_comes_back_on_another_port():
    _config()
    old = _start_daemon()
    watch = subprocess.Popen([sys.executable, "-m", "console", "watch", "--interval", "1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []

    def read() -> None:
        assert watch.stdout is not None
        for line in watch.stdout:
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(x.startswith("watch: 0 running") for x in lines):
            time.sleep(0.1)
        assert any(x.startswith("watch: 0 running") for x in lines), lines
        new = _kill_and_restart(old)
        job_id = _failing_job(new["url"])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(job_id in x for x in lines):
            time.sleep(0.2)
        assert any(f"acme job {job_id} failed: exit 7" in x or (job_id in x and "exit 7" in x) for x in lines), (
            lines, watch.poll())
    finally:
        watch.terminate()
        try:
            watch.wait(timeout=15)
        except subprocess.TimeoutExpired:
            watch.kill()
            watch.wait()


async def test_an_open_tui_shows_a_job_of_the_daemon_started_again_on_another_port():
    import asyncio

    from console.ui.app import ConsoleApp

    cfg = _config()
    old = _start_daemon()
    b = backend.connect(cfg, start=backend.NEVER)
    app = ConsoleApp(cfg, b, refresh_seconds=0.5, stream_metrics=False, watch_seconds=None)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            first = await asyncio.to_thread(_failing_job, old["url"])
            await wait_for(pilot, lambda: first in app.jobs_table.rows_by_id, 60, "the first server's job")
            new = await asyncio.to_thread(_kill_and_restart, old)
            second = await asyncio.to_thread(_failing_job, new["url"])
            # the new server's job, within a minute
            await wait_for(pilot, lambda: second in app.jobs_table.rows_by_id, 60, "the new server's job")
            assert app.is_running
            line = app.query_one("#status-line")
            where = new["url"].removeprefix("http://")
            await wait_for(pilot, lambda: where in line.render_text().plain, 10, "the new address in the header")
            shown = line.render_text().plain
            # the header names where the server is now
            assert where in shown and old["url"].removeprefix("http://") not in shown, shown
    finally:
        b.close()
