"""The real `console` on a terminal that goes away: it always exits, and the jobs never notice.

Jobs run in the data dir's Jobs server daemon, so a console quitting (`q`), hung up on (the SSH
link dropped, the tmux pane killed: SIGHUP) or terminated (SIGTERM) leaves them RUNNING, and they
finish; a new console shows them. Every console here runs in a pseudo-terminal as a person's would.
"""

from __future__ import annotations

import json
import os
import pty
import random
import select
import signal
import sys
import time
from pathlib import Path

import psutil
import pytest
from huggingface_hub import HfApi
from tests.conftest import soak

from console import config as config_mod
from console.backend import DAEMON, connect
from console.server import paths as server_paths

EXIT_DEADLINE = 5.0
LOADED_GRACE = 25.0
"""A console not gone after EXIT_DEADLINE gets this much more before it counts as stuck: with two
suites side by side on two cores, a process can wait seconds for the CPU (the late are reported)."""
"""Seconds a console has to be gone after its terminal is (it exits by itself within 1.5 s)."""

WAIT_FOR_SENTINEL = (
    "import os, sys, time\n"
    "path = sys.argv[1]\n"
    "print('started', flush=True)\n"
    "while not os.path.exists(path):\n"
    "    time.sleep(0.1)\n"
    "print('finished', flush=True)\n"
)
FLOOD_UNTIL_SENTINEL = (
    "import os, sys, itertools\n"
    "path = sys.argv[1]\n"
    "for i in itertools.count():\n"
    "    print(f'flood line {i} ' + 'x' * 60, flush=(i % 200 == 0))\n"
    "    if i % 2000 == 0 and os.path.exists(path):\n"
    "        break\n"
)


def _sentinel(tmp_path) -> Path:
    """A file the test creates to let its jobs finish, in the folder the jobs see (their tenant's
    artifact folder: the sandbox shows no other path of this machine)."""
    folder = server_paths.tenant_artifacts_dir("acme") / f"signal-{tmp_path.name}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / "finish"


def _spawn_console(*args: str, exit_log: Path | None = None, hangups_ignored: bool = False) -> tuple[int, int]:
    """A real console on a new pseudo-terminal: its pid and the terminal's end (`exit_log`: the
    file it says why it exited in, `CONSOLE_EXIT_LOG`; `hangups_ignored`: started as `nohup` starts
    a command, SIGHUP ignored)."""
    # not measured by coverage: a measured process saves its data on the way out (os._exit
    # included), which on a loaded machine can take longer than the exit deadline under test
    env = {k: v for k, v in os.environ.items() if k != "COVERAGE_PROCESS_CONFIG"}
    env.update(TERM="xterm-256color", COLUMNS="80", LINES="24")
    if exit_log is not None:
        env["CONSOLE_EXIT_LOG"] = str(exit_log)
    ready_r, ready_w = os.pipe()  # neither end is inherited: the child's exec closes its end
    pid, fd = pty.fork()
    if pid == 0:  # the child: the real console on a terminal
        try:
            os.close(ready_r)
            if hangups_ignored:
                signal.signal(signal.SIGHUP, signal.SIG_IGN)  # kept across exec
            os.write(ready_w, b"t")  # forkpty made the terminal its own (it exits 1 when it cannot)
            os.execve(sys.executable, [sys.executable, "-m", "console", *args], env)
        finally:
            os._exit(127)
    os.close(ready_w)
    os.set_inheritable(fd, False)  # as a terminal keeps it: the next console must not hold it open
    # A terminal's shell runs before the terminal can be closed; so does the console here: the
    # child has made the terminal its controlling one (forkpty does it in the child, and exits 1
    # if the terminal closed first: on a loaded machine a child can wait seconds for the CPU) and
    # has run exec (its end of the pipe closes).
    try:
        mine = os.read(ready_r, 1)
        os.read(ready_r, 1)
    finally:
        os.close(ready_r)
    if mine != b"t":
        _, status = os.waitpid(pid, 0)
        os.close(fd)
        pytest.fail(f"the child could not take its terminal (forkpty): status {status}")
    return pid, fd


def _read_until(fd: int, predicate, timeout: float) -> bytes:
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not predicate(out):
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                out += os.read(fd, 65536)
            except OSError:
                break
    return out


