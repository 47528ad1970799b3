"""What a running job offers beyond its logs: exposed ports and an SSH shell, on loopback only.

One background thread runs an asyncio loop for both:

- **expose** (`hf jobs run --expose PORT`, `--expose-public`, `hf jobs expose JOB PORT`): for each
  exposed port of a running job, a listener on ``127.0.0.1:<its own port>`` forwards connections
  to the job's ``127.0.0.1:PORT``; the job's ``status.exposeUrls`` name those listeners
  (``http://127.0.0.1:<port>``), as HF names ``https://<job_id>--PORT.hf.jobs``. They open when the
  job starts (or when `expose` is called on a running job) and close when it ends. Locally the
  token check HF does for non-public ports is not done: only this machine can connect, and jobs
  share its network anyway.
- **ssh** (:mod:`console.server.access.sshd`): ``status.sshUrl`` of a running ssh job.

asyncssh missing (it is a dependency, but an old environment may lack it): ssh jobs report no
sshUrl and the server log says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from console.server.access.sshd import SshService

log = logging.getLogger("console.server.access.gateway")
HOST = "127.0.0.1"


class Gateway:
    """Exposed-port forwarders and the SSH server, on their own event loop thread."""

    def __init__(self, ssh_lookup: Callable[[str], tuple[int, Path] | str]) -> None:
        self._ssh_lookup = ssh_lookup
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._forwarders: dict[str, dict[int, asyncio.base_events.Server]] = {}
        self._urls: dict[str, list[str]] = {}
        """job id -> its listeners' URLs, written when they open (a reader never asks a socket
        that a cancel may be closing at that moment)."""
        self._lock = threading.Lock()
        self.ssh: SshService | None = None
        self.ssh_problem: str | None = None

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            ready.set()
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=run, name="console-jobs-gateway", daemon=True)
        self._thread.start()
        ready.wait()
        try:
            import asyncssh  # noqa: F401
        except ImportError:
            self.ssh_problem = "ssh needs asyncssh (pip install asyncssh)"
            log.warning("no ssh into jobs: %s", self.ssh_problem)
            return
        service = SshService(self._ssh_lookup)
        try:
            self._call(service.start()).result(timeout=30)
            self.ssh = service
        except Exception as exc:  # noqa: BLE001 - the server still serves jobs without ssh
            self.ssh_problem = f"the ssh server could not start: {exc}"
            log.warning("no ssh into jobs: %s", self.ssh_problem)

    def stop(self) -> None:
        if self._loop is None:
            return

        async def shutdown() -> None:
            for job_id in list(self._forwarders):
                await self._close(job_id)
            if self.ssh is not None:
                await self.ssh.stop()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:  # open forwarded connections and ssh sessions
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(Exception):
            self._call(shutdown()).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._thread = None
        self._loop = None

    def _call(self, coro: Any) -> Future[Any]:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    # -- ssh -----------------------------------------------------------------------------

    def ssh_url(self, job_id: str) -> str | None:
        if self.ssh is None or self.ssh.port is None:
            return None
        return f"ssh://{job_id}@{HOST}:{self.ssh.port}"

    # -- expose --------------------------------------------------------------------------

    def expose(self, job_id: str, ports: list[int]) -> None:
        """Forward exactly `ports` of a running job (closing the others)."""
        if self._loop is None:
            return
        self._call(self._expose(job_id, ports)).result(timeout=10)

    def close(self, job_id: str) -> None:
        if self._loop is None:
            return
        with contextlib.suppress(Exception):
            self._call(self._close(job_id)).result(timeout=10)

    def urls(self, job_id: str) -> list[str]:
        with self._lock:
            return list(self._urls.get(job_id, ()))

    async def _expose(self, job_id: str, ports: list[int]) -> None:
        with self._lock:
            current = dict(self._forwarders.get(job_id, {}))
        closing = [port for port in current if port not in ports]
        if closing:
            with self._lock:  # no longer named while they close
                self._urls.pop(job_id, None)
        for port, srv in list(current.items()):
            if port not in ports:
                srv.close()
                await srv.wait_closed()
                current.pop(port)
        for port in ports:
            if port not in current:
                current[port] = await asyncio.start_server(
                    lambda r, w, p=port: _forward(r, w, p), HOST, 0
                )
        urls = [f"http://{HOST}:{srv.sockets[0].getsockname()[1]}" for _, srv in sorted(current.items())]
        with self._lock:
            self._forwarders[job_id] = current
            self._urls[job_id] = urls

    async def _close(self, job_id: str) -> None:
        with self._lock:
            servers = self._forwarders.pop(job_id, {})
            self._urls.pop(job_id, None)
        for srv in servers.values():
            srv.close()
            await srv.wait_closed()


async def _forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int) -> None:
    try:
        up_reader, up_writer = await asyncio.open_connection(HOST, port)
    except OSError:
        writer.close()
        return

    async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            with contextlib.suppress(OSError):
                if dst.can_write_eof():
                    dst.write_eof()

    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
    for w in (writer, up_writer):
        w.close()
