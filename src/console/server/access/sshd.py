"""`hf jobs ssh JOB`: an SSH server on loopback that opens a shell inside a running job.

A job started with ssh on (`hf jobs run --ssh`) reports ``status.sshUrl =
ssh://<job_id>@127.0.0.1:<port>``; `hf jobs ssh` runs the system `ssh` client on it, as it does for
``ssh.hf.jobs``. The server (asyncssh) listens on 127.0.0.1 only and lets a client in when:

- its public key is authorized: the key the server made for this machine's user
  (``<data>/server/ssh/client_key``, made once with its ``.pub``; the console's ``x`` logs in with
  it), a key in ``<data>/server/ssh/authorized_keys``, in
  ``~/.ssh/authorized_keys``, or one of the user's own ``~/.ssh/id_*.pub`` (locally, "registered
  on the Hub" means a key that can already log into this account);
- the user name is a job of this server that runs, with ssh on.

The shell (or the command) runs inside the job's sandbox: ``nsenter`` into the job's mount and PID
namespaces (and its user namespace when bubblewrap made one), in the job's working folder, with the
job's environment. Without a sandbox it runs as a plain process in the job's working folder with
the job's environment. Host key: ``<data>/server/ssh/host_key`` (ed25519, made once).
"""

from __future__ import annotations

import asyncio
import logging
import os
import pty
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from console import paths as client_paths
from console.server import paths
from console.server.host import sandbox

log = logging.getLogger("console.server.access.sshd")

JobLookup = Callable[[str], "tuple[int, Path] | str"]
"""job id -> (pid of the job's process group leader, working folder), or why there is no shell."""


def ssh_dir() -> Path:
    folder = paths.server_dir() / "ssh"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def host_key_path() -> Path:
    return ssh_dir() / "host_key"


def _load_key(path: Path, *, public: bool = False) -> Any:
    """The ed25519 private key at `path`, made once (mode 0600; with its ``.pub`` when `public`)."""
    import asyncssh

    ssh_dir()
    if not path.exists():
        key = asyncssh.generate_private_key("ssh-ed25519", comment="console local Jobs server")
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(key.export_private_key())
        if public:
            path.with_name(path.name + ".pub").write_bytes(key.export_public_key())
        os.replace(tmp, path)
    return asyncssh.read_private_key(str(path))


def _load_host_key() -> Any:
    return _load_key(host_key_path())


def _public(key: Any) -> list[str]:
    """A public key as (type, base64): what two keys are compared by."""
    return key.export_public_key("openssh").decode("ascii", "replace").split()[:2]


def authorized_key_files() -> list[Path]:
    home = Path(os.path.expanduser("~")) / ".ssh"
    found = [ssh_dir() / "authorized_keys", home / "authorized_keys", *sorted(home.glob("id_*.pub"))]
    return [p for p in found if p.is_file()]


def _authorized(key: Any) -> bool:
    import asyncssh

    wanted = _public(key)
    for path in authorized_key_files():
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                other = asyncssh.import_public_key(line if not line.split()[0].startswith(("no-", "command=", "from="))
                                                   else line.split(None, 1)[1])
            except (asyncssh.KeyImportError, IndexError, ValueError):
                continue
            if _public(other) == wanted:
                return True
    return False


def _inside(pid: int) -> psutil.Process | None:
    """The job's own process inside bubblewrap (else the leader itself)."""
    try:
        leader = psutil.Process(pid)
        if leader.name() != "bwrap":
            return leader
        inner = [p for p in leader.children(recursive=True) if p.name() != "bwrap"]
        return inner[0] if inner else None
    except psutil.Error:
        return None


