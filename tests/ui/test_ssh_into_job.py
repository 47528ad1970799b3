"""`x` on the embedded server runs the real `ssh` client with the key that server accepts: a
failure shows ssh's own words in the TUI, and host keys are kept in the data folder, never ~/.ssh."""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import pytest
from tests.ui.conftest import notes, run_python, shown, wait_for

from console import paths
from console.ui.app import ConsoleApp

pytestmark = pytest.mark.skipif(not Path("/usr/bin/ssh").exists(), reason="needs the OpenSSH client")


def _snapshot(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


async def _press_x_on_a_running_ssh_job(app, pilot, job_id: str) -> str:
    table = app.jobs_table
    await wait_for(pilot, lambda: job_id in table.rows_by_id and table.rows_by_id[job_id].stage == "RUNNING"
                   and (table.rows_by_id[job_id].ssh_url or "").startswith("ssh://"), what="the job's ssh url")
    table.select_job(job_id)
    before = len(shown(app))
    await pilot.press("x")
    await wait_for(pilot, lambda: len(shown(app)) > before, timeout=60, what="ssh's end")
    return notes(app)[-1]


async def test_ssh_refused_by_the_server_shows_why_in_the_tui(backend, cfg, tmp_path):
    job = run_python(backend, "import time; time.sleep(90)", ssh=True)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: paths.server_ssh_key_path().is_file(), what="the server's client key")
        # A key the server never made (the files replaced under it): the server refuses it.
        key = paths.server_ssh_key_path()
        key.unlink()
        key.with_name(key.name + ".pub").unlink()
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        message = await _press_x_on_a_running_ssh_job(app, pilot, job.id)
        assert "exit 255" in message and f"{job.id}@127.0.0.1: Permission denied (publickey)" in message
        assert app.screen is app.screen_stack[0] and app.is_running
    assert not list((paths.data_dir() / "ssh").glob("ssh-*.log"))  # the run's log is gone


async def test_ssh_in_with_the_servers_key_writes_no_known_hosts_in_home(backend, cfg, tmp_path, monkeypatch):
    home = tmp_path / "fresh-home"  # no keys, no ~/.ssh: the server's own key is what gets in
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    login_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    before = _snapshot(login_home / ".ssh" / "known_hosts")  # ssh's default ignores $HOME
    job = run_python(backend, "import time; time.sleep(90)", ssh=True)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        message = await _press_x_on_a_running_ssh_job(app, pilot, job.id)
        assert message == f"Back from ssh {app.jobs_table.rows_by_id[job.id].ssh_url} (exit 0)"
    assert not (home / ".ssh").exists()
    assert _snapshot(login_home / ".ssh" / "known_hosts") == before
    known = paths.data_dir() / "ssh" / "known_hosts"
    found = subprocess.run(["ssh-keygen", "-F", "console-local-jobs-server", "-f", str(known)],
                           capture_output=True, text=True)
    assert found.returncode == 0 and "ssh-ed25519" in found.stdout
