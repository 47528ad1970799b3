"""`console web`: the TUI in a browser, for an engineer away from a terminal.

The same app, served with textual-serve (the `web` extra): each browser tab that opens the URL runs
its own `console` process, drawn in the page. It listens on 127.0.0.1 unless `--host` says
otherwise (a warning then: anyone who can reach that address and has the URL drives the console).
Every start makes a new random token and prints the URL with it once; a request without it
(the page, its scripts, the app's websocket) is answered 403. The served app is read-only (every
action that changes anything is refused, as with `console --read-only`) unless `--write` is given.
Ctrl-C (or a SIGTERM) stops it, and with it the apps it serves: each is asked to quit, then, if
still there after `QUIT_GRACE_S`, sent SIGTERM and then SIGKILL, with every process it started
(each app runs in a process group of its own). On Linux an app also gets SIGTERM when `console
web` itself dies without a word (SIGKILL): nothing it served outlives it.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

TOKEN_PARAM = "token"
"""The URL's query parameter that carries the token."""
INSTALL_HINT = "pip install 'textual-serve>=1.1,<2'"
"""What installs textual-serve, as the console's `web` extra pins it (pyproject.toml)."""
QUIT_GRACE_S = 3.0
"""When `console web` stops, how long its apps have to quit on their own before SIGTERM."""
TERM_GRACE_S = 2.0
"""And how long after SIGTERM before SIGKILL."""