def _wait_exit(pid: int, timeout: float, fd: int | None = None) -> int | None:
    """The wait status of `pid` once it exits, or None if it is still running after `timeout`
    (its terminal `fd`, when still open, is read meanwhile, as a terminal would)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if fd is not None:
            _drain(fd)
        time.sleep(0.01)
    return None


def _hung_up(status: int) -> bool:
    """Exited 129 (its own hangup handling) or killed by the hangup itself (before it set one)."""
    return (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 128 + signal.SIGHUP) or (
        os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGHUP
    )


def _why(exit_log: Path) -> str:
    """What the console wrote in its exit log (why it exited), or that it wrote nothing."""
    try:
        return exit_log.read_text(encoding="utf-8").strip() or "(its exit log is empty)"
    except OSError:
        return "(no exit log: it exited before its start read the command line, or was killed)"


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


@pytest.fixture
def daemon_api() -> HfApi:
    """The data dir's server daemon, started the way a console starts it."""
    backend = connect(config_mod.load(), start=DAEMON)
    backend.close()  # closing a console's backend leaves the daemon running
    info = json.loads(server_paths.server_info_path().read_text())
    assert info["daemon"] and info["pid"] != os.getpid()
    return HfApi(endpoint=info["url"], token=server_paths.read_token())


def _run(api: HfApi, code: str, *args: str):
    namespace = config_mod.load().namespace
    return api.run_job(image="python:3.12", command=[sys.executable, "-u", "-c", code, *args],
                       labels={"app": "console", "tenant": "acme", "kind": "sft", "env": "dev"},
                       namespace=namespace)


def _stage(api: HfApi, job_id: str) -> str:
    return api.inspect_job(job_id=job_id, namespace=config_mod.load().namespace).status.stage


