"""A job's log: its output as one whole JSON event per line, exactly what the logs SSE stream sends.

`pump` copies a job's stdout and stderr (one pipe) into a `LogSink`: lines cut at 64 KiB, secret
values masked, at most `LOG_CAP_BYTES` kept (then one marker line), every write whole or not at
all, and a write that fails (a full disk) reported once so the runner can end the job.
`append_log` adds a line after the fact (a restart's "server stopped"), repairing a half-written
last event first.

Imports only the standard library, the server's paths and the wire's timestamp format.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from typing import IO

from console.server import paths
from console.server.jobs.wire import iso

LOG_CAP_BYTES = 512 * 1024 * 1024
"""A job's log keeps at most this much (then one marker line); the job itself runs on."""
_MAX_LINE_BYTES = 64 * 1024


def log_event(text: str, ts: float | None = None) -> str:
    """One stored log line: the JSON the SSE stream sends after `data: `."""
    return json.dumps({"data": text, "timestamp": iso(time.time() if ts is None else ts)},
                      ensure_ascii=False)


class LogSink:
    """Where a job's output goes: its log file, one whole JSON event per line, at most `cap` bytes.

    Past the cap one marker line says so and further output is read and dropped (the job is not
    slowed or stopped by its own verbosity). A write that fails (a full disk) calls `on_failure`
    once: the runner then ends the job ERROR "disk full" rather than let it run unlogged."""

    def __init__(self, fh: IO[bytes], redact: list[str], cap: int, on_failure: Callable[[OSError], None]) -> None:
        self.fh = fh
        self.redact = redact
        self.cap = cap
        self.on_failure = on_failure
        self.written = 0
        self.full = False
        self.failed = False

    def write(self, lines: list[bytes]) -> None:
        if self.full or self.failed or not lines:
            return
        text = _events(lines, self.redact)
        size = len(text.encode("utf-8"))
        if self.written + size > self.cap:
            cap = f"{self.cap / (1024 * 1024):g} MiB"
            text = log_event(f"===== log cut at {cap}: later output is not kept =====") + "\n"
            self.full = True
        try:
            write_whole(self.fh, text)
        except OSError as exc:
            self.failed = True
            self.on_failure(exc)
            return
        self.written += size


def write_whole(fh: IO[bytes], text: str) -> None:
    """Append whole events or nothing: a write cut short (a full disk) is taken back, so the log
    never ends in half a JSON line. `fh` is unbuffered, opened for appending."""
    data = text.encode("utf-8")
    fd = fh.fileno()
    start = os.lseek(fd, 0, os.SEEK_END)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        try:
            os.ftruncate(fd, start)
        except OSError:
            pass
        raise


def pump(popen: subprocess.Popen[bytes], sink: LogSink) -> None:
    """Copy a job's output to its log, one JSON event per line (see _LogSink)."""
    assert popen.stdout is not None
    stream = popen.stdout
    buf = b""
    try:
        while True:
            chunk = stream.read1(65536)  # type: ignore[attr-defined]
            if not chunk:
                break
            buf += chunk
            lines = buf.split(b"\n")
            buf = lines.pop()
            if any(len(line) > _MAX_LINE_BYTES for line in lines):
                lines = [piece for line in lines for piece in _pieces(line)]
            while len(buf) > _MAX_LINE_BYTES:
                lines.append(buf[:_MAX_LINE_BYTES])
                buf = buf[_MAX_LINE_BYTES:]
            sink.write(lines)
        sink.write([buf] if buf else [])
    except ValueError:
        pass
    finally:
        try:
            stream.close()
        except OSError:
            pass


def _pieces(line: bytes) -> list[bytes]:
    """A line cut into log events of at most _MAX_LINE_BYTES (a 10 MB line is 160 events)."""
    return [line[i : i + _MAX_LINE_BYTES] for i in range(0, len(line), _MAX_LINE_BYTES)] or [line]


def _events(lines: list[bytes], redact: list[str]) -> str:
    ts = iso(time.time())
    out = []
    for raw in lines:
        text = raw.decode("utf-8", "replace")
        if text.endswith("\r"):
            text = text[:-1]
        for secret in redact:
            if secret in text:
                text = text.replace(secret, "***")
        out.append(json.dumps({"data": text, "timestamp": ts}, ensure_ascii=False))
    return "\n".join(out) + "\n"


def append_log(job_id: str, text: str) -> None:
    """Add one event to a job's log after the fact, dropping a half-written last event first
    (what a crash or a full disk can leave), so every line of the log stays whole JSON."""
    try:
        with open(paths.log_path(job_id), "ab+", buffering=0) as fh:
            _drop_partial_event(fh)
            write_whole(fh, log_event(text) + "\n")
    except OSError:
        pass


def _drop_partial_event(fh: IO[bytes]) -> None:
    """Cut a log back to its last complete line (a no-op when it ends with a newline)."""
    end = fh.seek(0, os.SEEK_END)
    if end == 0:
        return
    pos = end
    while pos > 0:
        step = min(65536, pos)
        fh.seek(pos - step)
        chunk = fh.read(step)
        cut = chunk.rfind(b"\n")
        if cut == step - 1 and pos == end:
            return  # ends with a newline: whole
        if cut >= 0:
            fh.truncate(pos - step + cut + 1)
            return
        pos -= step
    fh.truncate(0)
