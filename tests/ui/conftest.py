"""Fixtures for the TUI tests: a real embedded Jobs server (real subprocess jobs) per test."""

from __future__ import annotations

import asyncio
import html
import json
import re
import sys
import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from rich.cells import cell_len

from console.backend import connect
from console.config import Config, ServerSettings


@pytest.fixture
def cfg() -> Config:
    return Config(namespace="oncall", plan="pro", server=ServerSettings(max_running_jobs=4))


@pytest.fixture
def backend(cfg):
    b = connect(cfg)
    try:
        yield b
    finally:
        b.close()


def console_labels(tenant: str = "acme", kind: str = "sft", **extra: str) -> dict[str, str]:
    labels = {
        "app": "console",
        "tenant": tenant,
        "env": "dev",
        "kind": kind,
        "model_b": "1",
        "examples": "100",
        "epochs": "1",
        "unsloth": "0",
        "run": f"{tenant}-test",
    }
    labels.update(extra)
    return labels


def run_python(
    backend,
    code: str,
    *,
    tenant: str = "acme",
    ssh: bool = False,
    flavor: str = "t4-small",
    timeout: int = 120,
):
    """A cheap job: `python -c CODE` with console labels."""
    return backend.api.run_job(
        image="python:3.12",
        command=[sys.executable, "-u", "-c", code],
        flavor=flavor,
        labels=console_labels(tenant),
        timeout=timeout,
        ssh=ssh,
        namespace=backend.namespace,
    )


def schedule_python(backend, code: str = "print(1)", *, tenant: str = "acme", cron: str = "0 3 * * 1"):
    """A cheap scheduled job: `python -c CODE` on `cron`, with console labels."""
    return backend.api.create_scheduled_job(
        image="python:3.12",
        command=[sys.executable, "-c", code],
        schedule=cron,
        labels=console_labels(tenant),
        flavor="t4-small",
        namespace=backend.namespace,
    )


def raw_job(backend, job_id: str) -> dict:
    """The job's JSON as the server sends it (JobInfo drops timeoutSeconds)."""
    token = backend.api.token
    req = urllib.request.Request(
        f"{backend.url}/api/jobs/{backend.namespace}/{job_id}",
        headers={"authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


async def wait_for(
    pilot, condition: Callable[[], bool], timeout: float = 20.0, what: str = "condition"
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def refreshes(pilot, n: int = 2, timeout: float = 30.0) -> None:
    """Let `n` more of the app's refresh passes land: for a check that something stays as it is
    while the app goes on reading (an event to wait for, not a length of time)."""
    refresher = pilot.app.refresher
    start = refresher.refresh_count
    await wait_for(pilot, lambda: refresher.refresh_count >= start + n, timeout, what=f"{n} more refreshes")


async def wait_thread(func, *args, **kwargs):
    return await asyncio.to_thread(func, *args, **kwargs)


def shown(app) -> list:
    """The notifications the app raised, oldest first (`textual.notifications.Notification`:
    message, title, severity), kept by ``tests/conftest.py``."""
    return list(vars(app).get("notifications_shown", ()))


def notes(app) -> list[str]:
    """The messages of the notifications the app raised, as text."""
    return [n.message for n in shown(app)]


_SVG_TEXT = re.compile(r'<text [^>]*?x="([0-9.]+)"[^>]*?clip-path="url\(#[^)]*-line-(\d+)\)">([^<]*)</text>')


def screen_rows(app) -> list[str]:
    """The terminal's rows as a person sees them: the app's screenshot (`App.export_screenshot`,
    modal dialogs over what is below) read back as text, one string a row, trailing blanks cut."""
    svg = app.export_screenshot()
    width, height = app.size
    char_width = 20 * 0.61  # the screenshot's cell: Rich's SVG export, a 20px font at 0.61 aspect
    cells: list[list[tuple[int, str]]] = [[] for _ in range(height)]
    for x, line, text in _SVG_TEXT.findall(svg):
        if int(line) < height:
            cells[int(line)].append((round(float(x) / char_width), html.unescape(text).replace("\xa0", " ")))
    rows = []
    for parts in cells:
        row, at = "", 0
        for column, text in sorted(parts):
            row += " " * max(0, column - at) + text
            at = max(at, column) + cell_len(text)
        rows.append(row.rstrip())
    return rows


def screen_text(app) -> str:
    """The terminal's contents as a person sees them (see :func:`screen_rows`), rows joined."""
    return "\n".join(screen_rows(app))


async def mounted_screen(pilot, screen_type: type, what: str = "the dialog"):
    """The app's screen once it is a `screen_type` with every widget mounted, returned.

    A dialog is on the screen stack before its fields are: Textual mounts a screen's widgets a
    level at a time (a container's children after the container, a Select's overlay after the
    Select), and the screen's own Mount comes after all of them. Reading or typing into a field
    as soon as some other widget of the dialog exists races that mounting."""
    app = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen, screen_type) and app.screen.is_mounted, what=what)
    return app.screen


async def opened_box(pilot, root, selector: str):
    """The input box a key opened (built on first use, as the jobs filter and the log search are):
    waits until it is mounted and has the focus, and returns it."""
    await wait_for(pilot, lambda: bool(root.query(selector)) and root.query_one(selector).has_focus,
                   what=f"{selector} open, with the focus")
    return root.query_one(selector)


async def type_into(pilot, widget, text: str) -> None:
    """Clear an input and type `text` into it key by key, as a person would."""
    widget.value = ""
    widget.focus()
    await pilot.pause()
    for ch in text:
        await pilot.press(ch if ch != " " else "space")
    await pilot.pause()


FROZEN_NOW = datetime(2026, 12, 2, 10, 0, 0, tzinfo=UTC)
