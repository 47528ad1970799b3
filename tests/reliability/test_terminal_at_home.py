"""The real `console` on the terminals of people at home over SSH: a window resized hundreds of
times a second, a link that takes a few KB/s, a tmux or screen session detached and re-attached.

Each console runs in a pseudo-terminal (or in tmux / screen) against the data dir's server daemon.
The assertions are deadlines on events (a key's effect reaches the screen while the storm runs,
the memory stays under a bound while the terminal reads slowly), not speed measurements.
"""

from __future__ import annotations

import codecs
import fcntl
import json
import os
import pty
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import psutil
import pytest
from huggingface_hub import HfApi
from tests.conftest import soak
from tests.ui.terminal import Screen

from console import config as config_mod
from console.backend import DAEMON, connect
from console.server import paths as server_paths
from console.ui import driver

from .test_terminal_loss import (
    EXIT_DEADLINE,
    FLOOD_UNTIL_SENTINEL,
    _drain,
    _kill,
    _read_until,
    _run,
    _sentinel,
    _spawn_console,
    _wait_exit,
    _wait_stage,
)

KEY_DEADLINE = 10.0
"""Seconds a key's effect has to reach the screen (it takes well under one when all is well)."""
TAB_MARKS = [(b"3", b"plan floor"), (b"4", b"gnorm"), (b"1", b"Next run"), (b"2", b"Flavor"),
             (b"3", b"plan floor")]
"""A tab key and text only that tab draws."""


@pytest.fixture
def daemon_api() -> HfApi:
    """The data dir's server daemon, started the way a console starts it."""
    backend = connect(config_mod.load(), start=DAEMON)
    backend.close()  # closing a console's backend leaves the daemon running
    info = json.loads(server_paths.server_info_path().read_text())
    return HfApi(endpoint=info["url"], token=server_paths.read_token())


