"""`console web`: the TUI served to a browser against a real embedded Jobs server with a running job.

The server is the real `console web` process (textual-serve, each session its own `console` app
process). The browser is headless Chromium driven over the DevTools protocol: the page's websocket
stream (what the page's terminal draws) is read back as a screen, and a screenshot is taken. Without
Chromium the browser test skips; the same session is also driven with a plain websocket client.
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import io
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.ui.conftest import console_labels
from tests.ui.terminal import Screen

from console.backend import Backend, connect
from console.cli import main
from console.config import Config, save
from console.server import LocalServer, ServerOptions

aiohttp = pytest.importorskip("aiohttp", reason="console web needs the web extra (textual-serve)")
pytest.importorskip("textual_serve", reason="console web needs the web extra (textual-serve)")

NAMESPACE = "webops"
START_TIMEOUT = 120.0
"""How long the served app may take to draw its jobs tab (a new `console` process, on a busy machine)."""


@pytest.fixture
def server(monkeypatch) -> Iterator[LocalServer]:
    srv = LocalServer(ServerOptions(namespace=NAMESPACE, max_running_jobs=4))
    srv.start()
    monkeypatch.setenv("CONSOLE_SERVER_TOKEN", srv.token)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def cfg(server) -> Config:
    cfg = Config(namespace=NAMESPACE, plan="pro", endpoint=server.url)
    save(cfg, os.environ["CONSOLE_CONFIG"])
    return cfg


@pytest.fixture
def backend(cfg) -> Iterator[Backend]:
    b = connect(cfg)
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def job(backend):
    """A job that runs for the length of the test: the row the jobs tab shows."""
    return backend.api.run_job(
        image="python:3.12",
        command=[sys.executable, "-u", "-c", "import time; print('warming up', flush=True); time.sleep(300)"],
        flavor="t4-small",
        labels=console_labels("acme"),
        timeout=600,
        namespace=backend.namespace,
    )


class WebConsole:
    """A running `console web --port 0`: the URL it printed, the apps it started, and its stop."""

    def __init__(self, *flags: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "console", "web", "--port", "0", *flags],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.first_line = self._first_line(60.0)
        match = re.search(r"(http://\S+)\?token=(\S+)", self.first_line)
        assert match, f"no URL in {self.first_line!r}"
        self.base, self.token = match.group(1), match.group(2)
        self.url = f"{self.base}?token={self.token}"

    def _first_line(self, timeout: float) -> str:
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            self.stop()
            raise AssertionError(f"console web printed no URL in {timeout}s")
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"console web exited {self.proc.wait()}: {self.proc.stderr.read()}")
        return line

    def children(self) -> list[int]:
        """The processes `console web` started (the apps it serves, each under a shell or not)."""
        out = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.proc.pid:
                out.append(int(stat.parent.name))
        return out

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@pytest.fixture
def web(job) -> Iterator[WebConsole]:
    served = WebConsole()
    try:
        yield served
    finally:
        served.stop()


def _jar():
    return aiohttp.CookieJar(unsafe=True)  # the page's cookie is for 127.0.0.1, an IP address


async def _status(http, url: str, **kw) -> int:
    async with http.get(url, **kw) as response:
        await response.read()
        return response.status


class WsScreen:
    """What a browser's terminal shows of one websocket session: the app's bytes fed to a screen."""

    def __init__(self, ws, cols: int, rows: int) -> None:
        self.ws = ws
        self.screen = Screen(cols, rows)
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for msg in self.ws:
            if msg.type == aiohttp.WSMsgType.BINARY:
                self.screen.feed(self._decoder.decode(msg.data))

    async def wait_for(self, check: Callable[[str], bool], what: str, timeout: float = START_TIMEOUT) -> str:
        deadline = time.monotonic() + timeout
        while not check(text := self.screen.text()):
            if time.monotonic() > deadline or self._reader.done():
                raise AssertionError(f"{what}: not on the screen within {timeout}s:\n{text}")
            await asyncio.sleep(0.1)
        return text

    async def press(self, key: str) -> None:
        await self.ws.send_str(json.dumps(["stdin", key]))


async def test_web_refuses_a_request_without_the_token_and_serves_the_read_only_app(web, job, backend):
    assert "read-only" in web.first_line
    ws_url = "ws" + web.base[len("http"):] + "ws"
    async with aiohttp.ClientSession() as stranger:
        # the page, its scripts and the app's websocket: 403 without the token, or with a wrong one
        assert await _status(stranger, web.base) == 403
        assert await _status(stranger, web.base + "?token=" + "x" * len(web.token)) == 403
        assert await _status(stranger, web.base + "static/js/textual.js") == 403
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await stranger.ws_connect(ws_url + "?width=100&height=30")
        assert refused.value.status == 403
    assert web.children() == []  # no app was started for any of them

    async with aiohttp.ClientSession(cookie_jar=_jar()) as http:
        async with http.get(web.url) as page:
            assert page.status == 200
            body = await page.text()
        assert "data-session-websocket-url" in body and web.token not in body  # the token is a cookie now
        assert await _status(http, web.base + "static/js/textual.js") == 200
        # another site's page cannot drive it with the browser's cookie
        with pytest.raises(aiohttp.WSServerHandshakeError) as cross_site:
            await http.ws_connect(ws_url + "?width=100&height=30", headers={"Origin": "http://example.com"})
        assert cross_site.value.status == 403

        async with http.ws_connect(ws_url + "?width=120&height=32") as ws:
            view = WsScreen(ws, 120, 32)
            text = await view.wait_for(lambda s: job.id[:8] in s and "RUNNING" in s, "the jobs tab with the job")
            assert "2 Jobs" in text and "READ-ONLY" in text and "plan floor" not in text
            apps = web.children()
            assert len(apps) == 1
            await view.press("c")  # cancel the selected job: refused, nothing asked
            await view.wait_for(lambda s: "Read-only: cancel refused" in s, "the read-only refusal")
            await view.press("3")
            await view.wait_for(lambda s: "plan floor" in s, "the costs tab")
    stage = backend.api.inspect_job(job_id=job.id, namespace=backend.namespace).status.stage
    assert stage == "RUNNING"
    # the browser went away: its app quits; stopping `console web` leaves nothing running
    assert web.stop() == 0
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() for pid in apps) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(Path(f"/proc/{pid}").exists() for pid in apps)


def _descendants(pid: int) -> set[int]:
    """Every process under `pid` (children, their children, ...), from /proc."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        for child, ppid in parents.items():
            if ppid == parent and child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended (its parent, gone, will never reap it)


