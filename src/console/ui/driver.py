"""The console's terminal driver: a terminal that cannot keep up gets fewer frames, never a queue.

Textual's `LinuxDriver` hands every write to a `WriterThread` whose queue holds 30 writes and
blocks the caller when full (textual/drivers/_writer_thread.py, `Queue(MAX_QUEUED_WRITES)` and
`self._queue.put(text)`). On a slow terminal (an SSH link at a few KB/s) the app's main thread
then sits in `Queue.put` inside `App._display`: keys, timers and workers' messages wait for the
terminal, and what the terminal finally shows is many seconds old.

`ConsoleDriver` keeps Textual's driver for everything else (input, modes, suspend/resume) and
replaces only where the output goes:

- a frame (everything `App._display` writes for one screen update) is queued only while the
  terminal keeps up. When a frame has waited `MAX_FRAME_WAIT_SECONDS` behind the one being
  written, the frames not yet started are dropped, and so is every frame after them, until the
  terminal has taken all that was written; then the app draws the whole screen once (every cell),
  which supersedes what was dropped. The main thread never waits on the terminal for a frame.
- anything else (modes, cursor, bell, clipboard) is small and is never dropped.
- writes to a terminal that is gone (EIO) are discarded, so nothing can block on them.
- closing (quit, ctrl+z) drops the frames still waiting: the last picture is about to be
  replaced anyway, and the sequences that restore the terminal go out at once.
"""

from __future__ import annotations

import os
import select
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

from textual.drivers.linux_driver import LinuxDriver

MAX_FRAME_WAIT_SECONDS = 0.5
"""A frame that has waited this long behind the terminal means the terminal cannot keep up."""
MAX_WAITING_CHARS = 4 * 1024 * 1024
"""Frames waiting beyond this many characters are dropped whatever their age (a hard bound)."""
MAX_CONTROL_CHARS = 1024 * 1024
"""Non-frame output waiting beyond this blocks its writer (it is never dropped; it never gets
this large unless something writes far more than modes and cursor moves)."""
STOP_WAIT_SECONDS = 5.0
"""How long closing waits for the terminal to take the last sequences."""


