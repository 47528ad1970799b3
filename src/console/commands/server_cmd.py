"""`console server`: the data dir's local Jobs server, as the consoles here share it.

    console server start         start it in the background now (if it is not running)
    console server status        where it listens, since when, its Trackio store, its running jobs
    console server stop [--yes]  stop it (asks first when jobs are running, and names them)
    console server logs [-n N] [-f]  the daemon's own log

A console that needs a server and finds none starts it in the background (see `console serve`);
it keeps running after every console has quit, so jobs finish on their own.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

STOP_WAIT_SECONDS = 20.0


def register(subparsers, add_common) -> None:
    p = subparsers.add_parser(
        "server",
        help="status, stop or logs of the local Jobs server the consoles here share",
        description=__doc__.split("\n\n", 1)[0] if __doc__ else None,
    )
    add_common(p)
    sub = p.add_subparsers(dest="server_command", metavar="ACTION")
    start = sub.add_parser("start", help="start it in the background now, as a console would (if none runs)")
    add_common(start)
    start.set_defaults(handler=run_start)
    status = sub.add_parser("status", help="where it listens, since when, its Trackio store and its running jobs")
    add_common(status)
    status.set_defaults(handler=run_status)
    stop = sub.add_parser("stop", help="stop it (running jobs are killed: it asks first)")
    add_common(stop)
    stop.add_argument("--yes", action="store_true", help="do not ask, even when jobs are running")
    stop.set_defaults(handler=run_stop)
    logs = sub.add_parser("logs", help="the server's own log (not a job's: see `hf jobs logs`)")
    add_common(logs)
    logs.add_argument("-n", type=int, default=40, metavar="N", help="lines from the end (default 40)")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    logs.set_defaults(handler=run_logs)
    p.set_defaults(handler=run_status)


def _running():
    """(url, token, info) of the data dir's answering server, or None."""
    from console.backend import find_running_server
    from console.backend.server_info import read_server_info

    found = find_running_server()
    if found is None:
        return None
    return found[0], found[1], read_server_info() or {}


def _not_running() -> int:
    from console import paths

    print(f"No local Jobs server is running for {paths.data_dir()}.")
    print("`console server start` starts one in the background (as `console` does when it needs one);")
    print("`console serve` runs one in this terminal.")
    return 3


def _active_jobs(args: argparse.Namespace, url: str, token: str) -> list:
    from huggingface_hub import HfApi

    from console.commands._common import load_config
    from console.stages import ACTIVE_STAGES

    cfg = load_config(args)
    api = HfApi(endpoint=url, token=token)
    return list(api.list_jobs(namespace=cfg.namespace, status=list(ACTIVE_STAGES)))


def _describe(job) -> str:
    from console.jobs import clean_log_line

    labels = job.labels or {}
    tenant = labels.get("tenant", "-")
    return clean_log_line(f"{job.id}  {job.status.stage:<10}  tenant {tenant}  {job.flavor}")


def run_start(args: argparse.Namespace) -> int:
    """Start the daemon the way a console does when it needs one, then say where it is."""
    from console.backend import BackendError, find_running_server
    from console.backend.daemon import ensure_daemon
    from console.commands._common import CommandError, load_config

    cfg = load_config(args)
    already = find_running_server() is not None
    try:
        ensure_daemon(cfg)
    except BackendError as exc:
        raise CommandError(str(exc)) from None
    if already:
        print("Already running.")
    return run_status(args)


def trackio_cli_line(store) -> str:
    """The Trackio CLI reading the local jobs' store: what to paste into a shell to gate on a run."""
    import shlex

    return f"TRACKIO_DIR={shlex.quote(str(store))} trackio list projects --json"


def run_status(args: argparse.Namespace) -> int:
    from console.backend.daemon import log_path
    from console.commands.serve import hf_cli_line, token_place
    from console.server import paths as server_paths

    running = _running()
    if running is None:
        return _not_running()
    url, token, info = running
    how = "in the background (daemon)" if info.get("daemon") else "in a terminal (`console serve`)"
    started = info.get("started")
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)) if isinstance(started, (int, float)) else "?"
    print(f"Local Jobs server at {url}, pid {info.get('pid')}, running {how} since {since}")
    print(f"  log: {log_path()}")
    print(f"  bearer token in {token_place()}")
    print(f"  hf CLI: {hf_cli_line(url)}")
    store = server_paths.trackio_dir()  # the $TRACKIO_DIR the server gives every job
    print(f"  Trackio store (local jobs' metrics): {store}")
    print(f"  trackio CLI: {trackio_cli_line(store)}")
    if info.get("sandbox"):
        print(f"  {info['sandbox']}")
    jobs = _active_jobs(args, url, token)
    print(f"  {len(jobs)} job(s) scheduling or running")
    for job in jobs:
        print(f"    {_describe(job)}")
    return 0


def run_stop(args: argparse.Namespace) -> int:
    from console.commands._common import CommandError

    running = _running()
    if running is None:
        return _not_running()
    url, token, info = running
    pid = info.get("pid")
    if not isinstance(pid, int):
        raise CommandError("server.json names no process to stop")
    jobs = _active_jobs(args, url, token)
    if jobs and not args.yes:
        print(f"Stopping the server at {url} kills {len(jobs)} running job(s); their unpushed work is lost:")
        for job in jobs:
            print(f"  {_describe(job)}")
        if not sys.stdin.isatty():
            raise CommandError("not stopped: jobs are running (run again with --yes to stop it anyway)")
        answer = input("Stop it? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("Not stopped.")
            return 1
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        print("The server had already stopped.")
        return 0
    except PermissionError:
        raise CommandError(f"not allowed to stop process {pid}") from None
    deadline = time.monotonic() + STOP_WAIT_SECONDS
    while time.monotonic() < deadline:
        if not _alive(pid):
            print(f"Stopped the local Jobs server (pid {pid}).")
            return 0
        time.sleep(0.1)
    raise CommandError(f"the server (pid {pid}) did not stop within {STOP_WAIT_SECONDS:.0f} s")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (its parent has not reaped it yet) has stopped
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def run_logs(args: argparse.Namespace) -> int:
    from console.backend.daemon import log_path

    path = log_path()
    try:
        with open(path, encoding="utf-8", errors="replace") as log:
            lines = log.readlines()
            for line in lines[-max(0, args.n):] if args.n else []:
                sys.stdout.write(line)
            sys.stdout.flush()
            while args.follow:
                line = log.readline()
                if line:
                    sys.stdout.write(line)
                    sys.stdout.flush()
                else:
                    time.sleep(0.2)
    except FileNotFoundError:
        print(f"No server log yet ({path}).")
    return 0
