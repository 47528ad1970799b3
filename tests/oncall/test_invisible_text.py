"""Invisible characters in a job's output are shown, not hidden: a zero-width space, joiner, word
joiner or byte-order mark printed by a real job is a visible U+FFFD in the TUI's log pane and in the
incident bundle, as a bidi control is, so "acme" and "ac<ZWSP>me" never look the same."""

from __future__ import annotations

import asyncio

import pytest
from tests.oncall.conftest import run_python, wait_stage
from tests.ui.conftest import screen_text, wait_for

from console.jobs import clean_log_line
from console.oncall import write_incident
from console.trackio_metrics import LocalTrackioReader
from console.ui.app import ConsoleApp

INVISIBLE = ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff")
PRINTS = (
    "print('\\ufeffstart', flush=True)\n"
    "print('tenant ac\\u200bme done\\u2060 ok \\u200dx\\u200cy', flush=True)\n"
    "raise SystemExit(1)\n"
)


@pytest.mark.parametrize("char", INVISIBLE)
def test_each_invisible_character_is_one_visible_mark(char):
    assert clean_log_line(f"ac{char}me") == "ac\ufffdme"
    assert clean_log_line("acme ok, naïve café 日本") == "acme ok, naïve café 日本"


def _screen(app) -> str:
    return screen_text(app)


async def _wait(pilot, condition, timeout: float = 30.0, what: str = "condition") -> None:
    await wait_for(pilot, condition, timeout, what)


async def test_a_real_jobs_invisible_characters_are_visible_in_the_log_pane_and_the_bundle(backend, cfg):
    job = run_python(backend, PRINTS, tenant="acme")
    assert await asyncio.to_thread(wait_stage, backend, job.id) == "ERROR"

    path = await asyncio.to_thread(write_incident, backend.api, job.id, namespace=backend.namespace,
                                   reader=LocalTrackioReader(backend.trackio_dir), project=cfg.trackio.project)
    bundle = path.read_text(encoding="utf-8")
    assert "tenant ac\ufffdme done\ufffd ok \ufffdx\ufffdy" in bundle and "\ufffdstart" in bundle
    assert not any(char in bundle for char in INVISIBLE)

    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False, watch_seconds=None)
    async with app.run_test(size=(120, 30)) as pilot:
        await _wait(pilot, lambda: job.id in app.jobs_table.rows_by_id, what="the row")
        app.jobs_table.select_job(job.id)
        await _wait(pilot, lambda: "tenant ac\ufffdme done\ufffd" in _screen(app), what="the marked line")
        shown = _screen(app)
        assert "\ufffdstart" in shown and "\ufffdx\ufffdy" in shown
        assert not any(char in shown for char in INVISIBLE)
