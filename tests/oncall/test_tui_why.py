"""Why it failed, at a glance: real jobs on the embedded server that fail three ways (an exception,
a `VERDICT: FAIL`, their timeout); at 80x24 the jobs table's Stage cell says why in a word or two,
the Message cell has the whole reason, and the fleet row of the failed tenant says it too."""

from __future__ import annotations

import asyncio

from tests.oncall.conftest import FAILING, SLEEPER, run_python, wait_stage
from tests.ui.conftest import screen_text, wait_for

from console.ui.app import ConsoleApp

VERDICT = (
    "print('progress step=3/100 loss=2.5', flush=True)\n"
    "print('VERDICT: FAIL missing_files: no module named jobkit', flush=True)\n"
    "raise SystemExit(2)\n"
)


def _screen(app) -> str:
    return screen_text(app)


async def _wait(pilot, condition, timeout: float = 30.0, what: str = "condition") -> None:
    await wait_for(pilot, condition, timeout, what)


async def test_the_jobs_table_and_the_fleet_say_why_each_job_failed_at_80_columns(backend, cfg):
    crashed = run_python(backend, FAILING, tenant="acme")
    verdict = run_python(backend, VERDICT, tenant="globex")
    slow = run_python(backend, SLEEPER, tenant="wayne", timeout=2)
    for job in (crashed, verdict, slow):
        assert await asyncio.to_thread(wait_stage, backend, job.id) == "ERROR"

    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False, watch_seconds=None)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.jobs_table
        await _wait(pilot, lambda: {crashed.id, verdict.id, slow.id} <= set(table.reasons), what="the reasons")
        stage = {job_id: str(table.get_row(job_id)[3]) for job_id in (crashed.id, verdict.id, slow.id)}
        assert stage == {crashed.id: "ZeroDivis…", verdict.id: "missing_f…", slow.id: "TIMEOUT"}
        message = {job_id: str(table.get_row(job_id)[-1]) for job_id in (crashed.id, verdict.id, slow.id)}
        assert message[crashed.id].startswith("ZeroDivisionError: division by zero")
        assert message[verdict.id].startswith("FAIL missing_files: no module named jobkit")
        assert message[slow.id].startswith("timeout 2s: killed, billed")
        await _wait(pilot, lambda: all(tag in _screen(app) for tag in ("ZeroDivis…", "missing_f…", "TIMEOUT")),
                    what="the reasons on screen")
        shown = _screen(app)
        for tag in ("ZeroDivis…", "missing_f…", "TIMEOUT"):
            assert tag in shown  # legible at 80 columns
        # the selected failed job's log header says it whole (the Message column is off screen)
        table.select_job(verdict.id)
        await _wait(pilot, lambda: "ERROR: FAIL missing_files: no module" in _screen(app),
                    what="the reason in the log header")

        await pilot.press("1")
        fleet = app.fleet_table
        await _wait(pilot, lambda: fleet.row_count >= 3, what="the fleet rows")
        await _wait(pilot, lambda: str(fleet.get_row("acme")[1]) == "ZeroDivis…", what="the fleet's reason")
        assert str(fleet.get_row("globex")[1]) == "missing_f…"
        assert str(fleet.get_row("wayne")[1]) == "TIMEOUT"
        await _wait(pilot, lambda: "TIMEOUT" in _screen(app), what="the reason on screen")


def test_a_reason_in_a_word_or_two_fits_the_stage_cell():
    from console.oncall import FailureReason

    cases = {
        ("timeout 1h30m: killed, billed", "timeout"): "TIMEOUT",
        ("FAIL oom: CUDA out of memory at step 3", "verdict"): "FAIL oom",
        ("FAIL unsloth_unavailable", "verdict"): "unsloth_u…",
        ("ZeroDivisionError: division by zero", "exception"): "ZeroDivis…",
        ("RuntimeError: CUDA error: out of memory", "exception"): "OOM",
        ("ValueError: bad shape", "exception"): "ValueError",
        ("exit 137", "exit"): "exit 137",
        ("SIGKILL", "exit"): "SIGKILL",
        ("error", "stage"): "ERROR",
    }
    for (text, source), tag in cases.items():
        got = FailureReason(text, source).tag()
        assert got == tag and len(got) <= 10, (text, got)
