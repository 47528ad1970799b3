"""`console serve`: run the embedded Jobs server in the foreground, shared by every console here.

It listens on 127.0.0.1 only (port from `--port`, else `server.port` in the config; 0 picks a free
one), prints its URL and where its token is, and announces itself in ``<data dir>/server.json`` so
other consoles (and `console` with `backend = "local"`) use it instead of starting their own.
Ctrl-C stops it: jobs still running are killed and recorded as ERROR ("the server stopped").

A console that needs a server and finds none starts this same command in the background
(`--daemon`: detached, output in ``<data dir>/server/server.log``; `console server status|stop|logs`
manage it), so jobs never depend on the console that started them.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys


def register(subparsers, add_common) -> None:
    p = subparsers.add_parser(
        "serve",
        help="run the local Jobs server (the HF Jobs API on 127.0.0.1) for every console here",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    add_common(p)
    p.add_argument("--port", type=int, default=None, metavar="N",
                   help="port on 127.0.0.1 (default: server.port from the config; 0 = any free)")
    p.add_argument("--daemon", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(handler=run)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(0)


def run(args: argparse.Namespace) -> int:
    from console import backend
    from console.commands._common import CommandError, load_config
    from console.server import LocalServer, ServerBusyError, ServerOptions

    cfg = load_config(args)
    port = cfg.server.port if args.port is None else args.port
    if not 0 <= port <= 65535:
        raise CommandError(f"--port {port}: expected 0 to 65535")
    running = backend.find_running_server()
    if running is not None:
        raise CommandError(f"a local Jobs server already runs at {running[0]}")

    options = ServerOptions(
        namespace=cfg.namespace,
        port=port,
        max_running_jobs=cfg.server.max_running_jobs,
        python_mode=cfg.server.python,
    )
    if args.daemon and port and not _port_free(port):
        print(f"port {port} is taken: listening on a free one instead", flush=True)
        options.port = 0  # a daemon started by a console: any free port will do
    server = LocalServer(options)

    from console.server.host import sandbox

    isolation = sandbox.detect()

    def ready(url: str) -> None:
        backend.write_server_info(url, daemon=args.daemon, sandbox=isolation.describe())
        started = "started in the background" if args.daemon else "listening"
        print(f"Jobs server {started} on {url}", flush=True)
        print(f"  pid {os.getpid()}; `console server stop` stops it", flush=True)
        if isolation.available:
            print(f"  {isolation.describe()}", flush=True)
        else:
            print(f"WARNING: {isolation.describe()}. A job can then read this server's state and other",
                  "jobs' files, and processes it detaches can outlive it (see RELIABILITY.md).",
                  file=sys.stderr, flush=True)
        print(f"  namespace {cfg.namespace}; bearer token in {token_place()}", flush=True)
        print(f"  hf CLI: {hf_cli_line(url)}", flush=True)
        if not args.daemon:
            print("Ctrl-C stops it (running jobs are killed).", flush=True)

    # uvicorn re-raises the signal that stopped it once it has shut down; make SIGTERM an exit
    # that unwinds (so jobs are stopped and server.json removed) instead of a hard kill.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        server.serve_forever(on_ready=ready)
    except SystemExit:
        pass
    except KeyboardInterrupt:
        pass
    except ServerBusyError as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    finally:
        if server.port is not None:
            backend.forget_server_info(server.url)
    print("Jobs server stopped.", file=sys.stderr)
    return 0


def token_place() -> str:
    """Where the server's bearer token is: the environment variable that set it, or its file."""
    from console.server import paths as server_paths

    if os.environ.get(server_paths.TOKEN_ENV):
        return f"${server_paths.TOKEN_ENV}"
    return str(server_paths.token_path())


def hf_cli_line(url: str) -> str:
    """The official CLI against the server at `url`: what to paste into a shell."""
    place = token_place()
    token = place if place.startswith("$") else f"$(cat {place})"
    return f"HF_ENDPOINT={url} HF_TOKEN={token} hf jobs ps -a"


def _port_free(port: int) -> bool:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