async def _open_session(web: WebConsole, http, job) -> tuple[object, set[int]]:
    ws = await http.ws_connect("ws" + web.base[len("http"):] + "ws?width=120&height=32")
    await WsScreen(ws, 120, 32).wait_for(lambda s: job.id[:8] in s, "the jobs tab with the job")
    return ws, _descendants(web.proc.pid)


async def test_stopping_web_with_sessions_open_ends_every_app_even_a_stuck_one(job):
    served = WebConsole()
    try:
        async with aiohttp.ClientSession(cookie_jar=_jar()) as http:
            assert await _status(http, served.url) == 200
            _, first = await _open_session(served, http, job)
            _, both = await _open_session(served, http, job)
            second = both - first
            assert first and second
            # each served app keeps the `web` record of the on-call events it showed
            assert all(b"CONSOLE_ONCALL_CONSUMER=web\0" in Path(f"/proc/{pid}/environ").read_bytes()
                       for pid in both)
            for pid in second:  # an app that answers nothing: neither the quit message nor SIGTERM
                os.kill(pid, signal.SIGSTOP)
            served.proc.send_signal(signal.SIGTERM)  # Ctrl-C / systemd stop, with both tabs open
            assert served.proc.wait(60) == 0
            deadline = time.monotonic() + 30
            while any(_alive(pid) for pid in both) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert [pid for pid in both if _alive(pid)] == []
    finally:
        for pid in _descendants(served.proc.pid) if served.proc.poll() is None else ():
            os.kill(pid, signal.SIGKILL)
        served.stop()


async def test_an_app_ends_when_web_is_killed_outright(job):
    served = WebConsole()
    apps: set[int] = set()
    try:
        async with aiohttp.ClientSession(cookie_jar=_jar()) as http:
            assert await _status(http, served.url) == 200
            _, apps = await _open_session(served, http, job)
            served.proc.kill()  # SIGKILL: no shutdown runs in `console web`
            served.proc.wait(30)
            deadline = time.monotonic() + 30
            while any(_alive(pid) for pid in apps) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert [pid for pid in apps if _alive(pid)] == []
    finally:
        for pid in apps:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