def _wait_stage(api: HfApi, job_id: str, stages: tuple[str, ...], timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    stage = _stage(api, job_id)
    while stage not in stages and time.monotonic() < deadline:
        time.sleep(0.1)
        stage = _stage(api, job_id)
    return stage


def test_the_first_console_starts_the_daemon_in_its_own_session_and_quitting_leaves_it(tmp_path):
    sentinel = _sentinel(tmp_path)
    pid, fd = _spawn_console()
    try:
        screen = _read_until(fd, lambda out: b"refreshed" in out, 60)
        assert b"refreshed" in screen, screen[-500:]
        info = json.loads(server_paths.server_info_path().read_text())
        assert info["daemon"] and info["pid"] != pid
        daemon = psutil.Process(info["pid"])
        assert os.getsid(daemon.pid) == daemon.pid != os.getsid(pid)  # its own session, no terminal
        api = HfApi(endpoint=info["url"], token=server_paths.read_token())
        job = _run(api, WAIT_FOR_SENTINEL, str(sentinel))
        assert _wait_stage(api, job.id, ("RUNNING",)) == "RUNNING"

        os.write(fd, b"q")
        status = _wait_exit(pid, EXIT_DEADLINE, fd)
        assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        pid = 0
        assert daemon.is_running() and _stage(api, job.id) == "RUNNING"  # quitting touched nothing
        sentinel.touch()
        assert _wait_stage(api, job.id, ("COMPLETED", "ERROR", "CANCELED")) == "COMPLETED"
    finally:
        if pid:
            _kill(pid)
        os.close(fd)

    pid, fd = _spawn_console()  # a new console shows the job that finished without it
    try:
        screen = _read_until(fd, lambda out: b"COMPLETED" in out, 60)
        assert b"COMPLETED" in screen
        os.write(fd, b"q")
        assert _wait_exit(pid, EXIT_DEADLINE, fd) is not None
        pid = 0
    finally:
        if pid:
            _kill(pid)
        os.close(fd)


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_a_signal_ends_the_console_and_not_its_jobs(daemon_api, tmp_path, sig):
    sentinel = _sentinel(tmp_path)
    job = _run(daemon_api, WAIT_FOR_SENTINEL, str(sentinel))
    pid, fd = _spawn_console()
    try:
        screen = _read_until(fd, lambda out: b"refreshed" in out, 60)
        assert b"refreshed" in screen
        assert psutil.Process(pid).num_threads() > 1
        children = psutil.Process(pid).children(recursive=True)
        os.kill(pid, sig)
        status = _wait_exit(pid, EXIT_DEADLINE, fd)
        assert status is not None, f"the console did not exit on {sig}"
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 128 + sig
        pid = 0
        assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
        assert _stage(daemon_api, job.id) == "RUNNING"
        sentinel.touch()
        assert _wait_stage(daemon_api, job.id, ("COMPLETED", "ERROR", "CANCELED")) == "COMPLETED"
    finally:
        if pid:
            _kill(pid)
        os.close(fd)


def test_closing_the_terminal_at_any_moment_ends_every_console(daemon_api, tmp_path):
    """20 consoles (50 with CONSOLE_SOAK=full), their terminals closed at random moments from 0.1 s
    to 5 s after start (while starting, drawing, streaming a flooding log), five at a time: each is
    gone within the deadline, leaves nothing behind, and the job running meanwhile runs on and
    finishes."""
    sentinel = _sentinel(tmp_path)
    steady = _run(daemon_api, WAIT_FOR_SENTINEL, str(sentinel))
    flood = _run(daemon_api, FLOOD_UNTIL_SENTINEL, str(sentinel))  # the newest: its log is on screen
    assert _wait_stage(daemon_api, flood.id, ("RUNNING",)) == "RUNNING"
    rng = random.Random(20261203)
    stuck: list[str] = []
    late: list[int] = []
    rounds = soak(4, 10)
    for _round in range(rounds):
        consoles = []
        for _ in range(5):
            exit_log = tmp_path / f"exit-{_round}-{len(consoles)}.log"
            pid, fd = _spawn_console(exit_log=exit_log)
            after = rng.uniform(0.1, 5.0)
            consoles.append((pid, fd, time.monotonic() + after, after, exit_log))
        try:
            pending = list(consoles)
            while pending:
                now = time.monotonic()
                for item in list(pending):
                    pid, fd, close_at, after, exit_log = item
                    if now >= close_at:
                        children = _children(pid)
                        done, status = os.waitpid(pid, os.WNOHANG)
                        os.close(fd)
                        pending.remove(item)
                        if done:  # gone before its terminal was: it ended by itself
                            stuck.append(f"pid {pid} exited by itself before its terminal closed ({after:.1f} s "
                                         f"after its start): status {status}\n{_why(exit_log)}")
                            continue
                        status = _wait_exit(pid, EXIT_DEADLINE)
                        if status is None:  # late: on a machine this loaded, or hung for good
                            status = _wait_exit(pid, LOADED_GRACE)
                            late.append(pid)
                        if status is None or not _hung_up(status):
                            stuck.append(f"pid {pid}, its terminal closed {after:.1f} s after its start: "
                                         f"status {status}\n"
                                         f"{_why(exit_log)}")
                            _kill(pid)
                        left = [c.pid for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
                        if left:
                            stuck.append(f"pid {pid} left processes {left}")
                    else:
                        _drain(fd)  # read what it drew, as a terminal would
                time.sleep(0.02)
        finally:
            for pid, fd, *_ in consoles:
                _kill(pid)
                try:
                    os.close(fd)
                except OSError:
                    pass
    if late:
        print(f"{len(late)} of {5 * rounds} consoles took over {EXIT_DEADLINE:g} s to exit (a loaded machine)")
    assert not stuck, "\n\n".join(stuck)
    assert _stage(daemon_api, steady.id) == "RUNNING"
    Path(sentinel).touch()
    assert _wait_stage(daemon_api, steady.id, ("COMPLETED", "ERROR", "CANCELED")) == "COMPLETED"
    assert _wait_stage(daemon_api, flood.id, ("COMPLETED", "ERROR", "CANCELED")) == "COMPLETED"


def _drain(fd: int) -> None:
    while select.select([fd], [], [], 0)[0]:
        try:
            if not os.read(fd, 65536):
                return
        except OSError:
            return


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def test_ctrl_z_then_fg_draws_the_whole_screen_again(daemon_api):
    pid, fd = _spawn_console()
    try:
        screen = _read_until(fd, lambda out: b"refreshed" in out, 60)
        assert b"Fleet" in screen and b"Jobs" in screen
        os.write(fd, b"\x1a")  # ctrl+z: the console stops itself, as a shell's job would
        deadline = time.monotonic() + 10
        while psutil.Process(pid).status() != psutil.STATUS_STOPPED and time.monotonic() < deadline:
            _drain(fd)
            time.sleep(0.02)
        assert psutil.Process(pid).status() == psutil.STATUS_STOPPED
        _drain(fd)
        os.kill(pid, signal.SIGCONT)  # `fg`
        again = _read_until(fd, lambda out: b"Fleet" in out and b"Training" in out, 15)
        assert b"Fleet" in again and b"Training" in again  # the tabs, not only what changed
        os.write(fd, b"q")
        assert _wait_exit(pid, EXIT_DEADLINE, fd) is not None
        pid = 0
    finally:
        if pid:
            _kill(pid)
        os.close(fd)


START_STEPS = {
    # what the console has written to its terminal when the terminal closes
    "nothing yet (importing)": lambda out: True,
    "its driver started (the alternate screen)": lambda out: b"\x1b[?1049h" in out,
    "its first frame (the tabs)": lambda out: b"Fleet" in out,
    "its first refresh (the status line)": lambda out: b"refreshed" in out,
}


@pytest.mark.parametrize("delay", [0.0, 0.3, 0.8], ids=["at-once", "0.3s", "0.8s"])
@pytest.mark.parametrize("step", list(START_STEPS), ids=["importing", "driver", "first-frame", "refreshed"])
def test_a_terminal_closed_at_each_step_of_the_start_ends_the_console_with_129(daemon_api, tmp_path,
                                                                                step, delay):
    """The terminal closes when the console has drawn up to `step`, `delay` seconds later: the
    console exits 129 (or dies of the hangup), and says so in its exit log, never a traceback."""
    exit_log = tmp_path / "exit.log"
    pid, fd = _spawn_console(exit_log=exit_log)
    try:
        out = _read_until(fd, START_STEPS[step], 60)
        assert START_STEPS[step](out), out[-500:]
    except BaseException:
        _kill(pid)
        os.close(fd)
        raise
    status = _hang_up(pid, fd, delay, exit_log)
    assert _hung_up(status), f"status {status}: {_why(exit_log)}"
    if os.WIFEXITED(status):
        assert "Traceback" not in _why(exit_log), _why(exit_log)


def _hang_up(pid: int, fd: int, delay: float, exit_log: Path) -> int:
    """Close the console's terminal `delay` seconds from now: its exit status (it must exit
    within the deadline; one that does not is killed and fails the test)."""
    try:
        if delay:
            _read_until(fd, lambda _out: False, delay)
    except BaseException:
        _kill(pid)
        raise
    finally:
        os.close(fd)
    status = _wait_exit(pid, EXIT_DEADLINE + LOADED_GRACE)
    if status is None:
        _kill(pid)
        pytest.fail(f"the console did not exit: {_why(exit_log)}")
    return status


def test_a_console_waits_for_a_daemon_too_busy_to_answer_and_starts_no_other(daemon_api, tmp_path):
    """On a loaded machine the daemon can take seconds to answer (here: stopped for 25 s). The
    console's first refresh waits for it, as it waits for a daemon starting: it neither starts a
    second server (which finds the first and exits) nor gives up with "did not start"."""
    info = json.loads(server_paths.server_info_path().read_text())
    daemon = psutil.Process(info["pid"])
    exit_log = tmp_path / "exit.log"
    daemon.suspend()
    pid = 0
    try:
        pid, fd = _spawn_console(exit_log=exit_log)
        status = _wait_exit(pid, 25.0, fd)  # the daemon does not answer meanwhile
        assert status is None, f"the console exited with status {status}: {_why(exit_log)}"
        daemon.resume()
        screen = _read_until(fd, lambda out: b"refreshed" in out, 60)
        assert b"refreshed" in screen, _why(exit_log)
        assert json.loads(server_paths.server_info_path().read_text())["pid"] == daemon.pid
        os.write(fd, b"q")
        status = _wait_exit(pid, EXIT_DEADLINE + LOADED_GRACE, fd)
        assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, _why(exit_log)
        pid = 0
    finally:
        daemon.resume()
        if pid:
            _kill(pid)
            os.close(fd)


@pytest.mark.parametrize("delay", [0.0, 0.5], ids=["at-once", "0.5s"])
def test_a_console_ignoring_hangups_exits_when_its_terminal_closed_before_it_ran(daemon_api, tmp_path, delay):
    """Started with SIGHUP ignored (`nohup console`, or a parent that ignores it), a console whose
    terminal closes while it imports never gets a hangup signal: it still sees the terminal gone
    and exits 129 within the deadline, instead of running on with no terminal."""
    exit_log = tmp_path / "exit.log"
    pid, fd = _spawn_console(exit_log=exit_log, hangups_ignored=True)
    status = _hang_up(pid, fd, delay, exit_log)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 129, f"status {status}: {_why(exit_log)}"
    # the hangup watch ended it, or (once the console set its own handler over the ignored
    # signal) the hangup itself: either way, for the hangup
    assert "exit 129: SIGHUP: " in _why(exit_log), _why(exit_log)
