"""A real pseudo-terminal for end-to-end tests: a command runs on it as on a person's terminal, and
what it draws is kept as the screen a person would see (rows of text, colours dropped).

The screen understands what a Textual app writes (cursor moves, text, clearing, the alternate
screen) and ignores the rest (colours, modes, queries: nothing answers them, as on a plain
terminal). Every wait is on a condition with a deadline; `close` kills whatever is left.
"""

from __future__ import annotations

import codecs
import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import termios
import time
import unicodedata
from collections.abc import Callable, Sequence

_TOKEN = re.compile(
    r"\x1b\[([0-9;?<>=$ ]*)([@-~])"  # CSI: parameters, final byte
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC ... BEL / ST
    r"|\x1b[^\[\]]"  # a two-byte escape
    r"|[^\x1b]+"  # text
)


class Screen:
    """What a `cols` x `rows` terminal shows after the bytes fed to it."""

    def __init__(self, cols: int, rows: int) -> None:
        self.cols, self.rows = cols, rows
        self.x = self.y = 0
        self._pending = ""
        self.clear()

    def clear(self) -> None:
        self.cells = [[" "] * self.cols for _ in range(self.rows)]

    def feed(self, text: str) -> None:
        self._pending += text
        pos = 0
        while pos < len(self._pending):
            m = _TOKEN.match(self._pending, pos)
            if m is None:  # an escape sequence cut at the end of a read: wait for the rest
                if len(self._pending) - pos > 256:
                    pos += 1  # not a sequence after all
                    continue
                break
            pos = m.end()
            token = m.group(0)
            if m.group(2) is not None:
                self._csi(m.group(1), m.group(2))
            elif not token.startswith("\x1b"):
                self._text(token)
        self._pending = self._pending[pos:]

    def _csi(self, params: str, final: str) -> None:
        if final == "H":
            parts = [int(p) if p.isdigit() else 1 for p in (params.split(";") + ["1", "1"])[:2]]
            self.y = min(max(parts[0], 1), self.rows) - 1
            self.x = min(max(parts[1], 1), self.cols) - 1
        elif final == "J" and params in ("2", "3"):
            self.clear()
        elif final == "K":
            row = self.cells[self.y]
            start = self.x if params in ("", "0") else 0
            end = self.x + 1 if params == "1" else self.cols
            row[start:end] = [" "] * (end - start)
        elif final in "hl" and params == "?1049":  # alternate screen in or out: a fresh page
            self.clear()
            self.x = self.y = 0

    def _text(self, text: str) -> None:
        for ch in text:
            if ch == "\r":
                self.x = 0
            elif ch == "\n":
                if self.y == self.rows - 1:
                    self.cells = self.cells[1:] + [[" "] * self.cols]
                else:
                    self.y += 1
            elif ch == "\b":
                self.x = max(0, self.x - 1)
            elif ch < " " or unicodedata.combining(ch):
                continue
            else:
                width = 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
                if self.x + width <= self.cols:  # no autowrap: Textual turns it off
                    self.cells[self.y][self.x] = ch
                    if width == 2:
                        self.cells[self.y][self.x + 1] = ""
                self.x = min(self.x + width, self.cols)

    def lines(self) -> list[str]:
        return ["".join(row).rstrip() for row in self.cells]

    def text(self) -> str:
        return "\n".join(self.lines())


def set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class Terminal:
    """`argv` running on a new pseudo-terminal of `cols` x `rows`, as its controlling terminal."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str],
        cwd: str | os.PathLike[str] | None = None,
        cols: int = 80,
        rows: int = 24,
    ) -> None:
        self.screen = Screen(cols, rows)
        self.raw = bytearray()
        self._decode = codecs.getincrementaldecoder("utf-8")(errors="replace").decode
        self.fd, child = os.openpty()
        set_size(child, cols, rows)
        env = dict(env, TERM="xterm-256color", COLUMNS=str(cols), LINES=str(rows))

        def controlling_terminal() -> None:
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        try:
            self.process = subprocess.Popen(
                list(argv), stdin=child, stdout=child, stderr=child, env=env, cwd=cwd,
                start_new_session=True, preexec_fn=controlling_terminal, close_fds=True,
            )
        except BaseException:
            os.close(self.fd)
            raise
        finally:
            os.close(child)
        self._eof = False

    def read(self, timeout: float = 0.05) -> None:
        """Take what the program wrote within `timeout` seconds onto the screen."""
        if self._eof:
            if timeout:
                time.sleep(timeout)
            return
        ready, _, _ = select.select([self.fd], [], [], timeout)
        while ready:
            try:
                data = os.read(self.fd, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                data = b""
            if not data:
                self._eof = True
                return
            self.raw += data
            self.screen.feed(self._decode(data))
            ready, _, _ = select.select([self.fd], [], [], 0)

    def wait_for(self, condition: Callable[[str], bool], timeout: float, what: str) -> str:
        """The screen's text once `condition(text)` holds; fails with the screen after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            self.read()
            text = self.screen.text()
            if condition(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; the screen:\n{text}")
            if self.process.poll() is not None and self._eof:
                raise AssertionError(
                    f"the program exited ({self.process.returncode}) before {what}; the screen:\n{text}"
                )

    def press(self, *keys: str) -> None:
        """Type keys as a terminal sends them (`escape` alone is sent by itself)."""
        for key in keys:
            os.write(self.fd, {"escape": "\x1b", "enter": "\r", "tab": "\t"}.get(key, key).encode())
            self.read(0.02)

    def wait_exit(self, timeout: float) -> int:
        """The exit status once the program has ended (its terminal read meanwhile)."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"still running {timeout:.0f} s later; the screen:\n{self.screen.text()}")
            self.read()
        self.read(0)
        return self.process.returncode

    def close(self) -> None:
        """Kill the program's whole session if it still runs, and close the terminal."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=10)
        os.close(self.fd)
