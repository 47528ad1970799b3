"""Script downloads for `uv run http(s)://...` jobs, away from the runner thread, with a deadline.

The runner starts, times out and cancels every job from one thread: a download there would stall
all of them for as long as a slow server dribbles its body. A :class:`Fetcher` downloads each script
in a thread of its own, under a total deadline and a size cap; the runner asks :meth:`Fetcher.state`
on each tick and starts the job once its script is there, or ends it ERROR with the reason.
"""

from __future__ import annotations

import http.client
import shutil
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DEADLINE_SECONDS = 60.0
"""The longest a script download may take, from the first byte asked to the last received."""
MAX_SCRIPT_BYTES = 16 * 1024 * 1024


@dataclass
class Download:
    url: str
    dest: Path
    started: float
    deadline: float
    done: bool = False
    error: str | None = None
    abandoned: bool = False

    def outcome(self) -> str | None:
        """None while it may still succeed; "" when the script is there; else why it failed."""
        if self.done:
            return self.error or ""
        if time.monotonic() - self.started > self.deadline:
            return f"could not download the script {self.url}: no complete answer within {self.deadline:g}s"
        return None


class Fetcher:
    """Downloads for queued jobs, one thread each; results are kept until :meth:`forget`."""

    def __init__(self, folder: Callable[[str], Path], on_done: Callable[[], None],
                 deadline: float = DEADLINE_SECONDS) -> None:
        self._folder = folder
        self._on_done = on_done
        self.deadline = deadline
        self._lock = threading.Lock()
        self._items: dict[str, Download] = {}

    def state(self, job_id: str, url: str, name: str) -> Download:
        """The download of `url` for a job (started now if it was not yet)."""
        with self._lock:
            item = self._items.get(job_id)
            if item is not None:
                return item
            dest = self._folder(job_id) / name
            item = Download(url=url, dest=dest, started=time.monotonic(), deadline=self.deadline)
            self._items[job_id] = item
        thread = threading.Thread(target=self._run, args=(item, self.deadline), name=f"console-fetch-{job_id}",
                                  daemon=True)
        thread.start()
        return item

    def pending(self, job_id: str) -> Download | None:
        with self._lock:
            item = self._items.get(job_id)
        return item if item is not None and not item.done else None

    def forget(self, job_id: str) -> None:
        """Drop a job's download (its file too) once the job no longer needs it."""
        with self._lock:
            item = self._items.pop(job_id, None)
            if item is not None and not item.done:
                item.abandoned = True  # its thread cleans up when it ends
                return
        if item is not None:
            shutil.rmtree(item.dest.parent, ignore_errors=True)

    def finished(self) -> list[str]:
        """Jobs whose download has ended (their threads are gone: safe to forget)."""
        with self._lock:
            return [job_id for job_id, item in self._items.items() if item.done]

    def _run(self, item: Download, deadline: float) -> None:
        try:
            item.dest.parent.mkdir(parents=True, exist_ok=True)
            download(item.url, item.dest, time.monotonic() + deadline)
        except Exception as exc:  # noqa: BLE001 - every failure ends the job with its reason
            item.error = f"could not download the script {item.url}: {describe(exc, deadline)}"
        finally:
            with self._lock:
                item.done = True
                abandoned = item.abandoned
            if abandoned:
                shutil.rmtree(item.dest.parent, ignore_errors=True)
            self._on_done()


def download(url: str, dest: Path, deadline: float) -> None:
    """Fetch `url` into `dest` by `deadline` (time.monotonic()), all of it or an exception."""
    if not url.startswith(("https://", "http://")):
        raise ValueError("only http(s) URLs are fetched")
    remaining = deadline - time.monotonic()
    # Each socket wait is bounded by the whole deadline, so this thread ends soon after it; the
    # runner does not wait for that (see Fetcher.outcome).
    with urllib.request.urlopen(url, timeout=max(0.1, remaining)) as resp:  # noqa: S310 (http(s) only)
        declared = resp.headers.get("Content-Length")
        if declared and declared.isdigit() and int(declared) > MAX_SCRIPT_BYTES:
            raise ValueError(f"the script is over {MAX_SCRIPT_BYTES // (1024 * 1024)} MiB")
        chunks, size = [], 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("deadline")
            chunk = resp.read1(64 * 1024)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_SCRIPT_BYTES:
                raise ValueError(f"the script is over {MAX_SCRIPT_BYTES // (1024 * 1024)} MiB")
            chunks.append(chunk)
        if declared and declared.isdigit() and size < int(declared):
            raise http.client.IncompleteRead(b"".join(chunks), int(declared) - size)
    tmp = dest.with_name(dest.name + ".part")
    tmp.write_bytes(b"".join(chunks))
    tmp.replace(dest)


def describe(exc: BaseException, deadline: float) -> str:
    if isinstance(exc, (TimeoutError, http.client.socket.timeout)):  # type: ignore[attr-defined]
        return f"no complete answer within {deadline:g}s"
    if isinstance(exc, http.client.IncompleteRead):
        return f"the server sent {len(exc.partial)} bytes and closed the connection ({exc.expected} more expected)"
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return str(exc) or type(exc).__name__