def register(subparsers, add_common) -> None:
    p = subparsers.add_parser(
        "web",
        help="the TUI in a browser: loopback only, a token in the URL, read-only unless --write",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    add_common(p)
    p.add_argument("--host", default="127.0.0.1", metavar="ADDR",
                   help="address to listen on (default 127.0.0.1; another one is warned about)")
    p.add_argument("--port", type=int, default=8000, metavar="N", help="port (default 8000; 0 = any free)")
    p.add_argument("--write", action="store_true",
                   help="let the browser change things (submit, cancel, ...); default: read-only")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import secrets

    from console.commands._common import CommandError, load_config

    if not 0 <= args.port <= 65535:
        raise CommandError(f"--port {args.port}: expected 0 to 65535")
    if not args.host.strip():
        raise CommandError("--host: expected an address to listen on, e.g. 127.0.0.1")
    cfg = load_config(args)
    if args.write and cfg.read_only:
        raise CommandError("--write: the console is read-only here (--read-only or read_only = true in the config)")
    read_only = not args.write
    try:
        from aiohttp import web
        from textual_serve.server import Server
    except ImportError:
        raise CommandError(f"console web needs textual-serve (the web extra): {INSTALL_HINT}") from None
    _check_backend(cfg, read_only)

    import os

    from console.oncall.notify import CONSUMER_ENV

    os.environ[CONSUMER_ENV] = "web"  # the apps it serves keep their own record of what they showed
    sock = _listen(args.host, args.port)
    token = secrets.token_urlsafe(24)
    port = sock.getsockname()[1]
    command = app_command(getattr(args, "config", None), read_only=read_only)
    server = _make_server(Server, web, command, host=args.host, port=port, token=token)
    mode = "read-only" if read_only else "read-write (--write)"
    if not is_loopback(args.host):
        print(f"console web: warning: listening on {args.host}, not loopback: anyone who can reach it "
              "and has the URL drives the console", file=sys.stderr, flush=True)
    print(f"console web: {mode} on {url_for(args.host, port, token)}  (Ctrl-C stops)", flush=True)
    server.serve_on(sock)
    return 0


def app_command(config: str | None, *, read_only: bool) -> str:
    """The shell command each browser session runs: this console's TUI, with the same config."""
    import os
    import shlex

    argv = [sys.executable, "-m", "console"]
    if config:
        argv += ["--config", os.path.abspath(os.path.expanduser(config))]
    if read_only:
        argv.append("--read-only")
    return "exec " + shlex.join(argv)  # the shell becomes the app: its signals reach the app


def url_for(host: str, port: int, token: str) -> str:
    shown = host
    if shown in ("0.0.0.0", "::", ""):  # every address: loopback reaches it too
        shown = "127.0.0.1"
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/?{TOKEN_PARAM}={token}"


def is_loopback(host: str) -> bool:
    """True when every address `host` names is a loopback one (127.0.0.0/8, ::1)."""
    import ipaddress
    import socket

    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    addresses = {info[4][0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(a.split("%", 1)[0]).is_loopback for a in addresses)


def _check_backend(cfg: Any, read_only: bool) -> None:
    """Fail here, in one line, rather than in every browser tab: read-only never starts the local
    server (none running is refused, as `console --read-only` does); --write starts it now."""
    from console.commands._common import CommandError
    from console.commands.tui import Connecting

    if read_only:
        cfg.read_only = True
        if problem := Connecting(cfg).refusal():
            raise CommandError(f"{problem}; or `console web --write`")
        return
    from console.backend import DAEMON, BackendError, connect

    try:
        connect(cfg, start=DAEMON).close()
    except BackendError as exc:
        raise CommandError(str(exc)) from None


def _listen(host: str, port: int) -> Any:
    import socket

    from console.commands._common import CommandError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise CommandError(f"--host {host}: not an address to listen on ({exc.strerror or exc})") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise CommandError(f"--port {port}: cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    return sock


def _die_with_parent() -> None:
    """In a served app's process, before it runs: SIGTERM when `console web` dies (Linux)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: the shutdown below still ends the apps
        pass


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)  # each app leads its own group (start_new_session)
    except (ProcessLookupError, PermissionError):
        pass


def _served_app_class(base: type) -> type:
    """textual-serve's `AppService`, its app started in a process group of its own (so that what
    the app starts ends with it) and kept in `live` until it has exited."""
    import asyncio

    class ServedApp(base):
        live: set[Any] = set()
        """The app processes started and not yet reaped (the asyncio `Process`es)."""

        async def _open_app_process(self, width: int = 80, height: int = 24) -> Any:
            environment = self._build_environment(width=width, height=height)
            self._process = process = await asyncio.create_subprocess_shell(
                self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=environment, start_new_session=True,
                preexec_fn=_die_with_parent,
            )
            self._stdin = process.stdin
            ServedApp.live.add(process)
            process_done = asyncio.ensure_future(process.wait())
            process_done.add_done_callback(lambda _: ServedApp.live.discard(process))
            return process

    return ServedApp


async def end_apps(live: set[Any], *, quit_s: float = QUIT_GRACE_S, term_s: float = TERM_GRACE_S) -> None:
    """Wait up to `quit_s` for the app processes in `live` to exit (each was asked to quit), then
    SIGTERM their process groups, and after `term_s` more SIGKILL them."""
    import asyncio

    async def wait(seconds: float) -> None:
        deadline = asyncio.get_running_loop().time() + seconds
        while any(p.returncode is None for p in live) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)

    await wait(quit_s)
    for sig, seconds in ((signal.SIGTERM, term_s), (signal.SIGKILL, 5.0)):
        left = [p for p in live if p.returncode is None]
        if not left:
            return
        for process in left:
            _signal_group(process.pid, sig)
        await wait(seconds)


async def end_session(service: Any) -> None:
    """A browser session is over: its app is asked to quit (textual-serve's `stop`, which waits
    for the app's output to end, for `QUIT_GRACE_S` at most), then ended (`end_apps`)."""
    import asyncio

    try:
        await asyncio.wait_for(service.stop(), QUIT_GRACE_S)
    except Exception:  # noqa: BLE001 - a timeout included: an app that does not answer is ended below
        pass
    process = service._process
    if process is not None and process.returncode is None:
        await end_apps({process}, quit_s=0.5)


def _make_server(server_cls: type, web: Any, command: str, *, host: str, port: int, token: str) -> Any:
    """textual-serve's server with the token checked on every request, whose apps end with it."""
    import asyncio
    import hmac
    from urllib.parse import urlsplit

    from textual_serve.app_service import AppService
    from textual_serve.server import to_int

    ServedApp = _served_app_class(AppService)

    cookie = f"console-web-{port}"  # cookies are not kept per port: each server its own name

    @web.middleware
    async def require_token(request: Any, handler: Any) -> Any:
        given = request.query.get(TOKEN_PARAM) or request.cookies.get(cookie) or ""
        if not hmac.compare_digest(given.encode(), token.encode()):
            return web.Response(status=403, text="console web: this URL needs the token that `console web` printed\n")
        origin = request.headers.get("Origin")
        if origin and urlsplit(origin).netloc != request.host:  # another site's page, with our cookie
            return web.Response(status=403, text="console web: a request from another site\n")
        response = await handler(request)
        if request.query.get(TOKEN_PARAM) and not response.prepared:
            # the page's scripts and its websocket carry the token as a cookie, never to another site
            response.set_cookie(cookie, token, httponly=True, samesite="Strict", path="/")
        if not response.prepared:
            response.headers["Referrer-Policy"] = "no-referrer"  # the token stays out of Referer
            response.headers["Cache-Control"] = "no-store"
        return response

    class TokenServer(server_cls):
        async def _make_app(self) -> Any:
            app = await super()._make_app()
            app.middlewares.append(require_token)
            return app

        async def handle_index(self, request: Any) -> Any:
            # The page's script and websocket URLs on the address the browser used (not 0.0.0.0).
            self.public_url = f"http://{request.host}"
            return await super().handle_index(request)

        async def on_startup(self, app: Any) -> None:  # the URL is printed once, by `run`
            return None

        async def on_shutdown(self, app: Any) -> None:
            services = list(self.sessions)
            for service in services:  # each app asked to quit, all at once
                if service._process is not None and service._process.returncode is None:
                    await service.send_meta({"type": "quit"})
            await end_apps(ServedApp.live)

        async def handle_websocket(self, request: Any) -> Any:
            # textual-serve's, with ServedApp for AppService and each session kept in `sessions`
            websocket = web.WebSocketResponse(heartbeat=15)
            width = to_int(request.query.get("width", "80"), 80)
            height = to_int(request.query.get("height", "24"), 24)
            service = None
            try:
                await websocket.prepare(request)
                service = ServedApp(self.command, write_bytes=websocket.send_bytes,
                                    write_str=websocket.send_str, close=websocket.close,
                                    download_manager=self.download_manager, debug=self.debug)
                self.sessions.add(service)
                await service.start(width, height)
                await self._process_messages(websocket, service)
            except asyncio.CancelledError:
                await websocket.close()
            except Exception as error:  # noqa: BLE001 - as textual-serve: logged, the socket closes
                import logging

                logging.getLogger("textual-serve").exception(error)
            finally:
                if service is not None:
                    self.sessions.discard(service)
                    await end_session(service)
            return websocket

        def serve_on(self, sock: Any) -> None:
            import asyncio
            import signal

            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, self.request_exit)
            try:
                web.run_app(self._make_app(), sock=sock, handle_signals=False, loop=loop, print=None,
                            access_log=None, shutdown_timeout=5)
            finally:
                for process in list(ServedApp.live):  # what the shutdown could not end
                    if process.returncode is None:
                        _signal_group(process.pid, signal.SIGKILL)

    server = TokenServer(command, host=host, port=port, title="console")
    server.sessions = set()
    return server