def shell_argv(pid: int, workdir: Path, command: str | None, tty: bool) -> tuple[list[str], dict[str, str], str | None]:
    """(argv, environment, cwd) of a shell in the job whose process group leader is `pid`."""
    target = _inside(pid)
    env: dict[str, str] = {}
    if target is not None:
        try:
            env = target.environ()
        except psutil.Error:
            env = {}
    env = env or {"PATH": os.environ.get("PATH", os.defpath), "JOB_ID": workdir.name}
    shell = "/bin/bash" if Path("/bin/bash").exists() else "/bin/sh"
    tail = [shell, "-c", command] if command else [shell] + (["-i"] if tty else [])
    nsenter = shutil.which("nsenter")
    if target is None or target.pid == pid or nsenter is None:
        return tail, env, str(workdir)  # no sandbox: a plain process in the job's folder
    argv = [nsenter, "-t", str(target.pid), "-m", "-p", "--wd"]
    try:
        if os.readlink(f"/proc/{target.pid}/ns/user") != os.readlink("/proc/self/ns/user"):
            argv += ["-U", "--preserve-credentials"]
    except OSError:
        pass
    return argv + ["--", *sandbox.drop_privileges(sandbox.detect()), *tail], env, None


class SshService:
    """The asyncssh server, run on the gateway's event loop."""

    def __init__(self, lookup: JobLookup) -> None:
        self.lookup = lookup
        self.port: int | None = None
        self._acceptor: Any = None
        self._own_key: list[str] = []
        """The public half of the client key as the server made or found it at start."""

    async def start(self) -> None:
        import asyncssh

        service = self
        self._own_key = _public(_load_key(client_paths.server_ssh_key_path(), public=True))

        class _Server(asyncssh.SSHServer):
            def begin_auth(self, username: str) -> bool:
                return True

            def password_auth_supported(self) -> bool:
                return False

            def public_key_auth_supported(self) -> bool:
                return True

            def validate_public_key(self, username: str, key: Any) -> bool:
                return _public(key) == service._own_key or _authorized(key)

        self._acceptor = await asyncssh.create_server(
            _Server, "127.0.0.1", 0, server_host_keys=[_load_host_key()],
            process_factory=self._session, encoding=None, allow_scp=False,
        )
        self.port = self._acceptor.sockets[0].getsockname()[1]
        log.debug("ssh on 127.0.0.1:%s (service %r)", self.port, service)

    async def stop(self) -> None:
        if self._acceptor is not None:
            self._acceptor.close()
            await self._acceptor.wait_closed()

    async def _session(self, process: Any) -> None:
        job_id = process.get_extra_info("username") or ""
        found = self.lookup(job_id)
        if isinstance(found, str):
            process.stderr.write(f"{found}\r\n".encode())
            await _end(process, 1)
            return
        pid, workdir = found
        tty = process.term_type is not None
        argv, env, cwd = shell_argv(pid, workdir, process.command, tty)
        if tty:
            env["TERM"] = process.term_type or "xterm"
            master, slave = pty.openpty()
            cols, rows = process.term_size[:2] if process.term_size else (80, 24)
            _set_size(slave, rows, cols)
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, start_new_session=True,
                preexec_fn=_take_tty,
            )
            os.close(slave)
            # One file object per direction: asyncssh closes each side's file when it is done.
            to_shell = os.fdopen(os.dup(master), "wb", buffering=0)
            from_shell = os.fdopen(master, "rb", buffering=0)
            await process.redirect(stdin=to_shell, stdout=from_shell)
            code = await proc.wait()
            await process.stdout.drain()
        else:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=env, cwd=cwd, start_new_session=True,
            )
            await process.redirect(stdin=proc.stdin, stdout=proc.stdout, stderr=proc.stderr)
            code = await proc.wait()
            await process.stdout.drain()
        await _end(process, code if code >= 0 else 255)


async def _end(process: Any, code: int) -> None:
    """Exit the session with `code` and wait until it is closed: asyncssh's clean-up of the
    redirected streams (a join of each stream's queue) runs only in `wait_closed`, and left
    un-awaited it is a `coroutine 'Queue.join' was never awaited` warning in server.log."""
    process.exit(code)
    try:
        await asyncio.wait_for(process.wait_closed(), timeout=10)
    except (TimeoutError, OSError):  # a client gone mid-close: nothing left to clean up for it
        pass


def _set_size(fd: int, rows: int, cols: int) -> None:
    import fcntl
    import struct
    import termios

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows or 24, cols or 80, 0, 0))


def _take_tty() -> None:
    import fcntl
    import termios

    try:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    except OSError:
        pass
