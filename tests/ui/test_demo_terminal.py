"""`console demo` end to end, on a real pseudo-terminal at 80x24, as a new user meets it.

The demo fills the embedded Jobs server with the example fleet, starts a tenant's real training run
and opens the TUI on the jobs tab. The test reads the screen as the user would, presses the keys
they would (`1`, `?`, `esc`, `q`), and checks that the console exits 0 and that nothing it started
keeps running — apart from the data dir's Jobs server when it runs in the background, which the
test then stops and which must take the run down with it.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import tomllib
from pathlib import Path

import psutil
import pytest
from tests.ui.terminal import Terminal

from console import paths

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc and drives a Linux pty")

START_TIMEOUT = 120.0
"""Seconds for the demo to set the fleet up and draw (a cold start under load is slow; it waits on
what the screen shows, never on time)."""
STAGES = ("SCHEDULING", "RUNNING", "COMPLETED", "ERROR")


def _fleet_tenants() -> list[str]:
    doc = tomllib.loads((paths.training_dir() / "fleet.example.toml").read_text(encoding="utf-8"))
    return [t["id"] for t in doc["tenant"]]


def _rows(screen: str) -> list[list[str]]:
    return [line.split() for line in screen.splitlines()]


def _job_row(screen: str, tenant: str) -> list[str] | None:
    """The jobs table's row of the tenant's job: ID, tenant, kind, stage, flavor..."""
    for cells in _rows(screen):
        if len(cells) >= 5 and cells[1] == tenant and cells[2] == "sft" and cells[3] in STAGES:
            return cells
    return None


def _log_lines(screen: str, job_id: str) -> list[str]:
    """The log pane's lines: below its header (`<id> <tenant> <kind> <stage> follow N lines`)."""
    lines = screen.splitlines()
    for i, line in enumerate(lines):
        if line.split()[:1] == [job_id] and " lines" in line:
            return [entry.strip() for entry in lines[i + 1 : -1] if entry.strip()]
    return []


def _processes_of(home: Path) -> list[psutil.Process]:
    """Live processes started for this test's folders: their environment names `home`."""
    found = []
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            if any(str(home) in value for value in proc.environ().values()):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _strays(home: Path, server: int | None) -> list[str]:
    """The command lines of this test's live processes that are not `server` or one of its own."""
    out = []
    for proc in _processes_of(home):
        try:
            if server is None or (proc.pid != server and server not in [p.pid for p in proc.parents()]):
                out.append(" ".join(proc.cmdline()))
        except psutil.NoSuchProcess:
            continue  # ended meanwhile
    return out


def _wait_until(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)


def _in_session(proc: psutil.Process, session: int) -> bool:
    try:
        return os.getsid(proc.pid) == session
    except OSError:
        return False


def _stop(pid: int, timeout: float = 30.0) -> None:
    """SIGTERM `pid`, and SIGKILL it if it is still there after `timeout` seconds."""
    try:
        proc = psutil.Process(pid)
        proc.terminate()
        proc.wait(timeout)
    except psutil.TimeoutExpired:
        proc.kill()
    except psutil.NoSuchProcess:
        pass


def _announced_server() -> int | None:
    """The pid of the Jobs server the data dir announces, if it still runs."""
    try:
        pid = json.loads(paths.data_dir().joinpath("server.json").read_text()).get("pid")
    except (OSError, ValueError, AttributeError):
        return None
    return pid if isinstance(pid, int) and psutil.pid_exists(pid) else None


def _jobs_tab(screen: str, tenant: str) -> bool:
    """The jobs tab with the local server in the status line and the tenant's run in the table."""
    return bool(re.search(r"\blocal 127\.0\.0\.1:\d+", screen)) and _job_row(screen, tenant) is not None


def _training_in_log(screen: str, job_id: str, tenant: str) -> bool:
    """The run's own log below the table: its header, and the training script's progress lines."""
    return f"{job_id} {tenant} sft" in screen and any(
        line.startswith(("progress step=", "VERDICT: PASS")) for line in _log_lines(screen, job_id)
    )


def _fleet_tab(screen: str, tenants: list[str]) -> bool:
    """One row per tenant of the example fleet: the first has a run, the others have never run."""
    rows = {cells[0]: cells for cells in _rows(screen) if len(cells) > 1 and cells[0] in tenants}
    return (
        set(rows) == set(tenants)
        and rows[tenants[0]][1] in STAGES
        and all(rows[t][1] == "never" for t in tenants[1:])
    )


def _help(screen: str) -> bool:
    return (
        "Keys (esc closes" in screen
        and re.search(r"\b1\s+The tenant fleet\s+everywhere", screen) is not None
        and re.search(r"\bs\s+Submit a training job", screen) is not None
    )


def test_demo_trains_a_tenant_shows_fleet_and_keys_and_quits_leaving_nothing(tmp_path):
    """Each step waits for the whole of what it checks to be on screen at once: a read can land in
    the middle of a frame being drawn."""
    home = paths.data_dir().parent
    tenants = _fleet_tenants()
    terminal = Terminal(
        [sys.executable, "-m", "console", "demo", "--trigger", "1"], env=dict(os.environ), cwd=tmp_path
    )
    try:
        screen = terminal.wait_for(
            lambda s: _jobs_tab(s, tenants[0]), START_TIMEOUT, f"the jobs tab with {tenants[0]}'s run"
        )
        job_id = _job_row(screen, tenants[0])[0]
        terminal.wait_for(
            lambda s: _training_in_log(s, job_id, tenants[0]), START_TIMEOUT, "the run's progress in its log"
        )

        terminal.press("1")
        terminal.wait_for(lambda s: _fleet_tab(s, tenants), 30, "the fleet tab")

        terminal.press("?")
        terminal.wait_for(_help, 30, "the help screen")
        terminal.press("escape")
        terminal.wait_for(
            lambda s: "Keys (esc closes" not in s and _fleet_tab(s, tenants), 30, "the help to close"
        )

        console = psutil.Process(terminal.process.pid)
        session = os.getsid(console.pid)
        terminal.press("q")
        assert terminal.wait_exit(30) == 0
        assert not [p for p in _processes_of(home) if _in_session(p, session)]

        # What outlives the console can only be the data dir's background server and its jobs;
        # stopping the server ends them all.
        server_pid = _announced_server()
        assert server_pid != console.pid
        assert _strays(home, server_pid) == []
        if server_pid is not None:
            _stop(server_pid)
            _wait_until(lambda: not _processes_of(home), 30, "the server and its jobs to end")
    finally:
        terminal.close()
        server_pid = _announced_server()
        if server_pid is not None and server_pid != os.getpid():
            _stop(server_pid)
