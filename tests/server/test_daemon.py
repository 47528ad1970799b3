"""The data dir's Jobs server daemon: started once by whichever console needs it first, shared,
managed with `console server status|stop|logs`, and never started by a report or a read-only
command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from huggingface_hub import HfApi

from console import backend
from console.config import Config
from console.server import paths

NAMESPACE = "acme-org"


def _console(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True,
                          input=stdin, timeout=120)


def _config(tmp_path: Path) -> Config:
    path = Path(os.environ["CONSOLE_CONFIG"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'namespace = "{NAMESPACE}"\n')
    return Config(namespace=NAMESPACE, path=path)


def test_reports_and_read_only_commands_start_no_server(tmp_path):
    _config(tmp_path)
    fleet_file = tmp_path / "fleet.toml"
    fleet_file.write_text(
        'base_model = "tiny-random"\nmodel_b = 1.0\nflavor = "t4-small"\nschedule = "@weekly"\n'
        'epochs = 1\n[[tenant]]\nid = "acme"\ndataset = "ops/acme"\nexamples = 100\n'
    )
    status = _console("server", "status")
    assert status.returncode == 3 and "No local Jobs server is running" in status.stdout
    reports = (["--read-only", "fleet", "show"], ["fleet", "show"], ["fleet", "apply", "--dry-run", str(fleet_file)])
    for args in reports:
        done = _console(*args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stderr.strip().splitlines() == [
            "console: no local Jobs server is running (`console` starts one; `console serve` runs one in the "
            "foreground)"
        ], args
    ledger = _console("ledger")
    assert ledger.returncode == 0, ledger.stderr
    assert "showing the ledger as last recorded" in ledger.stderr and "Cost ledger" in ledger.stdout
    assert not paths.server_info_path().exists()
    assert not (paths.server_dir() / "jobs.sqlite3").exists()  # no server ever opened its database


def test_two_consoles_starting_at_once_share_one_daemon_that_outlives_them(tmp_path):
    cfg = _config(tmp_path)
    urls: list[str] = []

    def start() -> None:
        b = backend.connect(cfg, start=backend.DAEMON)
        urls.append(b.url)
        assert b.shared
        b.close()

    threads = [threading.Thread(target=start) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(urls) == 2 and urls[0] == urls[1]
    info = json.loads(paths.server_info_path().read_text())
    assert info["daemon"] and info["pid"] != os.getpid() and info["url"] == urls[0]
    api = HfApi(endpoint=info["url"], token=paths.read_token())
    job = api.run_job(image="python:3.12", command=[sys.executable, "-c", "import time; time.sleep(300)"],
                      labels={"tenant": "acme"}, namespace=NAMESPACE)
    running = api.wait_for_job(job.id, stages=["RUNNING"], timeout=30, poll_interval=0.05, namespace=NAMESPACE)
    assert running.status.stage == "RUNNING"

    status = _console("server", "status")
    assert status.returncode == 0, status.stderr
    assert f"pid {info['pid']}" in status.stdout and "in the background (daemon)" in status.stdout
    assert job.id in status.stdout and "tenant acme" in status.stdout
    from console.server.host import sandbox

    assert sandbox.detect().describe() in status.stdout  # sandboxed, or NO SANDBOX said out loud

    logs = _console("server", "logs")
    assert f"Jobs server started in the background on {info['url']}" in logs.stdout

    refused = _console("server", "stop")  # not a terminal: it does not guess
    assert refused.returncode == 2 and job.id in refused.stdout and "--yes" in refused.stderr
    assert api.inspect_job(job_id=job.id, namespace=NAMESPACE).status.stage == "RUNNING"

    stopped = _console("server", "stop", "--yes")
    assert stopped.returncode == 0 and f"Stopped the local Jobs server (pid {info['pid']})" in stopped.stdout
    assert not paths.server_info_path().exists()
    with backend.connect(cfg) as b:  # the record survives: the job ended with the server
        ended = b.api.inspect_job(job_id=job.id, namespace=NAMESPACE)
        assert ended.status.stage == "ERROR" and "server stopped" in ended.status.message


def test_server_start_starts_the_daemon_once_and_prints_the_hf_cli_line_that_works(tmp_path):
    _config(tmp_path)
    started = _console("server", "start")
    try:
        assert started.returncode == 0, started.stderr
        info = json.loads(paths.server_info_path().read_text())
        assert info["daemon"] and f"pid {info['pid']}" in started.stdout
        [line] = [x for x in started.stdout.splitlines() if x.startswith("  hf CLI: ")]
        assert line == (f"  hf CLI: HF_ENDPOINT={info['url']} HF_TOKEN=$(cat {paths.token_path()}) "
                        "hf jobs ps -a")
        hf = Path(sys.executable).with_name("hf")
        env = dict(os.environ, HF_ENDPOINT=info["url"], HF_TOKEN=paths.read_token())
        listed = subprocess.run([str(hf), "jobs", "ps", "-a"], capture_output=True, text=True, env=env, timeout=60)
        assert (listed.returncode, listed.stdout) == (0, "No results found.\n"), listed.stderr  # token accepted
        again = _console("server", "start")
        assert again.returncode == 0 and again.stdout.startswith("Already running.\n")
        assert json.loads(paths.server_info_path().read_text())["pid"] == info["pid"]
    finally:
        stopped = _console("server", "stop", "--yes")
    assert stopped.returncode == 0 and not paths.server_info_path().exists()
    none = _console("server", "status")
    assert none.returncode == 3 and "`console server start` starts one in the background" in none.stdout
