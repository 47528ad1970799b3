"""The last screen on the terminal before anything loads (`console.firstframe`), and the screen the
app keeps when it quits (`console.ui.lastframe`).

End to end on a real pseudo-terminal: a console quits on its jobs tab; the next `console` paints the
kept picture, marked with its age, before Textual is imported (its stamp comes before the app's
own first frame), keeps a key typed meanwhile for the app, and gives the terminal back as it was.
"""

from __future__ import annotations

import json
import os
import sys
import termios
import time

import pytest
from tests.ui.terminal import Terminal

from console import config as config_mod
from console import firstframe
from console.backend import DAEMON, connect

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="drives a Linux pty")

START_TIMEOUT = 90.0


# -- the kept picture ---------------------------------------------------------------------------


def test_a_kept_picture_reads_back_only_for_its_start_and_size():
    lines = [f"\x1b[1mrow {i}\x1b[0m" for i in range(5)]
    assert firstframe.save(lines, 40, 5, key="k", at=100.0)
    assert firstframe.load("k", 40, 5) == (lines, 100.0)
    assert firstframe.load("other start", 40, 5) is None  # another command line or config
    assert firstframe.load("k", 41, 5) is None  # the terminal was resized since
    assert firstframe.load("k", 40, 6) is None
    assert not firstframe.save(lines, 40, 6, key="k")  # a picture of the wrong height is not kept


def test_a_kept_picture_holds_styles_and_text_only():
    hostile = "ok\x1b[2J\x1b]0;pwned\x07\x1b[31mred\x1b[0m\x07\x9bbad"
    assert firstframe.save([hostile], 20, 1, key="k")
    (line,), _ = firstframe.load("k", 20, 1)
    assert "\x1b[2J" not in line and "\x07" not in line and "\x9b" not in line and "\x1b]" not in line
    assert "\x1b[31mred\x1b[0m" in line


def test_the_key_follows_the_config_file(tmp_path, monkeypatch):
    config = tmp_path / "c.toml"
    monkeypatch.setenv("CONSOLE_CONFIG", str(config))
    before = firstframe.start_key([])
    config.write_text('namespace = "other"\n')
    assert firstframe.start_key([]) != before  # an edited config: the old picture is not painted
    assert firstframe.start_key(["--read-only"]) != firstframe.start_key([])
    assert json.loads(firstframe.start_key(["--config", "/x/y.toml"]))[1] == "/x/y.toml"


def test_the_picture_is_the_alternate_screen_with_its_age():
    out = firstframe.render(["a", "b"], 30, at=1000.0, now=1000.0 + 125)
    assert out.startswith("\x1b[?1049h")
    assert "\x1b[1;1H\x1b[0ma" in out and "\x1b[2;1H\x1b[0mb" in out
    assert "kept 2m ago" in out


def test_no_picture_without_a_terminal(monkeypatch):
    assert firstframe.save(["x"], 10, 1, key=firstframe.start_key([]))
    assert not firstframe.paint([])  # pytest's stdin is not a terminal


# -- end to end ---------------------------------------------------------------------------------


def _console(env: dict[str, str]) -> Terminal:
    return Terminal([sys.executable, "-m", "console"], env=env)


def test_a_reopened_console_paints_its_last_screen_first_and_keeps_a_key(tmp_path):
    backend = connect(config_mod.load(), start=DAEMON)
    try:
        job = backend.api.run_job(
            image="python:3.12", command=[sys.executable, "-c", "print('done')"], flavor="cpu-basic",
            labels={"app": "console", "tenant": "acme", "kind": "sft", "env": "dev"},
            namespace=backend.namespace,
        )
    finally:
        backend.close()
    short = job.id[-8:]
    env = {k: v for k, v in os.environ.items() if k != "COVERAGE_PROCESS_CONFIG"}

    first = _console(env)
    try:
        first.wait_for(lambda s: short in s and "COMPLETED" in s, START_TIMEOUT, "the job, completed")
        first.press("q")
        assert first.wait_exit(30) == 0
    finally:
        first.close()
    assert firstframe.frame_path().is_file()

    second = _console(env)
    try:
        # painted before the app's own frame: the kept picture is the first thing on the terminal
        screen = second.wait_for(lambda s: "kept" in s and "ago" in s, START_TIMEOUT, "the kept picture")
        assert short in screen and "COMPLETED" in screen  # the rows of the last screen
        second.press("3")  # typed before Textual has the terminal
        # the costs tab the key asked for, drawn by the app over the kept picture (whose costs
        # summary also reads "plan floor")
        second.wait_for(lambda s: "plan floor" in s and "kept" not in s, START_TIMEOUT,
                        "the costs tab the key asked for, drawn by the app")
        second.press("q")
        assert second.wait_exit(30) == 0
        attrs = termios.tcgetattr(second.fd)
        assert attrs[3] & termios.ECHO and attrs[3] & termios.ICANON  # the terminal as it was
    finally:
        second.close()


def test_a_start_that_fails_after_the_picture_leaves_the_alternate_screen(tmp_path, monkeypatch):
    config = tmp_path / "local.toml"
    config.write_text('backend = "local"\n')
    monkeypatch.setenv("CONSOLE_CONFIG", str(config))
    env = {k: v for k, v in os.environ.items() if k != "COVERAGE_PROCESS_CONFIG"}
    key = firstframe.start_key(["--read-only"])
    assert firstframe.save(["kept row"] + [""] * 23, 80, 24, key=key, at=time.time())
    term = Terminal([sys.executable, "-m", "console", "--read-only"], env=env)
    try:
        status = term.wait_exit(60)  # read-only with no server running: one line, exit 2
        raw = bytes(term.raw)
        assert status == 2
        assert b"kept row" in raw and raw.rindex(b"\x1b[?1049l") > raw.index(b"kept row")
        assert b"no local Jobs server is running" in raw
        assert termios.tcgetattr(term.fd)[3] & termios.ECHO
    finally:
        term.close()