def _set_size(fd: int, rows: int, cols: int) -> None:
    """Resize the terminal: the kernel sends SIGWINCH to the console, as a terminal window does."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


# -- a resize storm ---------------------------------------------------------------------------------


def _spawn_resizable_console() -> tuple[int, int]:
    """The console in a pty whose size it reads from the terminal (COLUMNS and LINES in the
    environment would fix it at 80x24 whatever the window does)."""
    # not measured by coverage either: saving its data at exit is not part of what is timed
    env = {k: v for k, v in _terminal_env().items() if k != "COVERAGE_PROCESS_CONFIG"}
    env["TERM"] = "xterm-256color"
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execve(sys.executable, [sys.executable, "-m", "console"], env)
        finally:
            os._exit(127)
    os.set_inheritable(fd, False)
    _set_size(fd, 24, 80)
    return pid, fd


def test_keys_take_effect_while_the_window_is_resized_hundreds_of_times_a_second(daemon_api):
    pid, fd = _spawn_resizable_console()
    stop = threading.Event()
    resizes = [0]

    def storm() -> None:
        sizes = [(24, 80), (30, 100), (40, 120), (26, 90)]
        while not stop.is_set():
            _set_size(fd, *sizes[resizes[0] % len(sizes)])
            resizes[0] += 1
            time.sleep(0.002)

    storming = threading.Thread(target=storm, daemon=True)
    try:
        assert b"refreshed" in _read_until(fd, lambda out: b"refreshed" in out, 60)
        storming.start()
        for key, mark in TAB_MARKS:
            time.sleep(0.5)
            _drain(fd)
            before = resizes[0]
            os.write(fd, key)
            seen = _read_until(fd, lambda out, mark=mark: mark in out, KEY_DEADLINE)
            assert mark in seen, f"{key!r} did not draw {mark!r} within {KEY_DEADLINE}s of the storm"
            assert storming.is_alive() and resizes[0] > before  # the storm ran meanwhile
        assert resizes[0] >= 300  # hundreds of them
        stop.set()
        storming.join()
        _drain(fd)
        _set_size(fd, 33, 110)  # after the storm, a size it never used is drawn down to its last row
        drawn = _read_until(fd, lambda out: b"\x1b[33;1H" in out and b"Quit" in out, KEY_DEADLINE)
        assert b"\x1b[33;1H" in drawn and b"Quit" in drawn
        os.write(fd, b"q")
        assert _wait_exit(pid, EXIT_DEADLINE, fd) is not None
        pid = 0
    finally:
        stop.set()
        if pid:
            _kill(pid)
        os.close(fd)


# -- a slow terminal --------------------------------------------------------------------------------

SLOW_BYTES_PER_SECOND = 4096
FLOOD_SECONDS = soak(2.0, 8.0)
"""How long the log floods a slow terminal before the checks (CONSOLE_SOAK=full: 8 s)."""
RSS_GROWTH_BOUND_MB = 64.0


def test_a_terminal_read_at_4kb_a_second_gets_fewer_frames_and_the_app_goes_on(daemon_api, tmp_path):
    """A log floods the screen while the terminal takes 4 KB/s: the console's memory stays put,
    a key's effect reaches the screen within the deadline (Textual's own writer queued 30 writes
    and held the app until the terminal took them: the tab drew 25 s late), and `q` exits."""
    sentinel = _sentinel(tmp_path)
    pid, fd = _spawn_console()
    try:
        assert b"refreshed" in _read_until(fd, lambda out: b"refreshed" in out, 60)
        flood = _run(daemon_api, FLOOD_UNTIL_SENTINEL, str(sentinel))
        assert _wait_stage(daemon_api, flood.id, ("RUNNING",)) == "RUNNING"
        assert _read_until(fd, lambda out: b"flood line" in out, 30)
        start_rss = _rss_mb(pid)
        reader = _SlowReader(fd, SLOW_BYTES_PER_SECOND)
        peak = start_rss
        for _ in range(round(FLOOD_SECONDS / 0.2)):  # seconds of a flood on a slow link
            reader.read_for(0.2)
            peak = max(peak, _rss_mb(pid))
        assert peak - start_rss < RSS_GROWTH_BOUND_MB, (start_rss, peak)

        os.write(fd, b"3")
        deadline = time.monotonic() + KEY_DEADLINE
        while b"plan floor" not in reader.seen and time.monotonic() < deadline:
            reader.read_for(0.1)
            peak = max(peak, _rss_mb(pid))
        assert b"plan floor" in reader.seen, "the costs tab did not reach the slow terminal in time"
        assert peak - start_rss < RSS_GROWTH_BOUND_MB, (start_rss, peak)

        os.write(fd, b"q")
        deadline = time.monotonic() + EXIT_DEADLINE
        done = 0
        while not done and time.monotonic() < deadline:
            reader.read_for(0.1)  # still slowly: the last frames are not waited for
            done, _status = os.waitpid(pid, os.WNOHANG)
        assert done, "q did not end the console on a slow terminal"
        pid = 0
    finally:
        sentinel.touch()
        if pid:
            _kill(pid)
        os.close(fd)


def test_after_frames_were_dropped_the_screen_is_what_a_full_redraw_shows(daemon_api, tmp_path):
    """Frames dropped for a slow terminal leave no stale cell: once the flood is over and the
    terminal has read everything, the screen is the same as after a full redraw (ctrl+z, fg)."""
    sentinel = _sentinel(tmp_path)
    screen = Screen(80, 24)
    decode = codecs.getincrementaldecoder("utf-8")("replace").decode
    pid, fd = _spawn_console()
    try:
        screen.feed(decode(_read_until(fd, lambda out: b"refreshed" in out, 60)))
        flood = _run(daemon_api, FLOOD_UNTIL_SENTINEL, str(sentinel))
        assert _wait_stage(daemon_api, flood.id, ("RUNNING",)) == "RUNNING"
        reader = _SlowReader(fd, SLOW_BYTES_PER_SECOND, screen=screen, decode=decode)
        reader.read_for(FLOOD_SECONDS)
        sentinel.touch()
        assert _wait_stage(daemon_api, flood.id, ("COMPLETED", "ERROR")) == "COMPLETED"
        settled = _settle(fd, screen, decode, until="flood line")
        assert "flood line" in settled and "1 Fleet" in settled

        os.write(fd, b"\x1a")  # ctrl+z, then fg: every cell drawn again
        deadline = time.monotonic() + 10
        while psutil.Process(pid).status() != psutil.STATUS_STOPPED and time.monotonic() < deadline:
            _feed(fd, screen, decode, 0.05)
        os.kill(pid, signal.SIGCONT)
        redrawn = _settle(fd, screen, decode)
        assert _below_status(redrawn) == _below_status(settled)
        os.write(fd, b"q")
        assert _wait_exit(pid, EXIT_DEADLINE, fd) is not None
        pid = 0
    finally:
        sentinel.touch()
        if pid:
            _kill(pid)
        os.close(fd)


def _feed(fd: int, screen: Screen, decode, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if select.select([fd], [], [], 0.05)[0]:
            try:
                screen.feed(decode(os.read(fd, 65536)))
            except OSError:
                return


def _below_status(text: str) -> list[str]:
    return text.split("\n")[1:]  # the status line's "refreshed 3s ago" ticks


def _settle(fd: int, screen: Screen, decode, timeout: float = 20.0, until: str = "") -> str:
    """The screen once two looks a second apart agree below the status line (and show `until`:
    a busy machine can take seconds to read a finished job's log into the pane)."""
    deadline = time.monotonic() + timeout
    _feed(fd, screen, decode, 1.0)
    before = screen.text()
    while time.monotonic() < deadline:
        _feed(fd, screen, decode, 1.0)
        now = screen.text()
        if _below_status(now) == _below_status(before) and until in now:
            return now
        before = now
    return before


class _SlowReader:
    """Reads a pty master at a fixed byte rate, as a slow link would, keeping the recent bytes."""

    def __init__(self, fd: int, rate: int, screen: Screen | None = None, decode=None) -> None:
        self.fd, self.rate = fd, rate
        self.screen, self.decode = screen, decode
        self.start = time.monotonic()
        self.read = 0
        self.seen = b""

    def read_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(0.05)
            allowed = int((time.monotonic() - self.start) * self.rate) - self.read
            if allowed > 0 and select.select([self.fd], [], [], 0)[0]:
                try:
                    data = os.read(self.fd, min(allowed, 65536))
                except OSError:
                    return
                self.read += len(data)
                self.seen = (self.seen + data)[-65536:]
                if self.screen is not None:
                    self.screen.feed(self.decode(data))


# -- the frame writer itself --------------------------------------------------------------------------


class _StuckTerminal:
    """A terminal file whose writes block until `release` is set; keeps what was written."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.written: list[str] = []
        self.writing = threading.Event()

    def write(self, text: str) -> None:
        self.writing.set()
        self.release.wait(60)
        self.written.append(text)

    def flush(self) -> None:
        pass


def test_frames_for_a_stuck_terminal_are_dropped_and_the_whole_screen_follows(monkeypatch):
    monkeypatch.setattr(driver, "MAX_FRAME_WAIT_SECONDS", 0.05)
    tty = _StuckTerminal()
    caught_up = threading.Event()
    writer = driver.FrameWriter(tty, caught_up.set)
    writer.start()
    try:
        writer.write_frame("frame 0")
        assert tty.writing.wait(5)  # the writer is stuck in the terminal with frame 0
        writer.write("\x1b[?25l")
        for n in range(1, 2000):  # the app goes on drawing: none of these waits for the terminal
            writer.write_frame(f"frame {n} " + "x" * 1000)
            if n == 1:
                time.sleep(0.1)  # frame 1 has waited too long when frame 2 comes
        writer.write("\x07")
        assert tty.written == [] and not tty.release.is_set()  # all drawn while frame 0 is stuck
        assert writer.backlog < 100  # only what is not a frame waits: nothing piles up
        assert writer.frames_dropped == 1999 and not caught_up.is_set()
        tty.release.set()
        assert caught_up.wait(5)  # everything written: the app is asked for the whole screen
        assert tty.written == ["frame 0", "\x1b[?25l", "\x07"]
        writer.write_frame("the whole screen")  # and it goes out
        deadline = time.monotonic() + 5
        while tty.written[-1] != "the whole screen" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert tty.written[-1] == "the whole screen"
    finally:
        tty.release.set()
        writer.stop()


def test_a_terminal_that_reads_nothing_holds_up_neither_frames_nor_closing(monkeypatch):
    """A real pty nobody reads (its buffer fills after some KB): frames go on without waiting,
    and closing gives up on the terminal after `STOP_WAIT_SECONDS`, not never."""
    monkeypatch.setattr(driver, "STOP_WAIT_SECONDS", 0.5)
    monkeypatch.setattr(driver, "MAX_FRAME_WAIT_SECONDS", 0.1)
    master, slave = pty.openpty()
    tty = open(slave, "w", encoding="utf-8", closefd=True)  # noqa: SIM115 (closed below)
    writer = driver.FrameWriter(tty, lambda: None)
    writer.start()
    try:
        for n in range(500):  # 5 MB of frames into a terminal that takes about 20 KB
            writer.write_frame(f"frame {n} " + "x" * 10_000)
            if n % 50 == 0:
                time.sleep(0.15)  # waiting frames age past the limit
        writer.write("\x1b[?1049l")
        # every frame was handed over while the terminal took none of them past its buffer
        assert writer.frames_dropped > 0 and writer.backlog < 200_000
        writer.stop()
        assert writer.is_alive()  # stop() gave up on the write still stuck in the terminal
    finally:
        os.close(master)  # the stuck write fails (EIO) and the thread ends
        writer.join(5)
        tty.close()
    assert not writer.is_alive()


def test_a_terminal_that_keeps_up_gets_every_frame_in_order(monkeypatch):
    monkeypatch.setattr(driver, "MAX_FRAME_WAIT_SECONDS", 5.0)  # a loaded test machine is no slow link

    class Fast:
        def __init__(self) -> None:
            self.written: list[str] = []

        def write(self, text: str) -> None:
            self.written.append(text)

        def flush(self) -> None:
            pass

    tty = Fast()
    writer = driver.FrameWriter(tty, lambda: None)
    writer.start()
    for n in range(200):
        writer.write_frame(f"frame {n}")
        writer.write(f"mode {n}")
        if n % 20 == 0:
            time.sleep(0.01)
    deadline = time.monotonic() + 10
    while writer.backlog and time.monotonic() < deadline:
        time.sleep(0.01)
    writer.stop()
    assert not writer.is_alive()
    assert writer.frames_dropped == 0
    assert tty.written == [part for n in range(200) for part in (f"frame {n}", f"mode {n}")]


def test_a_gone_terminal_never_blocks_a_write():
    class Gone:
        tries = 0

        def write(self, text: str) -> None:
            self.tries += 1
            raise OSError(5, "Input/output error")

        def flush(self) -> None:
            self.tries += 1
            raise OSError(5, "Input/output error")

    gone = Gone()
    writer = driver.FrameWriter(gone, lambda: None)
    writer.start()
    for n in range(10_000):
        writer.write(f"mode {n} " + "x" * 200)  # 2 MB of what is never dropped: discarded
        writer.write_frame(f"frame {n}")
    writer.stop()
    assert writer.backlog == 0 and not writer.is_alive()
    assert gone.tries < 100, gone.tries  # once gone, the terminal is not tried for each write


def test_the_app_marks_its_screen_updates_as_frames():
    """`ConsoleApp._display` wraps Textual's `App._display`: if Textual renamed it, frames would
    no longer be told from other output (and none could be dropped)."""
    from textual.app import App

    from console.ui.app import ConsoleApp

    assert "_display" in vars(App) and "_display" in vars(ConsoleApp)
    assert ConsoleApp.get_driver_class(object.__new__(ConsoleApp)) is driver.ConsoleDriver


# -- tmux and screen ------------------------------------------------------------------------------


def _terminal_env() -> dict[str, str]:
    """This environment without COLUMNS and LINES (pytest-xdist's workers set them to 80x24; a
    console that inherits them keeps that size whatever its window does)."""
    return {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}


def _attach(argv: list[str], rows: int, cols: int, env: dict[str, str]) -> tuple[int, int]:
    """A tmux or screen client in a terminal of rows x cols. The size is set before the client
    starts (set after, it could land before the client listens for SIGWINCH and be missed, and
    the client would attach at the default 80x24)."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            _set_size(0, rows, cols)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    return pid, fd


def _pump(fd: int, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if select.select([fd], [], [], 0.05)[0]:
            try:
                if not os.read(fd, 65536):
                    return
            except OSError:
                return


def _poll(capture, predicate, timeout: float, fd: int | None = None) -> str:
    """Capture until `predicate` holds; the attached client's output (`fd`) is read meanwhile, as
    a terminal would, so the client never waits on it."""
    deadline = time.monotonic() + timeout
    text = capture()
    while not predicate(text) and time.monotonic() < deadline:
        if fd is None:
            time.sleep(0.2)
        else:
            _pump(fd, 0.2)
        text = capture()
    return text


def _whole_screen(text: str, rows: int, cols: int) -> bool:
    """The tabs on top, the costs tab's text, the footer on the last row, the rule at full width."""
    lines = text.rstrip("\n").split("\n")
    return (len(lines) >= rows and "1 Fleet" in lines[1] and "plan floor" in text
            and "Quit" in lines[rows - 1] and len(lines[2].rstrip()) == cols)


def _detach_then_reattach(attach_argv, capture, detach_key: bytes, env) -> None:
    """Attached at 100x30, detached, the costs tab chosen meanwhile, re-attached at 120x40."""
    pid, fd = _attach(attach_argv, 30, 100, env)
    try:
        _pump(fd, 1.0)
        text = _poll(capture, lambda t: "Quit" in t.rstrip("\n").split("\n")[-1] and "Message" in t, 60, fd)
        assert "Message" in text  # the jobs table at 100 columns
        os.write(fd, detach_key)
        _pump(fd, 1.0)
        assert _wait_exit(pid, 10, fd) is not None  # the client is gone, the console runs on
        pid = 0
    finally:
        if pid:
            _kill(pid)
        os.close(fd)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_tmux_detach_and_reattach_at_another_size_draws_the_whole_screen(daemon_api, tmp_path):
    env = dict(_terminal_env(), TERM="xterm-256color", TMUX_TMPDIR=str(tmp_path))
    env.pop("TMUX", None)
    tmux = ["tmux", "-L", "console-test", "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-s", "c", "-x", "80", "-y", "24", _console_bin()],
                   env=env, check=True)

    def capture() -> str:
        return subprocess.run([*tmux, "capture-pane", "-p", "-t", "c"], env=env,
                              capture_output=True, text=True).stdout

    try:
        assert "refreshed" in _poll(capture, lambda t: "refreshed" in t, 60)
        _detach_then_reattach([*tmux, "attach", "-t", "c"], capture, b"\x02d", env)
        subprocess.run([*tmux, "send-keys", "-t", "c", "3"], env=env, check=True)
        pid, fd = _attach([*tmux, "attach", "-t", "c"], 40, 120, env)
        try:
            _pump(fd, 1.0)
            rows = 40 - 1  # tmux's status line takes the last row of the client
            text = _poll(capture, lambda t: _whole_screen(t, rows, 120), 60, fd)
            assert _whole_screen(text, rows, 120), text
        finally:
            _kill(pid)
            os.close(fd)
    finally:
        subprocess.run([*tmux, "kill-server"], env=env, capture_output=True)


@pytest.mark.skipif(shutil.which("screen") is None, reason="GNU screen is not installed")
def test_screen_detach_and_reattach_at_another_size_draws_the_whole_screen(daemon_api, tmp_path):
    screendir = tmp_path / "screens"
    screendir.mkdir(mode=0o700)
    rc = tmp_path / "screenrc"
    rc.write_text("startup_message off\ndefutf8 on\n")
    env = dict(_terminal_env(), TERM="xterm-256color", SCREENDIR=str(screendir), LANG="C.UTF-8")
    env.pop("STY", None)
    screen = ["screen", "-c", str(rc)]
    hardcopy = tmp_path / "hardcopy"
    subprocess.run([*screen, "-U", "-d", "-m", "-S", "c", _console_bin()], env=env, check=True)

    def capture() -> str:
        hardcopy.unlink(missing_ok=True)
        subprocess.run([*screen, "-S", "c", "-X", "hardcopy", str(hardcopy)], env=env)
        deadline = time.monotonic() + 2
        while not hardcopy.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.1)
        try:
            return hardcopy.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    try:
        assert "refreshed" in _poll(capture, lambda t: "refreshed" in t, 60)
        _detach_then_reattach([*screen, "-U", "-r", "c"], capture, b"\x01d", env)
        subprocess.run([*screen, "-S", "c", "-X", "stuff", "3"], env=env, check=True)
        pid, fd = _attach([*screen, "-U", "-r", "c"], 40, 120, env)
        try:
            _pump(fd, 1.0)
            text = _poll(capture, lambda t: _whole_screen(t, 40, 120), 60, fd)
            assert _whole_screen(text, 40, 120), text
        finally:
            _kill(pid)
            os.close(fd)
    finally:
        subprocess.run([*screen, "-S", "c", "-X", "quit"], env=env, capture_output=True)


def _console_bin() -> str:
    return str(Path(sys.executable).parent / "console")
