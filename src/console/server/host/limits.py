"""What one job may use of this machine, by its flavor: memory, processes, open files and the size
of its working folder.

A job on HF Jobs is a container with its flavor's RAM and disk; here jobs share one machine, so
each gets its flavor's figures, capped by what the machine has (and by the server's own caps,
`$CONSOLE_JOB_MEMORY_MB` / `$CONSOLE_JOB_DISK_MB`, :meth:`Caps.from_env`):

* the kernel holds each of the job's processes to them (`prlimit`, run inside the sandbox before
  the job's command, so `/proc/self/limits` of a job shows them): `Max resident set` is the
  memory limit, `Max data size` half as much again (a hard stop for one allocation too big and too
  fast for the runner to see), `Max processes` and `Max open files` the process and file limits,
  `Max file size` the work folder's size;
* the runner watches the job as a whole (:class:`Watch`, a few times a second): the anonymous
  memory of all its processes (the kernel does not enforce `Max resident set`), the number of its
  processes and threads, and the size of its working folder. A job over one is killed at once and
  ends ERROR with a message naming the limit, its figure and the flavor; the server runs on.

The flavors' RAM is what HF lists for them (`list_jobs_hardware`'s `ram`, as in
tests/contract/hf_shapes.py, and huggingface.co/pricing); a flavor whose RAM is not known here gets
the machine's. Imports only the standard library and psutil.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from console.prices import FLAVOR_SPECS

GB = 1000**3
FLAVOR_RAM_GB: dict[str, int] = {name: spec.ram_gb for name, spec in FLAVOR_SPECS.items()}
"""RAM of each flavor, in GB, as HF lists it (`console.prices.FLAVOR_SPECS`, the one table)."""
FLAVOR_DISK_GB: dict[str, int] = {name: spec.storage_gb for name, spec in FLAVOR_SPECS.items()}
"""Ephemeral storage of each flavor, in GB, as HF lists it (the same table)."""
DEFAULT_DISK_BYTES = 50 * GB
"""The working folder's limit for a flavor whose storage is not known here."""
PROCESS_LIMIT = 1024
"""Processes and threads one job may have (`Max processes`)."""
OPEN_FILES_LIMIT = 8192
"""Files one process of a job may hold open (`Max open files`)."""
DATA_HEADROOM = 1.5
"""`Max data size` is the memory limit times this: the kernel's hard stop above the runner's."""
MEMORY_EVERY_S = 0.25
DISK_EVERY_S = 2.0


def _size(n: float) -> str:
    for unit, scale in (("GB", GB), ("MB", 1000**2), ("KB", 1000)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} bytes"


@dataclass(frozen=True)
class JobLimits:
    flavor: str
    memory_bytes: int
    processes: int
    open_files: int
    disk_bytes: int
    memory_source: str
    """Where the memory figure comes from, in words ("the flavor's 16 GB", "this machine's 8 GB")."""

    def prlimit_argv(self) -> list[str]:
        """The command prefix that sets these limits on the job's processes (empty without prlimit)."""
        prlimit = shutil.which("prlimit", path="/usr/bin:/bin:/usr/sbin:/sbin")
        if prlimit is None:
            return []
        data = int(self.memory_bytes * DATA_HEADROOM)
        return [prlimit, f"--rss={self.memory_bytes}", f"--data={data}", f"--nproc={self.processes}",
                f"--nofile={self.open_files}", f"--fsize={self.disk_bytes}", "--"]


