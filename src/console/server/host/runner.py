"""Run jobs for real: one process group per job, in a throwaway working folder.

The runner thread starts queued (SCHEDULING) jobs oldest first while fewer than
`max_running` run, watches the running ones, and carries out cancels. A job's `timeoutSeconds` is
kept by a timer of its own, started with the job's clock: when it runs out the job's whole process
group is killed at once, however busy the runner thread is, and the job's run ends there (reference
§1: "Reaching timeout kills the job and loses unsaved progress"; it is billed up to that moment).
Each job's stdout and stderr go through one pipe to a pump thread that writes one JSON event per
line (``{"data", "timestamp"}``, secret values masked) to the job's log file, which is exactly what
the logs SSE stream replays. When a job's main process exits, whatever is left of its process group
is killed, its working folder is deleted, and only then does the job reach its terminal stage, so a
client that sees CANCELED / ERROR / COMPLETED knows nothing of the job still runs.

Stop (server shutdown) kills every running group and marks those jobs ERROR; a server that starts
after a crash does the same for the groups recorded in the database (see :meth:`Runner.recover`).

Why one module of over 500 lines: starting, watching, timing out and cancelling a job share one
thread and one lock, and a job's terminal stage depends on all four; the parts that stand alone
live beside it (`joblog.py`: the log; `sandbox.py`: the sandbox; `fetcher.py`: downloads).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import psutil

from console.prices import HF_DEFAULT_TIMEOUT_SECONDS
from console.server import paths
from console.server.host import limits, sandbox
from console.server.host.commands import plan_command
from console.server.host.fetcher import Fetcher
from console.server.host.jobenv import cpu_share, format_seconds, job_environment
from console.server.host.volumes import VolumeError, resolve_mounts
from console.server.jobs.joblog import LOG_CAP_BYTES, LogSink, append_log, log_event, pump, write_whole
from console.server.jobs.store import JobRecord, Store
from console.server.jobs.wire import iso
from console.server.reserve import Reserve, is_disk_full

log = logging.getLogger("console.server.host.runner")

SERVER_STOPPED_MESSAGE = "the server stopped while the job was running"
HEARTBEAT_SECONDS = 2.0
"""How often the runner records that its running jobs are alive: a job the server loses (a crash,
a kill) is billed until its last heartbeat, at most this much short of the truth."""
RESERVE_RETRY_SECONDS = 10.0
"""How often the runner tries to hold its reserve again after a full disk made it let go."""
TERM_GRACE_SECONDS = 3.0
DISK_FULL_MESSAGE = "disk full: the job's log could not be written"
NO_SANDBOX_VOLUMES = "volumes need the sandbox (bubblewrap), which this machine lacks"
NO_SANDBOX_REDIRECT = "no sandbox: the command's paths under it lead to its folder on this machine"
@dataclass
class _Running:
    job: JobRecord
    popen: subprocess.Popen[bytes]
    workdir: Path
    log_fh: IO[bytes]
    deadline: float
    pump: threading.Thread
    redact: list[str] = field(default_factory=list)
    reason: str | None = None  # "cancel" | "timeout" | "stop"
    term_sent_at: float | None = None
    ended_at: float | None = None
    """When the job's run ended (epoch seconds): its kill at the timeout, or its exit as first seen;
    its finishedAt (its billed running time ends there, not once its folder is cleaned up)."""
    timer: threading.Timer | None = None
    """Kills the job at its deadline (:meth:`Runner._time_out`)."""
    watch: limits.Watch | None = None
    over: str | None = None  # the limit it went over, in words (reason "limit")


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _terminate(pgid: int) -> bool:
    """Ask a job to stop (SIGTERM), as a container is asked before it is killed. In a sandbox the
    signal goes to the job's own processes, not to bubblewrap around them: bubblewrap ending takes
    the whole sandbox down at once, which is the SIGKILL that follows the grace period."""
    try:
        outer = psutil.Process(pgid)
        if outer.name() == "bwrap":
            inside = [p for p in outer.children(recursive=True) if p.name() != "bwrap"]
            for proc in inside:
                try:
                    proc.send_signal(signal.SIGTERM)
                except psutil.Error:
                    pass
            return True
    except psutil.Error:
        pass
    return _signal_group(pgid, signal.SIGTERM)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


class Runner:
    """Starts, watches, times out and cancels job processes (one background thread)."""

    def __init__(self, store: Store, *, max_running: int = 2, python_mode: str = "self",
                 poll_interval: float = 0.05, log_cap_bytes: int = LOG_CAP_BYTES,
                 bucket_exists: Callable[[str], bool] = lambda _bucket: False) -> None:
        self.store = store
        self.bucket_exists = bucket_exists
        self.fetcher = Fetcher(lambda job_id: paths.work_root() / f"{job_id}.script", self.wake)
        """Script downloads of `uv run URL` jobs, each in its own thread (never this one's)."""
        self.on_start: list[Callable[[JobRecord], Any]] = []
        """Called (in the runner thread) once a job's process runs."""
        self.on_finish: list[Callable[[JobRecord], Any]] = []
        """Called (in the runner thread) once a job's run has ended and its process group is gone."""
        self.log_cap_bytes = log_cap_bytes
        self.caps = limits.Caps.from_env()
        """The server's caps on each job's flavor limits (:mod:`console.server.host.limits`)."""
        self.grant: Callable[[JobRecord], dict[str, str]] = lambda job: dict(job.secrets)
        """A job's secrets as it starts with them (the server's token replaced: :mod:`console.server.host.grants`)."""
        self.hub_endpoint: str | None = None
        """This server's URL once it listens: each job's $HF_ENDPOINT (:func:`job_environment`)."""
        self.max_running = max(1, max_running)
        self.python_mode = python_mode
        self.poll_interval = poll_interval
        self._active: dict[str, _Running] = {}
        self._last_heartbeat = 0.0
        self.reserve = Reserve(paths.reserve_path())
        """Space held back so a job's end is recorded even on a full disk (server/reserve.py)."""
        self._reserve_tried = time.monotonic()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self.reserve.hold()
        self.recover()
        self._thread = threading.Thread(target=self._loop, name="console-jobs-runner", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Kill every running job (ERROR: server stopped) and end the runner thread."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=TERM_GRACE_SECONDS + 10)
            self._thread = None

    def recover(self) -> None:
        """After a restart: kill groups left by jobs that were running, mark them ERROR as of the
        moment they were last seen alive (their last heartbeat)."""
        for job in self.store.jobs_in_stages(("RUNNING",)):
            if job.pgid:
                _kill_leftover_group(job.pgid, job.id)
            if self.store.finish_job_at_last_sight(job.id, "ERROR", SERVER_STOPPED_MESSAGE):
                append_log(job.id, f"===== {SERVER_STOPPED_MESSAGE} =====")
        for leftover in paths.work_root().iterdir():
            shutil.rmtree(leftover, ignore_errors=True)

    # -- requests from the API -------------------------------------------------------------

    def wake(self) -> None:
        self._wake.set()

    def cancel(self, job_id: str) -> None:
        """Cancel a job: a queued one ends at once; a running one once its group is dead."""
        with self._lock:
            running = self._active.get(job_id)
            if running is not None:
                if running.reason is None:
                    running.reason = "cancel"
                    running.term_sent_at = time.monotonic()
                    _terminate(running.popen.pid)
                self._wake.set()
                return
        self.store.finish_job_if_active(job_id, "CANCELED", None, time.time())

    def is_running(self, job_id: str) -> bool:
        with self._lock:
            return job_id in self._active

    def pid_of(self, job_id: str) -> int | None:
        with self._lock:
            running = self._active.get(job_id)
            return running.popen.pid if running else None

    def workdir_of(self, job_id: str) -> Path | None:
        with self._lock:
            running = self._active.get(job_id)
            return running.workdir if running else None

    def running_count(self) -> int:
        with self._lock:
            return len(self._active)

    # -- the loop --------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                self._tick()
            except Exception:  # keep the runner alive; the next tick retries
                log.exception("runner tick failed")
            self._wake.wait(self.poll_interval)
            self._wake.clear()
        self._shutdown()

    def _tick(self) -> None:
        now = time.monotonic()
        with self._lock:
            items = list(self._active.values())
        if now - self._reserve_tried >= RESERVE_RETRY_SECONDS:
            self._reserve_tried = now
            self.reserve.hold()  # again, once a full disk has room
        if items and now - self._last_heartbeat >= HEARTBEAT_SECONDS:
            self._last_heartbeat = now
            try:
                self.store.heartbeat(time.time())
            except sqlite3.OperationalError as exc:  # a full disk: the jobs are still watched
                log.warning("heartbeat not recorded: %s", exc)
        for running in items:
            with self._lock:
                rc = running.popen.poll()
                if rc is not None and running.ended_at is None:
                    running.ended_at = time.time()
            if rc is None:
                if running.reason is None and now >= running.deadline:
                    self._time_out(running)  # its timer is late (it never is by more than a tick)
                elif running.reason is None and running.watch and (over := running.watch.over()):
                    running.over = over
                    self._time_out(running, "limit")  # killed at once, as at its timeout
                elif (
                    running.reason is not None
                    and running.term_sent_at is not None
                    and now - running.term_sent_at >= TERM_GRACE_SECONDS
                ):
                    _signal_group(running.popen.pid, signal.SIGKILL)
                continue
            self._finish(running, rc)
        self._start_queued()

    def _start_queued(self) -> None:
        if self._stopping.is_set():
            return
        queued = self.store.jobs_in_stages(("SCHEDULING",))
        for job_id in set(self.fetcher.finished()) - {job.id for job in queued}:
            if not self.is_running(job_id):
                self.fetcher.forget(job_id)  # canceled while its script downloaded
        for job in queued:
            if self.running_count() >= self.max_running:
                break
            if self.is_running(job.id):
                continue
            self._launch(job)

    def preparing(self, job_id: str) -> str | None:
        """Why a queued job has not started yet, when it is its script being downloaded."""
        item = self.fetcher.pending(job_id)
        return f"Downloading the script {item.url}" if item is not None else None

    def _launch(self, job: JobRecord, *, retry: bool = False) -> None:
        workdir = paths.job_workdir(job.id)
        argv = list(job.spec["command"]) + list(job.spec.get("arguments") or [])
        plan = plan_command(argv, self.python_mode)
        script = None
        if plan.download:
            script = self.fetcher.state(job.id, plan.download, plan.argv[1])
            if script.outcome() is None:
                return  # not yet: the job stays queued, the next tick looks again
        attempts = int(job.spec.get("attempts", 1))
        if retry:
            header = f"===== Retrying: attempt {job.attempt} of {attempts} ====="
        else:
            header = f"===== Job started at {iso(time.time())} ====="
        lines = [header] + ([f"===== {plan.note} ====="] if plan.note else [])
        try:
            shutil.rmtree(workdir, ignore_errors=True)
            workdir.mkdir(parents=True)
            log_fh = open(paths.log_path(job.id), "ab", buffering=0)  # noqa: SIM115
            try:
                write_whole(log_fh, "".join(log_event(line) + "\n" for line in lines))
            except OSError:
                log_fh.close()
                raise
        except OSError as exc:  # a full disk: the job cannot even be logged, so it does not start
            shutil.rmtree(workdir, ignore_errors=True)
            reason = DISK_FULL_MESSAGE if is_disk_full(exc) else f"Job failed to start: {exc}"
            try:
                if job.started_at is None:
                    self.store.update_job(job.id, started_at=time.time())
                self.store.finish_job_if_active(job.id, "ERROR", reason, time.time())
            except (sqlite3.Error, OSError):
                log.warning("job %s could not start and could not be recorded: %s", job.id, exc)
            return
        started = time.time()
        clock = time.monotonic()  # the job's timeout counts from here, as its running time does
        isolation = sandbox.detect()
        secrets, job_limits = self.grant(job), self.caps.for_flavor(job.spec.get("flavor"))
        env = job_environment(job, sandboxed=isolation.available, hub_endpoint=self.hub_endpoint,
                              threads=cpu_share(self.max_running), secrets=secrets)
        Path(env["TMPDIR"]).mkdir(parents=True, exist_ok=True)
        writable = [Path(env["CONSOLE_ARTIFACTS_DIR"]), paths.trackio_dir(), *sandbox.shared_caches()]
        try:
            mounts = self._mounts(job, isolation, log_fh, plan.argv)
            command = plan.argv if isolation.available else redirect_to_mounts(plan.argv, mounts)
            argv = sandbox.wrap(command, isolation, workdir=workdir, writable=writable, mounts=mounts, env=env,
                                limits=job_limits.prlimit_argv())
            if script is not None:
                if script.outcome():
                    raise _LaunchRefused(script.outcome() or "")
                shutil.copyfile(script.dest, workdir / plan.argv[1])
            _check_executable(plan.argv[0], env.get("PATH", os.defpath), workdir)
            popen = subprocess.Popen(
                argv,
                cwd=workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
        except (OSError, ValueError, _LaunchRefused) as exc:
            reason = _launch_error(plan.argv, exc)
            self.fetcher.forget(job.id)
            try:
                write_whole(log_fh, log_event(reason) + "\n")
            except OSError:
                pass
            log_fh.close()
            shutil.rmtree(workdir, ignore_errors=True)
            if job.started_at is None:
                self.store.update_job(job.id, started_at=started)
            self.store.finish_job_if_active(job.id, "ERROR", reason, time.time())
            return
        redact = sorted((v for v in {**job.secrets, **secrets}.values() if len(v) >= 4), key=len, reverse=True)
        sink = LogSink(log_fh, redact, self.log_cap_bytes, lambda exc, job_id=job.id: self._log_failed(job_id, exc))
        pump_thread = threading.Thread(target=pump, args=(popen, sink), name=f"console-job-log-{job.id}", daemon=True)
        timeout = float(job.spec.get("timeoutSeconds") or HF_DEFAULT_TIMEOUT_SECONDS)
        running = _Running(
            job=job, popen=popen, workdir=workdir, log_fh=log_fh,
            deadline=clock + timeout, pump=pump_thread, redact=redact,
            watch=limits.Watch(popen.pid, workdir, job_limits),
        )
        running.timer = threading.Timer(max(0.0, running.deadline - time.monotonic()), self._time_out, (running,))
        running.timer.daemon = True
        with self._lock:
            self._active[job.id] = running
        running.timer.start()
        pump_thread.start()
        if job.started_at is None:
            job.started_at = started
        if not self.store.mark_running(job.id, popen.pid, job.started_at, job.attempt):
            # Canceled between being picked from the queue and starting: kill what started.
            running.reason = "cancel"
            running.term_sent_at = time.monotonic()
            _terminate(popen.pid)
            return
        self._call_hooks(self.on_start, job)

    def _mounts(self, job: JobRecord, isolation: sandbox.Sandbox, log_fh: IO[bytes],
                argv: list[str]) -> list[sandbox.Mount]:
        """The job's volumes as binds; a job whose volumes cannot be mounted does not start.

        Without a sandbox nothing can be bound at a mount path: a read-only volume that the
        command itself names (`uv run /console-training/sft_lora.py`, a shipped script) is reached
        through its folder on this machine instead (:func:`redirect_to_mounts`); any other volume
        ends the job with the reason, since its paths would be missing later and less clearly."""
        volumes = job.spec.get("volumes") or []
        if not volumes:
            return []
        if not isolation.available:
            unreachable = [v["mountPath"] for v in volumes
                           if not v.get("readOnly") or not any(_is_under(a, v["mountPath"]) for a in argv)]
            if unreachable:
                raise _LaunchRefused(f"{NO_SANDBOX_VOLUMES} ({isolation.reason}); not mounted: "
                                     + ", ".join(unreachable))
        try:
            mounts, notes = resolve_mounts(volumes, job.namespace, self.bucket_exists)
        except VolumeError as exc:
            raise _LaunchRefused(str(exc)) from None
        how = "" if isolation.available else f"; {NO_SANDBOX_REDIRECT}"
        lines = [f"===== {note} =====" for note in notes]
        lines += [f"===== volume {dest}: {'read-only' if ro else 'read-write'}{how} =====" for _, dest, ro in mounts]
        write_whole(log_fh, "".join(log_event(line) + "\n" for line in lines))
        return mounts

    def _time_out(self, running: _Running, reason: str = "timeout") -> None:
        """The job reached its timeout (or went over a limit): kill its whole process group now (no
        grace: a job asked to stop could run on past it), and end its run here."""
        with self._lock:
            if running.reason is not None or running.ended_at is not None or running.popen.poll() is not None:
                return
            running.reason = reason
            running.ended_at = time.time()
            running.term_sent_at = time.monotonic()
            _signal_group(running.popen.pid, signal.SIGKILL)
        self._wake.set()

    def _finish(self, running: _Running, rc: int) -> None:
        job = running.job
        pgid = running.popen.pid
        if running.timer is not None:
            running.timer.cancel()
        if running.ended_at is None:
            running.ended_at = time.time()
        # The container is gone when its main process is: nothing of the group outlives it.
        _signal_group(pgid, signal.SIGKILL)
        running.pump.join(timeout=5)
        for _ in range(100):
            if not _group_alive(pgid):
                break
            time.sleep(0.02)
        try:
            running.log_fh.close()
        except OSError:
            pass
        shutil.rmtree(running.workdir, ignore_errors=True)
        stage, message = self._outcome(running, rc)
        attempts = int(job.spec.get("attempts", 1))
        if (
            stage == "ERROR" and running.reason is None and job.attempt < attempts
            and not self._stopping.is_set()
        ):
            with self._lock:
                self._active.pop(job.id, None)
            job.attempt += 1
            self.store.update_job(job.id, attempt=job.attempt)
            self._launch(job, retry=True)
            return
        # The job leaves the active set only once its end is recorded: if the database cannot take
        # the write (a full disk), it stays, and the next tick tries again.
        try:
            self._record_end(job, stage, message, running.ended_at)
        except (sqlite3.Error, OSError) as exc:
            if not (is_disk_full(exc) and self.reserve.release()):
                log.warning("job %s ended %s but could not be recorded yet: %s", job.id, stage, exc)
                return
            try:  # the space held back for this
                self._record_end(job, stage, message, running.ended_at)
            except (sqlite3.Error, OSError) as again:
                log.warning("job %s ended %s but could not be recorded yet: %s", job.id, stage, again)
                return
        with self._lock:
            self._active.pop(job.id, None)
        self.fetcher.forget(job.id)
        self._call_hooks(self.on_finish, job)

    def _record_end(self, job: JobRecord, stage: str, message: str | None, ended_at: float | None) -> None:
        # (A job canceled while it was being launched is CANCELED already: this is a no-op.)
        self.store.finish_job_if_active(job.id, stage, message, ended_at or time.time())
        self.store.update_job(job.id, pid=None, pgid=None)

    @staticmethod
    def _call_hooks(hooks: list[Callable[[JobRecord], Any]], job: JobRecord) -> None:
        for hook in hooks:
            try:
                hook(job)
            except Exception:  # a hook must not stop the runner
                log.exception("runner hook failed for job %s", job.id)

    def _log_failed(self, job_id: str, exc: OSError) -> None:
        """The job's log cannot be written (a full disk): end it ERROR rather than run it blind."""
        log.warning("job %s: writing its log failed: %s", job_id, exc)
        with self._lock:
            running = self._active.get(job_id)
        if running is not None and running.reason is None:
            running.reason = "disk full"
            running.term_sent_at = time.monotonic()
            _terminate(running.popen.pid)
            self._wake.set()

    def _outcome(self, running: _Running, rc: int) -> tuple[str, str | None]:
        if running.reason == "cancel":
            return "CANCELED", None
        if running.reason == "disk full":
            return "ERROR", DISK_FULL_MESSAGE
        if running.reason == "timeout":
            timeout = float(running.job.spec.get("timeoutSeconds") or HF_DEFAULT_TIMEOUT_SECONDS)
            return "ERROR", f"Job timed out after {format_seconds(timeout)} (timeoutSeconds)"
        if running.reason == "stop":
            return "ERROR", SERVER_STOPPED_MESSAGE
        if running.reason == "limit":
            return "ERROR", running.over
        if rc == 0:
            return "COMPLETED", None
        if rc > 0:
            return "ERROR", f"Job failed with exit code: {rc}"
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = str(-rc)
        return "ERROR", f"Job was killed by signal {name}"

    def _shutdown(self) -> None:
        with self._lock:
            items = list(self._active.values())
        for running in items:
            if running.reason is None:
                running.reason = "stop"
            _terminate(running.popen.pid)
        deadline = time.monotonic() + TERM_GRACE_SECONDS
        for running in items:
            remaining = max(0.0, deadline - time.monotonic())
            try:
                rc = running.popen.wait(timeout=remaining)
            except subprocess.TimeoutExpired:
                _signal_group(running.popen.pid, signal.SIGKILL)
                rc = running.popen.wait()
            self._finish(running, rc)


def _is_under(arg: str, mount: str) -> bool:
    return arg == mount or arg.startswith(mount.rstrip("/") + "/")


def redirect_to_mounts(argv: list[str], mounts: list[sandbox.Mount]) -> list[str]:
    """`argv` with each argument under a volume's mount path led to the volume's folder on this
    machine (what the job runs where no sandbox can bind the folder at its mount path)."""
    out = []
    for arg in argv:
        for folder, dest, _read_only in mounts:
            if _is_under(arg, dest):
                arg = str(folder) + arg[len(dest.rstrip("/")):]
                break
        out.append(arg)
    return out


class _LaunchRefused(Exception):
    """A job that cannot start, and why (its volumes, its script download)."""


def _check_executable(program: str, path: str, cwd: Path) -> None:
    """Fail the way `exec` would, before the sandbox hides why (bubblewrap would exit 1)."""
    if "/" in program:
        target = Path(program) if Path(program).is_absolute() else cwd / program
        if not target.exists():
            raise FileNotFoundError(program)
        if not os.access(target, os.X_OK) or target.is_dir():
            raise PermissionError(program)
    elif shutil.which(program, path=path) is None:
        raise FileNotFoundError(program)


def _launch_error(argv: list[str], exc: Exception) -> str:
    if isinstance(exc, _LaunchRefused):
        return f"Job failed to start: {exc}"
    if isinstance(exc, FileNotFoundError):
        return f"Job failed to start: command not found: {argv[0]}"
    if isinstance(exc, PermissionError):
        return f"Job failed to start: permission denied: {argv[0]}"
    return f"Job failed to start: {exc}"


def _kill_leftover_group(pgid: int, job_id: str) -> None:
    """Kill a process group a previous server left behind, if it still belongs to that job."""
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) != pgid:
                continue
            if proc.environ().get("JOB_ID") != job_id:
                continue
        except (psutil.Error, ProcessLookupError, PermissionError):
            continue
        _signal_group(pgid, signal.SIGKILL)
        return