class FrameWriter(threading.Thread):
    """Writes to the terminal in its own thread; frames that cannot be written in time are dropped.

    `on_caught_up` is called (from this thread) after frames were dropped, once everything queued
    has been written: the caller redraws the whole screen then.
    """

    def __init__(self, file: IO[str], on_caught_up: Callable[[], None]) -> None:
        super().__init__(daemon=True, name="console-output")
        self._file = file
        try:
            file.flush()  # what Python buffered for it goes first
            self._fd: int | None = file.fileno()
        except (AttributeError, OSError, ValueError):
            self._fd = None  # not a real file (tests): through its own write
        self._encoding = getattr(file, "encoding", None) or "utf-8"
        self._on_caught_up = on_caught_up
        self._cond = threading.Condition()
        self._units: deque[tuple[str, float | None]] = deque()  # (text, queued at) / None: control
        self._waiting_frame_chars = 0
        self._control_chars = 0
        self._stale = False  # frames were dropped: the terminal needs the whole screen again
        self._stopping = False
        self._dead = False  # the terminal is gone: everything is discarded
        self.frames_written = 0
        self.frames_dropped = 0

    # -- the app's side (main thread) ------------------------------------------------------------

    def write(self, text: str) -> None:
        """Queue output that is not a frame (never dropped)."""
        if not text:
            return
        with self._cond:
            while (self._control_chars > MAX_CONTROL_CHARS and not self._dead
                   and not self._stopping):
                self._cond.wait(0.1)
            if self._dead:
                return
            self._units.append((text, None))
            self._control_chars += len(text)
            self._cond.notify_all()

    def write_frame(self, text: str) -> None:
        """Queue one frame, or drop it when the terminal is behind."""
        if not text:
            return
        now = time.monotonic()
        with self._cond:
            if self._dead or self._stopping:
                return
            if self._stale:
                self.frames_dropped += 1  # a change to a picture the terminal was never sent
                return
            oldest = next((at for _, at in self._units if at is not None), None)
            if oldest is not None and (now - oldest > MAX_FRAME_WAIT_SECONDS
                                       or self._waiting_frame_chars + len(text) > MAX_WAITING_CHARS):
                self._drop_waiting_frames()
                self.frames_dropped += 1
                self._stale = True
                return
            self._units.append((text, now))
            self._waiting_frame_chars += len(text)
            self._cond.notify_all()

    def stop(self) -> None:
        """Write what is not a frame, drop the frames still waiting, and end the thread."""
        with self._cond:
            self._drop_waiting_frames()
            self._stale = False
            self._stopping = True
            self._cond.notify_all()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(STOP_WAIT_SECONDS)

    @property
    def backlog(self) -> int:
        """Characters queued and not yet handed to the terminal."""
        with self._cond:
            return self._waiting_frame_chars + self._control_chars

    def _drop_waiting_frames(self) -> None:
        kept = deque(unit for unit in self._units if unit[1] is None)
        self.frames_dropped += len(self._units) - len(kept)
        self._units = kept
        self._waiting_frame_chars = 0

    # -- the writer thread -----------------------------------------------------------------------

    def run(self) -> None:
        while True:
            caught_up = False
            with self._cond:
                while not self._units and not self._stopping:
                    if self._stale:  # all written: time for the whole screen
                        self._stale = False
                        caught_up = True
                        break
                    self._cond.wait()
                if not caught_up:
                    if not self._units:  # stopping, nothing left
                        return
                    text, queued_at = self._units.popleft()
                    if queued_at is None:
                        self._control_chars -= len(text)
                    else:
                        self._waiting_frame_chars -= len(text)
                    more = bool(self._units)
                    self._cond.notify_all()
            if caught_up:
                try:
                    self._on_caught_up()
                except Exception:  # the app is closing: nothing to redraw
                    pass
                continue
            self._put(text, flush=not more)
            if queued_at is not None:
                self.frames_written += 1

    def _put(self, text: str, flush: bool) -> None:
        """Write to the terminal's file descriptor itself: a write stuck on a terminal that takes
        nothing holds no lock of Python's (the process can still exit), and a partial write
        goes on where it stopped."""
        if self._dead:
            return
        try:
            if self._fd is None:
                self._file.write(text)
                if flush:
                    self._file.flush()
                return
            data = memoryview(text.encode(self._encoding, "replace"))
            while data:
                try:
                    data = data[os.write(self._fd, data):]
                except BlockingIOError:  # a terminal shared in non-blocking mode
                    select.select([], [self._fd], [], 1.0)
        except (OSError, ValueError):  # the terminal is gone (EIO) or its file closed
            with self._cond:
                self._dead = True
                self._units.clear()
                self._waiting_frame_chars = self._control_chars = 0
                self._cond.notify_all()


class ConsoleDriver(LinuxDriver):
    """Textual's Linux driver, writing through a `FrameWriter` (see the module's docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.frames: FrameWriter | None = None
        self._frame_parts: list[str] | None = None
        super().__init__(*args, **kwargs)

    def start_application_mode(self) -> None:
        import asyncio

        loop = asyncio.get_running_loop()
        app = self._app

        def redraw() -> None:
            loop.call_soon_threadsafe(_repaint, app)

        self.frames = FrameWriter(self._file, redraw)
        self.frames.start()
        super().start_application_mode()

    def write(self, data: str) -> None:
        if self._frame_parts is not None:
            self._frame_parts.append(data)
        elif self.frames is not None:
            self.frames.write(data)

    @contextmanager
    def frame(self) -> Iterator[None]:
        """Everything written inside is one frame (see `ConsoleApp._display`)."""
        if self._frame_parts is not None or self.frames is None:
            yield
            return
        self._frame_parts = []
        try:
            yield
        finally:
            parts, self._frame_parts = self._frame_parts, None
            if parts and self.frames is not None:
                self.frames.write_frame("".join(parts))

    def close(self) -> None:
        super().close()  # Textual's own writer thread (idle: nothing is written to it)
        if self.frames is not None:
            self.frames.stop()
            self.frames = None


def _repaint(app: Any) -> None:
    """Draw every cell of the screen again (after frames were dropped)."""
    if not app.is_running:
        return
    try:
        app.screen.refresh(repaint=True)
    except Exception:  # no screen (closing)
        pass