async def test_web_write_serves_an_app_that_can_change_things(job):
    served = WebConsole("--write")
    try:
        assert "read-write" in served.first_line
        async with aiohttp.ClientSession(cookie_jar=_jar()) as http:
            assert await _status(http, served.url) == 200
            ws_url = "ws" + served.base[len("http"):] + "ws"
            async with http.ws_connect(ws_url + "?width=120&height=32") as ws:
                view = WsScreen(ws, 120, 32)
                text = await view.wait_for(lambda s: job.id[:8] in s, "the jobs tab with the job")
                assert "READ-ONLY" not in text
                await view.press("c")
                await view.wait_for(lambda s: "Cancel" in s and job.id[:8] in s and "?" in s,
                                    "the cancel confirmation")
    finally:
        served.stop()


def test_web_refusals_are_one_line_and_start_nothing(cfg, capsys, tmp_path, monkeypatch):
    assert main(["web", "--port", "70000"]) == 2
    assert capsys.readouterr().err.strip() == "console: --port 70000: expected 0 to 65535"
    assert main(["--read-only", "web", "--write"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("console: --write: the console is read-only here")
    assert main(["web", "--host", "no-such-host.invalid", "--port", "0"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("console: --host no-such-host.invalid: not an address to listen on")

    # read-only on the local backend with no server running: said once, here, not in each browser tab
    save(Config(namespace=NAMESPACE), os.environ["CONSOLE_CONFIG"])
    assert main(["web", "--port", "0"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("console: no local Jobs server is running")
    assert not (Path(os.environ["CONSOLE_DATA_DIR"]) / "server.json").exists()


def test_web_without_textual_serve_names_the_install_command(cfg):
    code = ("import sys; sys.modules['textual_serve'] = None\n"
            "from console.cli import main; sys.exit(main(['web', '--port', '0']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip() == ("console: console web needs textual-serve (the web extra): "
                                   "pip install 'textual-serve>=1.1,<2'")


def test_web_warns_about_an_address_that_is_not_loopback():
    from console.commands.web import is_loopback, url_for

    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.0.2.7")
    assert url_for("0.0.0.0", 8000, "t") == "http://127.0.0.1:8000/?token=t"
    assert url_for("::1", 8000, "t") == "http://[::1]:8000/?token=t"


# -- headless Chromium ---------------------------------------------------------------------------

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)

HOOK = """
(() => {
  const Native = window.WebSocket;
  const seen = window.__consoleWeb = {text: "", cols: 0, rows: 0, open: false};
  window.WebSocket = class extends Native {
    constructor(url, protocols) {
      super(url, protocols);
      const params = new URL(url).searchParams;
      seen.cols = +params.get("width"); seen.rows = +params.get("height");
      this.decoder = new TextDecoder();
      this.addEventListener("open", () => { seen.open = true; });
      this.addEventListener("message", (e) => {
        if (typeof e.data !== "string") seen.text += this.decoder.decode(e.data, {stream: true});
      });
    }
    send(data) {
      try {
        const m = JSON.parse(data);
        if (m[0] === "resize") { seen.cols = m[1].width; seen.rows = m[1].height; seen.text = ""; }
      } catch (e) {}
      super.send(data);
    }
  };
})();
"""
"""Injected before the page's own script: keeps what the page's terminal is sent, and its size."""
INTRO_BACKGROUND = (12, 24, 31)
"""textual-serve's page behind the app (#0c181f), seen until the app's first bytes are drawn."""


class DevTools:
    """A page of headless Chromium, driven over the DevTools protocol."""

    def __init__(self, ws) -> None:
        self.ws = ws
        self._next = 0
        self._pending: dict[int, asyncio.Future] = {}
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for msg in self.ws:
            reply = json.loads(msg.data)
            future = self._pending.pop(reply.get("id"), None)
            if future is not None and not future.done():
                future.set_result(reply)

    async def call(self, method: str, **params):
        self._next += 1
        future = asyncio.get_running_loop().create_future()
        self._pending[self._next] = future
        await self.ws.send_json({"id": self._next, "method": method, "params": params})
        reply = await asyncio.wait_for(future, 60)
        assert "error" not in reply, f"{method}: {reply['error']}"
        return reply["result"]

    async def evaluate(self, expression: str):
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    async def screen(self) -> str:
        seen = await self.evaluate("window.__consoleWeb")
        if not seen or not seen["cols"]:
            return ""
        screen = Screen(seen["cols"], seen["rows"])
        screen.feed(seen["text"])
        return screen.text()

    async def wait_for(self, check: Callable[[str], bool], what: str, timeout: float = START_TIMEOUT) -> str:
        deadline = time.monotonic() + timeout
        while not check(text := await self.screen()):
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not in the browser within {timeout}s:\n{text}")
            await asyncio.sleep(0.25)
        return text

    async def key(self, char: str) -> None:
        code = f"Digit{char}" if char.isdigit() else f"Key{char.upper()}"
        common = {"key": char, "code": code, "windowsVirtualKeyCode": ord(char.upper())}
        await self.call("Input.dispatchKeyEvent", type="keyDown", text=char, **common)
        await self.call("Input.dispatchKeyEvent", type="keyUp", **common)

    async def screenshot(self, path: Path):
        from PIL import Image

        data = base64.b64decode((await self.call("Page.captureScreenshot", format="png"))["data"])
        path.write_bytes(data)
        return Image.open(io.BytesIO(data)).convert("RGB")


@pytest.fixture
def chromium(tmp_path) -> Iterator[str]:
    """A headless Chromium on 127.0.0.1; yields the DevTools websocket URL of its blank page."""
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (apt-get install chromium): the browser test needs it")
    log = tmp_path / "chromium.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-dev-shm-usage", "--no-first-run",
             "--disable-extensions", "--disable-background-networking", "--enable-unsafe-swiftshader",
             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
             f"--user-data-dir={tmp_path / 'chromium-profile'}", "--window-size=1280,800", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=err,
        )
    try:
        deadline = time.monotonic() + 60
        while not (found := re.search(r"DevTools listening on (ws://\S+)", log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, f"Chromium did not start:\n{log.read_text()}"
            time.sleep(0.1)
        yield found.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def test_chromium_shows_the_jobs_tab_and_a_key_changes_the_tab(chromium, web, job, tmp_path):
    port = re.match(r"ws://[^:/]+:(\d+)/", chromium).group(1)
    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{port}/json/list") as listing:
            pages = [t for t in await listing.json() if t["type"] == "page"]
        async with http.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0) as ws:
            page = DevTools(ws)
            await page.call("Page.enable")
            await page.call("Page.addScriptToEvaluateOnNewDocument", source=HOOK)

            # without the token: the browser is refused, and no app starts
            await page.call("Page.navigate", url=web.base)
            deadline = time.monotonic() + 30
            while "needs the token" not in (await page.evaluate("document.body && document.body.innerText") or ""):
                assert time.monotonic() < deadline, "the 403 page did not load"
                await asyncio.sleep(0.2)
            assert web.children() == []

            await page.call("Page.navigate", url=web.url)
            text = await page.wait_for(lambda s: job.id[:8] in s and "RUNNING" in s, "the jobs tab with the job")
            assert "2 Jobs" in text and "READ-ONLY" in text and "plan floor" not in text
            assert await page.evaluate("window.__consoleWeb.open") is True
            assert len(web.children()) == 1  # the page's websocket session started the app
            await asyncio.sleep(1.0)  # the terminal paints the last bytes it was sent
            assert await page.evaluate("document.body.classList.contains('-first-byte')")  # the intro is gone
            shot = await page.screenshot(tmp_path / "jobs-tab.png")
            colours = shot.getcolors(maxcolors=1 << 20)
            assert len(colours) > 100, "the screenshot is blank"  # text, a table, the status line
            intro = sum(n for n, rgb in colours if rgb == INTRO_BACKGROUND)
            assert intro < 0.1 * shot.width * shot.height, "the screenshot shows textual-serve's intro, not the app"
            width = await page.evaluate("document.querySelector('.xterm-screen').getBoundingClientRect().width")
            assert width > 0.9 * shot.width  # the terminal fills the page

            await page.evaluate("document.querySelector('.xterm-helper-textarea').focus()")
            await page.key("3")
            await page.wait_for(lambda s: "plan floor" in s, "the costs tab after the key 3")
            await page.screenshot(tmp_path / "costs-tab.png")
