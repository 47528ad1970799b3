"""Shared parts of the benchmark suite: a seeded fleet, a shared `console serve`, a console in a pty.

Everything runs on loopback in a throwaway data folder (`CONSOLE_DATA_DIR`, `CONSOLE_CONFIG`), so
the user's own config, ledger and server are never touched. Processes started here are stopped
by their process id when the suite ends.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import select
import signal
import statistics
import struct
import subprocess
import sys
import termios
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

BIN = Path(sys.executable).parent
CONSOLE_BIN = BIN / "console"
HF_BIN = BIN / "hf"
NAMESPACE = "bench"
READY_ENV = "CONSOLE_BENCH_READY_FILE"
STAMPED_CONSOLE = Path(__file__).resolve().parent / "stamped_console.py"
"""The real console with the benchmark's frame stamps put in from outside (the console has none)."""

CRONS = ("0 3 * * 1", "30 2 * * *", "0 4 1 * *", "15 5 * * 0", "0 */6 * * *")
FLAVORS = ("l4x1", "a10g-small", "t4-small", "a10g-large")
FALLBACK_FLAVORS = ("l4x1", "a10g-large", "l40sx1", "a100-large")


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def p95(values: list[float]) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


@dataclass
class Workspace:
    """A data folder and config file that the console, `console serve` and `hf` all share."""

    root: Path
    max_running_jobs: int = 4

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def config_path(self) -> Path:
        return self.root / "config.toml"

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("CONSOLE_SERVER_TOKEN", None)
        # the console as a user has it installed: with its bytecode (see `compile_console`)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(
            CONSOLE_DATA_DIR=str(self.data_dir),
            CONSOLE_CONFIG=str(self.config_path),
            HF_HUB_DISABLE_TELEMETRY="1",
            HF_HUB_OFFLINE="0",
            TERM="xterm-256color",
            COLUMNS="80",
            LINES="24",
        )
        env.update(extra)
        return env

    def write_config(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(
            f'namespace = "{NAMESPACE}"\nplan = "pro"\nbackend = "local"\n\n'
            f"[server]\nmax_running_jobs = {self.max_running_jobs}\n",
            encoding="utf-8",
        )


def seed_fleet(ws: Workspace, tenants: int, jobs: int) -> None:
    """`tenants` scheduled jobs through the real API, then `jobs` finished jobs into the store.

    Scheduled jobs are created by `HfApi.create_scheduled_job` with real console submissions (so
    the fleet derives exactly as in production); the job history is bulk-inserted with each
    tenant's own spec and labels, spread over the last 30 days, one in 12 ending in ERROR.
    Every submission ships the same scripts: by reference, they are uploaded to the namespace's
    jobs-artifacts bucket once; inline (older consoles), the bundle is encoded once here.
    """
    import functools

    from console import jobspec as _jobspec

    encode = getattr(_jobspec, "encode_bundle", None)
    if encode is None:  # scripts shipped by reference (a bucket volume): nothing to encode
        _seed(ws, tenants, jobs)
        return
    _jobspec.encode_bundle = functools.lru_cache(maxsize=8)(encode)
    try:
        _seed(ws, tenants, jobs)
    finally:
        _jobspec.encode_bundle = encode


def _seed(ws: Workspace, tenants: int, jobs: int) -> None:
    ws.write_config()
    os.environ["CONSOLE_DATA_DIR"] = str(ws.data_dir)
    os.environ["CONSOLE_CONFIG"] = str(ws.config_path)
    os.environ.pop("CONSOLE_SERVER_TOKEN", None)
    from huggingface_hub import HfApi

    from console import jobspec
    from console.server import LocalServer, ServerOptions
    from console.server.core import new_id
    from console.server.jobs.store import JobRecord

    with LocalServer(ServerOptions(namespace=NAMESPACE, max_running_jobs=1)) as server:
        api = HfApi(endpoint=server.url, token=server.token)
        specs: list[tuple[str, dict]] = []
        for i in range(tenants):
            tenant = f"t{i:04d}"
            request = jobspec.TrainingRequest(
                tenant=tenant,
                dataset=f"bench/{tenant}-chats",
                base_model=("Qwen/Qwen3-0.6B", "Qwen/Qwen2.5-3B", "Qwen/Qwen2.5-7B")[i % 3],
                model_b=(1.0, 3.0, 7.0)[i % 3],
                examples=500 + (i * 37) % 4000,
                epochs=(1.0, 2.0, 3.0)[i % 3],
                flavor=FLAVORS[i % len(FLAVORS)] if i % 3 != 2 else "a10g-large",
                env="prod",
                hub_model_id=f"bench/{tenant}-adapter",
            )
            # a Hub submission, as on huggingface.co: it names a destination and carries a token;
            # a model its flavor cannot hold goes to the next flavor that can (as a user would)
            for flavor in (request.flavor, *FALLBACK_FLAVORS):
                try:
                    sub = jobspec.build_submission(replace(request, flavor=flavor), backend_kind="hub",
                                                   token="hf_bench_not_a_token")
                    break
                except jobspec.SubmissionError:
                    if flavor == FALLBACK_FLAVORS[-1]:
                        raise
            if getattr(sub, "ships", ()):  # scripts by reference: uploaded to the bucket once
                from console.ship import ship

                sub = ship(api, sub, NAMESPACE)
            kwargs = sub.scheduled_kwargs(CRONS[i % len(CRONS)], suspend=(i % 50 == 7))
            kwargs.pop("name", None)
            api.create_scheduled_job(**kwargs, namespace=NAMESPACE)
        bundles: dict[str, str] = {}
        for sj in server.service.store.iter_scheduled(NAMESPACE):
            env = sj.spec.get("environment") or {}
            for key, value in env.items():  # one copy of the shipped bundle, not one per tenant
                if len(value) > 1024:
                    env[key] = bundles.setdefault(value, value)
            specs.append((sj.spec["labels"]["tenant"], sj.spec))
        start = time.time() - 30 * 86400
        step = (30 * 86400 - 3600) / max(1, jobs)

        def records() -> Iterator[JobRecord]:
            for n in range(jobs):
                tenant, spec = specs[n % len(specs)]
                created = start + n * step
                failed = n % 12 == 5
                yield JobRecord(
                    id=new_id(),
                    namespace=NAMESPACE,
                    created_at=created,
                    stage="ERROR" if failed else "COMPLETED",
                    spec=spec,
                    labels=dict(spec.get("labels") or {}),
                    started_at=created + 20,
                    finished_at=created + (300 if failed else 1500),
                    message="CUDA out of memory" if failed else None,
                )

        server.service.store.insert_jobs_bulk(records())


@dataclass
class SharedServer:
    """`console serve` in its own process: the consoles and `hf` under test all talk to it."""

    ws: Workspace
    proc: subprocess.Popen | None = None
    url: str = ""
    token: str = ""

    def start(self, timeout: float = 30.0) -> SharedServer:
        info = self.ws.data_dir / "server.json"
        with contextlib.suppress(FileNotFoundError):
            info.unlink()
        self.proc = subprocess.Popen(
            [str(CONSOLE_BIN), "serve"],
            env=self.ws.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if info.exists():
                try:
                    self.url = json.loads(info.read_text())["url"]
                    break
                except (ValueError, KeyError):
                    pass
            time.sleep(0.05)
        else:
            raise RuntimeError("console serve did not announce itself")
        self.token = (self.ws.data_dir / "server" / "token").read_text().strip()
        self.get("/api/whoami-v2")
        return self

    def get(self, path: str) -> bytes:
        req = urllib.request.Request(
            self.url + path, headers={"authorization": f"Bearer {self.token}"}
        )
        with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310 (loopback)
            return resp.read()

    def api(self):
        from huggingface_hub import HfApi

        return HfApi(endpoint=self.url, token=self.token)

    def hf_env(self) -> dict[str, str]:
        return self.ws.env(HF_ENDPOINT=self.url, HF_TOKEN=self.token, NO_COLOR="1")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self.proc = None


@dataclass
class PtyProcess:
    """A program on a real pseudo-terminal (80x24), its screen output drained by a thread."""

    argv: list[str]
    env: dict[str, str]
    cols: int = 80
    rows: int = 24
    pid: int = 0
    fd: int = -1
    spawned_at: float = 0.0
    output: bytearray = field(default_factory=bytearray)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _reader: threading.Thread | None = None
    _closed: bool = False

    def spawn(self) -> PtyProcess:
        self.spawned_at = time.time()
        pid, fd = pty.fork()
        if pid == 0:  # child
            try:
                os.execve(self.argv[0], self.argv, self.env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", self.rows, self.cols, 0, 0))
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        while not self._closed:
            try:
                ready, _, _ = select.select([self.fd], [], [], 0.1)
                if not ready:
                    continue
                chunk = os.read(self.fd, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self.output += chunk

    def size(self) -> int:
        with self._lock:
            return len(self.output)

    def wait_for(self, pattern: bytes | re.Pattern, since: int = 0, timeout: float = 10.0):
        """Wait until `pattern` appears in the output after offset `since`; returns (time, match end)."""
        regex = pattern if isinstance(pattern, re.Pattern) else re.compile(re.escape(pattern))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                m = regex.search(self.output, since)
            if m:
                return time.perf_counter(), m.end()
            time.sleep(0.001)
        return None, since

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def clear_output(self) -> None:
        with self._lock:
            self.output.clear()

    def alive(self) -> bool:
        try:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return False
        return pid == 0

    def close(self, quit_key: bytes | None = b"q", timeout: float = 5.0) -> None:
        if self.pid and self.alive():
            if quit_key:
                with contextlib.suppress(OSError):
                    self.send(quit_key)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.alive():
                time.sleep(0.05)
            if self.alive():
                os.kill(self.pid, signal.SIGTERM)
                time.sleep(0.5)
            if self.alive():
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
        self._closed = True
        if self._reader is not None:
            self._reader.join(1)
        with contextlib.suppress(OSError):
            os.close(self.fd)


def start_console(ws: Workspace, ready_file: Path, *extra_args: str) -> PtyProcess:
    """The real `console` (TUI) in a pty, run through `stamped_console.py`, which stamps
    `ready_file` as its frames come (`stamps`)."""
    with contextlib.suppress(FileNotFoundError):
        ready_file.unlink()
    env = ws.env(**{READY_ENV: str(ready_file)})
    return PtyProcess([sys.executable, str(STAMPED_CONSOLE), *extra_args], env).spawn()


def stamps(ready_file: Path) -> dict[str, float]:
    """The console's stamps so far: `snapshot` (the cached picture painted), `fresh` (the first
    fresh data painted), `full` (every job known), each a `time.time()`."""
    out: dict[str, float] = {}
    try:
        for line in ready_file.read_text().splitlines():
            what, _, when = line.partition(" ")
            try:
                out.setdefault(what, float(when))
            except ValueError:
                pass
    except FileNotFoundError:
        pass
    return out


def wait_stamp(proc: PtyProcess, ready_file: Path, what: str, timeout: float = 120.0) -> float:
    """Seconds from spawn to the frame the console stamped `what`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = stamps(ready_file)
        if what in found:
            return found[what] - proc.spawned_at
        if not proc.alive():
            raise RuntimeError(
                f"console exited before its {what} frame: " + proc.output[-2000:].decode(errors="replace")
            )
        time.sleep(0.005)
    raise RuntimeError(f"console did not stamp its {what} frame in {timeout:.0f} s")


def wait_ready(proc: PtyProcess, ready_file: Path, timeout: float = 120.0) -> float:
    """Seconds from spawn to the first frame with fresh data in the jobs table."""
    return wait_stamp(proc, ready_file, "fresh", timeout)


def wait_full(proc: PtyProcess, ready_file: Path, timeout: float = 900.0) -> float:
    """Seconds from spawn to the first frame with every job known ("full" stamp)."""
    return wait_stamp(proc, ready_file, "full", timeout)


def peak_rss(pid: int) -> int:
    """The most memory the process has held (VmHWM), in bytes (0 when unknown)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def forget_cache(ws: Workspace) -> None:
    """Remove the console's local cache (the next start reads everything, as the first one did)."""
    import shutil

    shutil.rmtree(ws.data_dir / "cache", ignore_errors=True)


def machine() -> dict[str, str]:
    """What the figures ran on: CPU model and count, memory, load, OS, Python and key packages."""
    import platform
    from importlib import metadata

    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())

    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "-"

    return {
        "cpu": f"{model}, {os.cpu_count()} logical CPUs",
        "memory": mem,
        "os": f"{platform.system()} {platform.release()}",
        "python": sys.version.split()[0],
        "packages": f"textual {version('textual')}, huggingface_hub {version('huggingface_hub')}",
        "load": load,
    }


def compile_console() -> None:
    """Byte-compile the console's own modules, as `pip install` does: a checkout run with
    PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module at every start and measure
    the compiler (about 140 ms of the start-up path on the benchmark box)."""
    import compileall

    import console

    compileall.compile_dir(str(Path(console.__file__).parent), quiet=1, force=False)

