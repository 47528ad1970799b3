"""The last screen on the terminal before anything else loads.

When the console quits, the TUI keeps what its jobs tab showed: the screen as the terminal drew it
(styled lines, at the terminal's size), with the time and what started it (`save`). The next
`console` with the same config paints that picture at once (`paint`): the alternate screen, the
kept lines, and the age of the picture in the top-right corner, before Textual, huggingface_hub
or any of the console's UI modules are imported. Textual then takes over the same alternate
screen and draws its own first frame (the same rows, from the local cache) over it: no blank
screen in between.

Until Textual has the terminal, keys typed are kept, not echoed: the terminal is switched to
non-canonical mode without echo, and given back as it was the moment Textual's driver starts
(`release`), before Textual reads the terminal's settings; keys typed in between wait in the
terminal's input queue for Textual to read. A start that ends before the TUI runs (a bad config,
no server in read-only) leaves the alternate screen and restores the terminal (`abandon`).

No picture is painted when there is none, when the terminal's size changed since it was kept,
when the config file or the command line differ, or when either end is not a terminal: Textual
paints the cached rows itself, as before.

Imports only the standard library and `console.paths`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from console.inputs import format_coarse

FILE_NAME = "last-frame"
MAX_BYTES = 4 * 1024 * 1024
"""A kept picture larger than this is not read (a 400x120 screen in truecolor is about 1 MB)."""
_state: dict[str, Any] = {"key": None, "attrs": None, "painted": False}


def frame_path(create: bool = False) -> Path:
    from console import paths

    return paths.data_dir(create=create) / FILE_NAME


def start_key(argv: Sequence[str]) -> str:
    """What a start's picture belongs to: the command line, the config file (its path, size and
    modification time) and the data folder. A picture kept under another key is not painted."""
    from console import paths

    config = paths.default_config_path()
    for i, arg in enumerate(argv):  # the global --config flag, in either form
        if arg == "--config" and i + 1 < len(argv):
            config = Path(argv[i + 1]).expanduser()
        elif arg.startswith("--config="):
            config = Path(arg.split("=", 1)[1]).expanduser()
    try:
        st = config.stat()
        stamp = [st.st_size, st.st_mtime_ns]
    except OSError:
        stamp = None
    return json.dumps([list(argv), str(config), stamp, os.environ.get("CONSOLE_DATA_DIR")])


def current_key() -> str | None:
    """The key of this process's start (None: the TUI was not started by `console`)."""
    return _state["key"]


def save(lines: Sequence[str], width: int, height: int, *, key: str | None = None,
         at: float | None = None) -> bool:
    """Keep `lines` (the screen, one styled line per row) as the next start's first picture."""
    key = key if key is not None else current_key()
    if key is None or len(lines) != height:
        return False
    header = {"key": key, "width": width, "height": height, "at": time.time() if at is None else at}
    body = json.dumps(header) + "\n" + "\n".join(_clean(line) for line in lines)
    path = frame_path(create=True)
    tmp = path.with_name(f".{FILE_NAME}.{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(body)
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
        return False
    return True


def _clean(line: str) -> str:
    """A kept line holds text and SGR styles only (`ESC [ ... m`): any other control character is
    dropped, so a picture can never move the cursor, change a mode or retitle the terminal."""
    out = []
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch == "\x1b" and i + 1 < n and line[i + 1] == "[":
            j = i + 2
            while j < n and (line[j].isdigit() or line[j] == ";"):
                j += 1
            if j < n and line[j] == "m":
                out.append(line[i:j + 1])
            i = j + 1
            continue
        if ch < " " or "\x7f" <= ch <= "\x9f":
            i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def load(key: str, width: int, height: int) -> tuple[list[str], float] | None:
    """The kept picture for this start and terminal size, with when it was kept, else None."""
    path = frame_path()
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    head, _, body = text.partition("\n")
    try:
        header = json.loads(head)
        if header["key"] != key or header["width"] != width or header["height"] != height:
            return None
        at = float(header["at"])
    except (ValueError, KeyError, TypeError):
        return None
    lines = body.split("\n")
    if len(lines) != height:
        return None
    return lines, at


def render(lines: Sequence[str], width: int, at: float, now: float) -> str:
    """What `paint` writes: the alternate screen, each kept line at its row, the age mark."""
    mark = f" kept {format_coarse(now - at)} ago, loading "
    out = ["\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J"]
    for row, line in enumerate(lines, start=1):
        out.append(f"\x1b[{row};1H\x1b[0m{line}\x1b[0m")
    if len(mark) < width:
        out.append(f"\x1b[1;{width - len(mark) + 1}H\x1b[0;7m{mark}\x1b[0m")
    return "".join(out)


def paint(argv: Sequence[str]) -> bool:
    """Paint the kept picture for a TUI start with `argv` (the global flags alone); True if painted.

    Does nothing (False) unless standard input and standard error are terminals."""
    _state["key"] = start_key(argv)
    try:
        if not (sys.stdin.isatty() and sys.stderr.isatty()) or os.environ.get("TERM", "dumb") == "dumb":
            return False
        size = os.get_terminal_size(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    kept = load(_state["key"], size.columns, size.lines)
    if kept is None:
        return False
    lines, at = kept
    _hold_keys()
    try:
        sys.stderr.write(render(lines, size.columns, at, time.time()))
        sys.stderr.flush()
    except (OSError, ValueError):
        release()
        return False
    _state["painted"] = True
    return True


def _hold_keys() -> None:
    """Keys typed before Textual runs are kept for it, not echoed over the picture."""
    try:
        import termios

        fd = sys.stdin.fileno()
        attrs = termios.tcgetattr(fd)
        quiet = termios.tcgetattr(fd)
        quiet[3] &= ~(termios.ECHO | termios.ICANON)
        quiet[6][termios.VMIN] = 1
        quiet[6][termios.VTIME] = 0
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
        _state["attrs"] = attrs
    except (ImportError, OSError, ValueError, AttributeError):
        _state["attrs"] = None
    except Exception:  # termios.error is not an OSError
        _state["attrs"] = None


def release() -> None:
    """Give the terminal back as it was before `paint` (Textual's driver is about to read it)."""
    attrs, _state["attrs"] = _state["attrs"], None
    if attrs is None:
        return
    try:
        import termios

        termios.tcsetattr(sys.stdin.fileno(), termios.TCSANOW, attrs)
    except Exception:  # a terminal that is gone: nothing to restore
        pass


def abandon() -> None:
    """The TUI did not start after a picture was painted: leave the alternate screen, restore."""
    release()
    if _state["painted"]:
        _state["painted"] = False
        try:
            sys.stderr.write("\x1b[?25h\x1b[?1049l")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass


def took_over() -> None:
    """Textual has the terminal: the picture is its to replace (nothing to leave on a failure)."""
    release()
    _state["painted"] = False
