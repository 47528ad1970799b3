"""Faults on this machine: SIGKILL while the config or the ledger is being written, and the
terminal closing (SIGHUP) under the real `console` in a pty. (The embedded server killed with
running jobs — no orphan after restart, jobs ERROR — is tests/server/test_durability.py.)"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import sqlite3
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import psutil
import pytest

from console import config as config_mod
from console import ledger as ledger_mod
from console import paths
from console.server import paths as server_paths

CONFIG_WRITER = r"""
import sys
from console import config
cfg = config.Config(namespace="oncall")
i = 0
while True:
    i += 1
    cfg.seats = i
    cfg.defaults.env = "env" + "x" * (i % 500)  # files of varying size
    config.save(cfg, sys.argv[1])
    print(i, flush=True)
"""

LEDGER_WRITER = r"""
import sys
from console.ledger import Ledger, LedgerEntry
ledger = Ledger(sys.argv[1])
i = 0
while True:
    batch = [LedgerEntry(job_id=f"job{i + k:08d}", tenant="acme", kind="sft", env="prod",
                         flavor="l4x1", price_per_hour=0.8, price_source="shipped",
                         running_seconds=60.0, running_source="durations", cost_usd=0.0134,
                         stage="COMPLETED", message=None, wasted=False, created_at=None,
                         started_at=None, finished_at=None, month="2026-12") for k in range(7)]
    ledger.record(batch)
    i += 7
    print(i, flush=True)  # everything below i is committed
"""


def _kill_mid_write(script: str, target: Path, rounds: int) -> list[int]:
    """Run a writer, SIGKILL it at a different moment each round; the last count it reported."""
    reported = []
    for n in range(rounds):
        proc = subprocess.Popen([sys.executable, "-c", script, str(target)],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        last = 0
        deadline = time.monotonic() + 0.3 + 0.07 * n
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 0.05)
            if ready:
                line = proc.stdout.readline()
                if line:
                    last = int(line)
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate()
        for line in rest.split():
            last = int(line)
        reported.append(last)
    return reported


def test_sigkill_while_saving_the_config_never_leaves_a_broken_file(tmp_path):
    (tmp_path / "cfg").mkdir()
    target = tmp_path / "cfg" / "config.toml"
    counts = _kill_mid_write(CONFIG_WRITER, target, rounds=6)
    assert max(counts) > 0
    cfg = config_mod.load(target)  # parses and validates: never half a file
    assert cfg.namespace == "oncall" and cfg.seats >= 1
    assert tomllib.loads(target.read_text())["seats"] == cfg.seats
    assert target.stat().st_mode & 0o077 == 0
    # a temp file a kill interrupts is only a dot-file beside it, never the config
    assert all(p.name.startswith(".config.toml.") for p in target.parent.iterdir() if p != target)


def test_sigkill_while_writing_the_ledger_loses_no_committed_entry(tmp_path):
    target = tmp_path / "ledger.sqlite"
    counts = _kill_mid_write(LEDGER_WRITER, target, rounds=6)
    assert max(counts) > 0
    with sqlite3.connect(target) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    ledger = ledger_mod.Ledger(target)
    ids = ledger.job_ids()
    assert len(ids) % 7 == 0  # whole transactions only
    assert {f"job{i:08d}" for i in range(counts[-1])} <= ids  # every reported commit is there
    assert len(ids) >= max(counts)


def _read_until(fd: int, predicate, timeout: float) -> bytes:
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not predicate(out):
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                out += os.read(fd, 65536)
            except OSError:
                break
    return out


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_sighup_ends_the_app_its_server_and_its_jobs_cleanly(sig):
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="80", LINES="24")
    pid, fd = pty.fork()
    if pid == 0:  # the child: the real console on a terminal
        os.execve(sys.executable, [sys.executable, "-m", "console"], env)
    try:
        # the console started its own Jobs server: wait for it, then give it a running job
        info_path = server_paths.server_info_path()
        deadline = time.monotonic() + 30
        screen = b""
        while not info_path.exists() and time.monotonic() < deadline:
            screen += _read_until(fd, lambda _: False, 0.2)
        info = json.loads(info_path.read_text())
        assert info["pid"] == pid
        token = server_paths.read_token()
        body = json.dumps({"dockerImage": "python:3.12", "flavor": "cpu-basic",
                           "command": [sys.executable, "-c", "import time; time.sleep(300)"]})
        req = urllib.request.Request(f"{info['url']}/api/jobs/{_namespace()}", data=body.encode(),
                                     headers={"authorization": f"Bearer {token}",
                                              "content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            job_id = json.loads(resp.read())["id"]
        job_pids = _wait_for_job_processes(job_id)
        screen += _read_until(fd, lambda out: b"STALE" in out or b"refreshed" in out, 10)
        threads = psutil.Process(pid).num_threads()
        assert threads > 1

        os.kill(pid, sig)
        deadline = time.monotonic() + 20
        status = None
        while time.monotonic() < deadline:
            _read_until(fd, lambda _: False, 0.1)
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
        assert status is not None and os.WIFEXITED(status), f"the console did not exit on {sig}"
        assert os.WEXITSTATUS(status) == 128 + sig
        pid = 0
        assert all(not psutil.pid_exists(p) or psutil.Process(p).status() == "zombie"
                   for p in job_pids), "a job outlived the console"
        assert not info_path.exists()  # it said goodbye: no stale server.json
        db = sqlite3.connect(server_paths.db_path())
        stage, message = db.execute("SELECT stage, message FROM jobs WHERE id = ?",
                                    (job_id,)).fetchone()
        assert stage == "ERROR" and "server stopped" in message
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)


def _namespace() -> str:
    return config_mod.load().namespace


def _wait_for_job_processes(job_id: str, timeout: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = []
        for proc in psutil.process_iter(["pid"]):
            try:
                if proc.environ().get("JOB_ID") == job_id:
                    found.append(proc.pid)
            except psutil.Error:
                continue
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("the job never started")


def test_paths_stay_in_the_test_sandbox():
    assert "home" in str(paths.data_dir())
