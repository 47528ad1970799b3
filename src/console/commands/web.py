"""`console web`: the TUI in a browser, for an engineer away from a terminal.

The same app, served with textual-serve (the `web` extra): each browser tab that opens the URL runs
its own `console` process, drawn in the page. It listens on 127.0.0.1 unless `--host` says
otherwise (a warning then: anyone who can reach that address and has the URL drives the console).
Every start makes a new random token and prints the URL with it once; a request without it
(the page, its scripts, the app's websocket) is answered 403. The served app is read-only (every
action that changes anything is refused, as with `console --read-only`) unless `--write` is given.
Ctrl-C stops it, and with it the apps it serves.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

TOKEN_PARAM = "token"
"""The URL's query parameter that carries the token."""
INSTALL_HINT = "pip install 'textual-serve>=1.1,<2'"
"""What installs textual-serve, as the console's `web` extra pins it (pyproject.toml)."""


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
    return shlex.join(argv)


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


def _make_server(server_cls: type, web: Any, command: str, *, host: str, port: int, token: str) -> Any:
    """textual-serve's server with the token checked on every request."""
    import hmac
    from urllib.parse import urlsplit

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

        def serve_on(self, sock: Any) -> None:
            import asyncio
            import signal

            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, self.request_exit)
            web.run_app(self._make_app(), sock=sock, handle_signals=False, loop=loop, print=None,
                        access_log=None, shutdown_timeout=5)

    return TokenServer(command, host=host, port=port, title="console")
