"""Restarts: history survives, jobs that were running end in ERROR, and no process outlives its
server — whether the server stopped cleanly or was killed outright."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import psutil
from huggingface_hub import HfApi
from jobs_helpers import NAMESPACE, job_processes, make_server, wait_stage, wait_until

from console import backend
from console.server import paths

SLEEPER = (
    "import subprocess, sys, time, os\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
    "print('pids', os.getpid(), child.pid, flush=True)\n"
    "time.sleep(120)\n"
)


def _gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def _pids(api: HfApi, job_id: str) -> list[int]:
    """The job's processes (the job and its child) once it says it started them."""
    stream = api.fetch_job_logs(job_id=job_id, follow=True, namespace=NAMESPACE)
    next(x for x in stream if x.startswith("pids"))
    stream.close()
    pids = job_processes(job_id)
    assert len(pids) >= 2
    return pids


def test_clean_stop_kills_running_jobs_and_keeps_history() -> None:
    with make_server() as srv:
        api = HfApi(endpoint=srv.url, token=srv.token)
        done = api.run_job(image="python:3.12", command=["python", "-c", "print('kept')"],
                           labels={"tenant": "acme"}, namespace=NAMESPACE)
        wait_stage(api, done.id)
        running = api.run_job(image="python:3.12", command=["python", "-c", SLEEPER],
                              namespace=NAMESPACE)
        pids = _pids(api, running.id)
    assert all(_gone(p) for p in pids)

    with make_server() as srv:
        api = HfApi(endpoint=srv.url, token=srv.token)
        kept = api.inspect_job(job_id=done.id, namespace=NAMESPACE)
        assert kept.status.stage == "COMPLETED" and kept.labels["tenant"] == "acme"
        assert list(api.fetch_job_logs(job_id=done.id, namespace=NAMESPACE)) == ["kept"]
        stopped = api.inspect_job(job_id=running.id, namespace=NAMESPACE)
        assert stopped.status.stage == "ERROR"
        assert "server stopped" in stopped.status.message


def _console_serve(tmp_path) -> tuple[subprocess.Popen, dict[str, str]]:
    """`console serve` on a free port in its own process (its first stdout line names the URL),
    and the environment it runs with."""
    config = tmp_path / "config.toml"
    config.write_text(f'namespace = "{NAMESPACE}"\n')
    env = dict(os.environ, CONSOLE_CONFIG=str(config))
    proc = subprocess.Popen(
        [sys.executable, "-m", "console", "serve", "--port", "0"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    return proc, env


def test_killed_server_leaves_no_orphans_after_restart(tmp_path) -> None:
    proc, env = _console_serve(tmp_path)
    try:
        first = proc.stdout.readline()
        assert first.startswith("Jobs server listening on http://127.0.0.1:"), first
        url = first.rsplit(" ", 1)[1].strip()
        info = json.loads(paths.server_info_path().read_text())
        assert (info["url"], info["pid"], info["daemon"]) == (url, proc.pid, False)
        token = paths.read_token()
        assert token and (paths.token_path().stat().st_mode & 0o777) == 0o600
        api = HfApi(endpoint=url, token=token)
        job = api.run_job(image="python:3.12", command=["python", "-c", SLEEPER],
                          namespace=NAMESPACE)
        pids = _pids(api, job.id)
        proc.send_signal(signal.SIGKILL)  # a crash: no cleanup at all
        proc.wait(timeout=10)
        # In a sandbox the job dies with its server; without one it outlives it until the restart.
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()

    assert backend.find_running_server() is None  # server.json points at a dead process
    with make_server() as srv:
        wait_until(lambda: all(_gone(p) for p in pids), timeout=5)  # gone by the next start at the latest
        api = HfApi(endpoint=srv.url, token=srv.token)
        crashed = api.inspect_job(job_id=job.id, namespace=NAMESPACE)
        assert crashed.status.stage == "ERROR"
        assert "server stopped" in crashed.status.message
        assert not paths.job_workdir(job.id).exists()


def test_console_serve_is_shared_and_cleans_up(tmp_path) -> None:
    from console.config import Config

    proc, env = _console_serve(tmp_path)
    try:
        url = proc.stdout.readline().rsplit(" ", 1)[1].strip()
        cfg = Config(namespace=NAMESPACE)
        with backend.connect(cfg) as b:
            assert (b.kind, b.url, b.shared, b.namespace) == ("local", url, True, NAMESPACE)
            assert b.api.whoami()["name"] == NAMESPACE
            job = b.api.run_job(image="python:3.12", command=["python", "-c", "print(1)"],
                                namespace=b.namespace)
            assert wait_stage(b.api, job.id).status.stage == "COMPLETED"
            assert [j.id for j in b.api.list_jobs()] == [job.id]  # namespace filled in
        # A second server on the same data folder is refused.
        second = subprocess.run(
            [sys.executable, "-m", "console", "serve", "--port", "0"],
            env=env, capture_output=True, text=True, timeout=30,
        )
        assert second.returncode == 2 and "already runs" in second.stderr
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()
    assert not paths.server_info_path().exists()


def test_backend_starts_an_in_process_server_and_stops_it() -> None:
    from console.config import Config

    cfg = Config(namespace=NAMESPACE)
    b = backend.connect(cfg)
    try:
        assert b.kind == "local" and not b.shared
        assert json.loads(paths.server_info_path().read_text())["url"] == b.url
        assert b.artifacts_dir == paths.artifacts_dir() and b.artifacts_dir.is_dir()
        assert b.trackio_dir == paths.trackio_dir()
        job = b.api.run_job(image="python:3.12", command=["python", "-c", "print(2)"],
                            namespace=b.namespace)
        assert wait_stage(b.api, job.id).status.stage == "COMPLETED"
        # A second console on the same data folder shares it.
        with backend.connect(cfg) as other:
            assert other.url == b.url and other.shared
    finally:
        b.close()
    assert not paths.server_info_path().exists()
    children = {p.pid for p in psutil.Process().children(recursive=True)}
    try:
        backend.connect(cfg, start=backend.NEVER)
    except backend.BackendError as exc:
        assert "console serve" in str(exc)
    else:
        raise AssertionError("connect(start=NEVER) found a server that is gone")
    # it started nothing: no server announced, no new process
    assert not paths.server_info_path().exists()
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= children


def test_hub_backend_is_plain_hfapi() -> None:
    from console.config import Config

    b = backend.connect(Config(namespace="acme-org", backend="hub"))
    assert b.kind == "hub" and b.namespace == "acme-org"
    assert b.url == "https://huggingface.co" or b.url == os.environ.get("HF_ENDPOINT")
    assert b.artifacts_dir is None and b.job_workdir("x") is None
    b.close()