@dataclass
class Caps:
    """The server's caps on every job's limits (None: the machine's RAM, no disk cap but the flavor's)."""

    memory_bytes: int | None = None
    disk_bytes: int | None = None

    @classmethod
    def from_env(cls) -> Caps:
        """Caps from `$CONSOLE_JOB_MEMORY_MB` and `$CONSOLE_JOB_DISK_MB` (whole MiB; unset or
        not a positive number: none)."""
        def mib(name: str) -> int | None:
            text = os.environ.get(name, "").strip()
            return int(text) * 2**20 if text.isdigit() and int(text) > 0 else None

        return cls(mib("CONSOLE_JOB_MEMORY_MB"), mib("CONSOLE_JOB_DISK_MB"))

    def for_flavor(self, flavor: str | None) -> JobLimits:
        name = flavor or "cpu-basic"
        machine = psutil.virtual_memory().total
        cap = min(machine, self.memory_bytes) if self.memory_bytes else machine
        ram = FLAVOR_RAM_GB.get(name, 0) * GB
        if ram and ram <= cap:
            memory, source = ram, f"the {_size(ram)} of {name}"
        elif ram:
            memory, source = cap, f"the {_size(ram)} of {name}, capped at this server's {_size(cap)}"
        else:
            memory, source = cap, f"this server's {_size(cap)} ({name}'s RAM is not known here)"
        disk = FLAVOR_DISK_GB.get(name, 0) * GB or DEFAULT_DISK_BYTES
        if self.disk_bytes:
            disk = min(disk, self.disk_bytes)
        return JobLimits(name, memory, PROCESS_LIMIT, OPEN_FILES_LIMIT, disk, source)


def _folder_bytes(folder: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                continue
    return total


class Watch:
    """One running job's use, measured against its limits (the runner asks :meth:`over` each tick)."""

    def __init__(self, pid: int, workdir: Path, limits: JobLimits) -> None:
        self.pid = pid
        self.workdir = workdir
        self.limits = limits
        self._next_memory = 0.0
        self._next_disk = time.monotonic() + DISK_EVERY_S

    def over(self) -> str | None:
        """Why the job must be killed now (the limit it is over, in words), or None."""
        now = time.monotonic()
        lim = self.limits
        if now >= self._next_memory:
            self._next_memory = now + MEMORY_EVERY_S
            memory, tasks = self._tree()
            if memory > lim.memory_bytes:
                return (f"Job killed: over its memory limit: its processes used {_size(memory)}, "
                        f"above {_size(lim.memory_bytes)} ({lim.memory_source})")
            if tasks >= lim.processes * 0.9:
                return (f"Job killed: over its process limit: {tasks} processes and threads, the limit is "
                        f"{lim.processes} ({lim.flavor})")
        if now >= self._next_disk:
            self._next_disk = now + DISK_EVERY_S
            used = _folder_bytes(self.workdir)
            if used > lim.disk_bytes:
                return (f"Job killed: over its disk limit: its working folder holds {_size(used)}, "
                        f"above {_size(lim.disk_bytes)} ({lim.flavor})")
        return None

    def _tree(self) -> tuple[int, int]:
        """(anonymous memory, processes and threads) of the job's processes, the sandbox's own
        bubblewrap left out. Read from /proc for the job's processes only (a walk of every
        process on the machine, as psutil's `children` does, costs tens of milliseconds)."""
        memory = tasks = 0
        for pid in _descendants(self.pid):
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == "bwrap":
                    continue
                _size_pages, resident, shared = (int(x) for x in Path(f"/proc/{pid}/statm").read_text().split()[:3])
                memory += max(0, resident - shared) * PAGE
                tasks += len(os.listdir(f"/proc/{pid}/task"))
            except (OSError, ValueError):
                continue
        return memory, tasks


PAGE = os.sysconf("SC_PAGE_SIZE")


def _descendants(pid: int) -> list[int]:
    """`pid` and every process below it, from each thread's `children` file (psutil's scan of
    every process where the kernel has none)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            tids = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                todo += [int(c) for c in Path(f"/proc/{current}/task/{tid}/children").read_text().split()]
            except FileNotFoundError:
                return _descendants_psutil(pid)
            except (OSError, ValueError):
                continue
    return found


def _descendants_psutil(pid: int) -> list[int]:
    try:
        root = psutil.Process(pid)
        return [pid, *(p.pid for p in root.children(recursive=True))]
    except psutil.Error:
        return []
