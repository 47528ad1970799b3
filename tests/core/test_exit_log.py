"""`CONSOLE_EXIT_LOG`: every `console` says why it ended, in the file the variable names, one
entry per process exit (a terminal that is gone shows nothing)."""

from __future__ import annotations

import os
import subprocess
import sys


def _console(*args: str, log, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True,
                          env={**os.environ, "CONSOLE_EXIT_LOG": str(log), **env}, timeout=120,
                          stdin=subprocess.DEVNULL)


def test_each_exit_says_its_status_and_why(tmp_path):
    log = tmp_path / "exit.log"
    refused = _console("--read-only", log=log)  # no server, and read-only starts none: one line
    assert refused.returncode == 2 and "no local Jobs server is running" in refused.stderr
    _console("--version", log=log)
    typo = _console("nosuch", log=log)
    assert typo.returncode == 2
    entries = log.read_text(encoding="utf-8").splitlines()
    assert len(entries) == 3, entries
    assert "pid " in entries[0] and " exit 2: CommandError: no local Jobs server is running" in entries[0]
    assert entries[1].endswith(" exit 0: SystemExit(0)")
    assert entries[2].endswith(" exit 2: SystemExit(2)")


def test_nothing_is_written_without_the_variable(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CONSOLE_EXIT_LOG"}
    here = tmp_path / "cwd"
    here.mkdir()
    done = subprocess.run([sys.executable, "-m", "console", "--read-only"], capture_output=True, text=True,
                          env=env, cwd=here, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and list(here.iterdir()) == []


def test_a_console_whose_screen_fails_exits_1_and_says_why(tmp_path):
    """An exception inside the app ends the console with status 1, not 0: a wrapper or a script
    that restarts it (or an on-call's shell) sees a failed console, and the exit log names the
    error (Textual prints its traceback on the terminal too)."""
    log = tmp_path / "exit.log"
    code = ("import console.ui.app as ui\n"
            "def compose(self):\n"
            "    raise RuntimeError('the planted failure')\n"
            "ui.ConsoleApp.compose = compose\n"
            "from console.cli import main\n"
            "raise SystemExit(main([]))\n")
    env = {**os.environ, "CONSOLE_EXIT_LOG": str(log),
           "TEXTUAL_DRIVER": "textual.drivers.headless_driver:HeadlessDriver"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    entries = log.read_text(encoding="utf-8").splitlines()
    assert len(entries) == 1 and " exit 1: " in entries[0] and "the planted failure" in entries[0], entries
