"""`e` on a running job of the embedded server: its exposed URLs, then one more port exposed after
a confirmation naming the $0.01/h it adds; the URL answers over real HTTP. Read-only refuses."""

from __future__ import annotations

import socket
import sys
import time

import httpx
from tests.ui.conftest import console_labels, mounted_screen, notes, type_into, wait_for, wait_thread
from textual.widgets import Input

from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.prompt import PromptScreen


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serving(backend, port: int):
    return backend.api.run_job(
        image="python:3.12", command=[sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        flavor="t4-small", labels=console_labels("acme"), timeout=120, namespace=backend.namespace,
    )


def _answers(url: str, tries: int = 100) -> bool:
    """The job's HTTP server answers at the URL within `tries` tenths of a second."""
    for _ in range(tries):
        try:
            if httpx.get(url, timeout=2).headers.get("server", "").startswith("SimpleHTTP"):
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    return False


async def _running(pilot, app, job_id: str) -> None:
    await wait_for(pilot, lambda: (row := app.jobs_table.rows_by_id.get(job_id)) is not None
                   and row.stage == "RUNNING", what="the running job")
    app.jobs_table.select_job(job_id)


async def test_e_shows_the_urls_and_exposes_a_port_after_naming_its_price(backend, cfg):
    port = _free_port()
    job = _serving(backend, port)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await _running(pilot, app, job.id)
        await pilot.press("e")
        await mounted_screen(pilot, PromptScreen, what="the port prompt")
        assert "no port exposed" in app.screen.title_text
        field = app.screen.query_one(Input)
        await type_into(pilot, field, "99999")
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("port: expected a whole number from 1 to 65535" in n for n in notes(app)))
        assert not [w for w in app.workers if w.group == "actions"]

        await pilot.press("e")
        await mounted_screen(pilot, PromptScreen, what="the port prompt")
        await type_into(pilot, app.screen.query_one(Input), str(port))
        await pilot.press("enter")
        await mounted_screen(pilot, ConfirmScreen, what="the confirmation")
        shown = " ".join(str(s.render()) for s in app.screen.query("Static"))
        assert f"port {port}" in shown and job.id in shown and "$0.01/h" in shown
        await pilot.press("y")
        await wait_for(pilot, lambda: any(f"Exposed port {port} of {job.id}: http://127.0.0.1:" in n
                                          for n in notes(app)), what="the exposed URL")
        info = backend.api.inspect_job(job_id=job.id, namespace=backend.namespace)
        assert info.expose == [port]
        [url] = info.status.expose_urls
        assert await wait_thread(_answers, url)

        # the URLs it serves are shown the next time (once the refresh has read them)
        await wait_for(pilot, lambda: (i := app.refresher.job_info(job.id)) is not None
                       and i.status.expose_urls, what="the refreshed job")
        await pilot.press("e")
        await mounted_screen(pilot, PromptScreen, what="the port prompt")
        assert url in app.screen.title_text
        await pilot.press("escape")
    backend.api.cancel_job(job_id=job.id, namespace=backend.namespace)


async def test_e_is_refused_read_only_and_exposes_nothing(backend, cfg):
    cfg.read_only = True
    port = _free_port()
    job = _serving(backend, port)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await _running(pilot, app, job.id)
        await pilot.press("e")
        await wait_for(pilot, lambda: any("Read-only: expose a port refused" in n for n in notes(app)))
        assert any(f"Job {job.id}: no port exposed" in n for n in notes(app))
        assert app.screen is app.screen_stack[0]
    assert backend.api.inspect_job(job_id=job.id, namespace=backend.namespace).expose is None
    backend.api.cancel_job(job_id=job.id, namespace=backend.namespace)
