"""The on-call features in the TUI, driven with Pilot against the embedded server's real jobs: the
watcher's notifications (and a webhook on loopback), once across a restart; the stall and timeout
marks in the jobs table; `i` writes an incident bundle; `b` cancels by filter after the count."""

from __future__ import annotations

import asyncio
import sys
import time

from tests.oncall.conftest import (
    FAILING,
    SLEEPER,
    job_stage,
    labels,
    run_python,
    slow_trackio_code,
    wait_stage,
)
from tests.ui.conftest import mounted_screen, shown, wait_for
from textual.widgets import Input

from console.ui.app import ConsoleApp
from console.ui.screens.bulk import BulkScreen


def _notes(app) -> list[str]:
    return [f"{n.title}: {n.message}" for n in shown(app)]


async def _wait(pilot, condition, timeout: float = 30.0, what: str = "condition") -> None:
    await wait_for(pilot, condition, timeout, what)


def _app(cfg, backend, **kw) -> ConsoleApp:
    kw.setdefault("watch_seconds", 1.0)
    kw.setdefault("first_watch_seconds", 0.3)
    return ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False, **kw)


async def test_the_tui_notifies_a_failure_and_a_stall_once_marks_the_stall_and_posts_the_webhook(
    backend, cfg, listener
):
    cfg.notify.webhook_url = f"{listener.url}/hook"
    cfg.notify.bell = True
    failed = run_python(backend, FAILING, tenant="acme")
    assert await asyncio.to_thread(wait_stage, backend, failed.id) == "ERROR"

    app = _app(cfg, backend)
    async with app.run_test(size=(80, 24)) as pilot:
        await _wait(pilot, lambda: any(f"job {failed.id} failed" in n for n in _notes(app)),
                    what="the failure's notification")
        [note] = [n for n in shown(app) if failed.id in n.title]
        assert note.severity == "error" and "ZeroDivisionError" in note.message
        # a job that stalls once the app runs (stalled from its own last line: the first pass
        # that sees it may already say so)
        sleeper = run_python(backend, SLEEPER, tenant="globex", timeout=600)
        await _wait(pilot, lambda: any("stalled" in n and sleeper.id in n for n in _notes(app)),
                    what="the stall's notification")
        # the row says it, in the Stage column (it fits at 80 columns)
        await _wait(pilot, lambda: (m := app.jobs_table.oncall_mark(sleeper.id)) is not None
                    and m.stage.startswith("STALL"), what="the stall mark")
        cells = [str(c) for c in app.jobs_table.get_row(sleeper.id)]
        assert cells[3].startswith("STALL ") and "billed since" in cells[-1]
        assert "1 STALLED" in str(app.query_one("#status-line").render())
        assert "\a" in "".join(app.oncall.written)  # the bell went to the terminal
        await _wait(pilot, lambda: any(b.get("key") == f"job_error:{failed.id}" for b in listener.bodies("/hook")),
                    what="the webhook")
        passes = app.oncall.passes

        await _wait(pilot, lambda: app.oncall.passes >= passes + 2, what="two more passes")
        assert sum(f"job {failed.id} failed" in n for n in _notes(app)) == 1

    # a restart on the same data dir repeats nothing
    again = _app(cfg, backend)
    async with again.run_test(size=(80, 24)) as pilot:
        await _wait(pilot, lambda: again.oncall.passes >= 2, what="two passes after the restart")
        assert not [n for n in _notes(again) if failed.id in n or "stalled" in n]
        assert again.jobs_table.oncall_mark(sleeper.id) is not None  # the mark comes back though
    assert [b["key"] for b in listener.bodies("/hook")].count(f"job_error:{failed.id}") == 1
    backend.api.cancel_job(job_id=sleeper.id, namespace=backend.namespace)


async def test_a_job_too_slow_for_its_timeout_is_marked_and_i_writes_its_incident_bundle(backend, cfg):
    cfg.notify.osc52 = True
    run = "acme-slow"
    job = run_python(backend, slow_trackio_code(cfg.trackio.project, run), run=run)
    app = _app(cfg, backend)
    async with app.run_test(size=(80, 24)) as pilot:
        await _wait(pilot, lambda: (m := app.jobs_table.oncall_mark(job.id)) is not None
                    and m.stage.startswith("TMOUT+"), timeout=60, what="the timeout mark")
        mark = app.jobs_table.oncall_mark(job.id)
        assert "WILL TIME OUT" in mark.line and len(mark.stage) <= 10
        assert "1 TMOUT" in str(app.query_one("#status-line").render())

        app.jobs_table.select_job(job.id)
        await pilot.press("i")
        await _wait(pilot, lambda: any("Incident bundle" in n and "written to" in n for n in _notes(app)),
                    what="where the bundle went")
        [note] = [n for n in _notes(app) if "written to" in n]
        path = note.split("written to ", 1)[1].strip()
        text = open(path, encoding="utf-8").read()
        assert job.id in text and "Loss diverged" in text
        assert any("\x1b]52;c;" in w for w in app.oncall.written)  # the path, on the clipboard
    backend.api.cancel_job(job_id=job.id, namespace=backend.namespace)


async def test_bulk_cancel_by_filter_previews_then_needs_the_count(backend, cfg, fleet):
    app = _app(cfg, backend, watch_seconds=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await _wait(pilot, lambda: all(j in app.jobs_table.rows_by_id for j in fleet["acme"]))
        await pilot.press("b")
        screen = await mounted_screen(pilot, BulkScreen, what="the bulk dialog")
        screen.query_one("#bulk-action", Input).value = "cancel"
        screen.query_one("#bulk-filter", Input).value = "tenant:acme"
        await pilot.press("enter")
        await _wait(pilot, lambda: screen.plan is not None, what="the preview")
        listing = str(screen.query_one("#bulk-list").render())
        assert all(j[-8:] in listing for j in fleet["acme"]) and fleet["globex"][-8:] not in listing
        preview = str(screen.query_one("#bulk-preview").render())
        assert "cancel 2 jobs" in preview and "type 2" in preview
        count = screen.query_one("#bulk-count", Input)
        count.value = "3"  # the wrong count: refused, nothing sent
        await pilot.press("enter")
        preview = screen.query_one("#bulk-preview")
        await _wait(pilot, lambda: "confirmation must be the count 2" in str(preview.render()))
        assert not any("confirmation must be" in n for n in _notes(app))  # said in the dialog, not over it
        assert app.screen is screen and job_stage(backend, fleet["acme"][0]) == "RUNNING"
        count.value = "2"
        await pilot.press("enter")
        await _wait(pilot, lambda: any("Bulk cancel: 2 of 2 done" in n for n in _notes(app)),
                    what="the outcome")
        for job_id in fleet["acme"]:
            assert await asyncio.to_thread(wait_stage, backend, job_id, ("CANCELED",)) == "CANCELED"
        assert job_stage(backend, fleet["globex"]) == "RUNNING"


async def test_bulk_is_refused_read_only(backend, cfg):
    cfg.read_only = True
    app = _app(cfg, backend, watch_seconds=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("b")
        await _wait(pilot, lambda: any("Read-only: bulk action refused" in n for n in _notes(app)))
        assert not isinstance(app.screen, BulkScreen)


def _until(check, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met")
        time.sleep(0.1)


async def test_the_reschedule_dialog_shows_the_monthly_cost_before_and_after(backend, cfg):
    from console.ui.screens.reschedule import RescheduleScreen

    backend.api.create_scheduled_job(
        image="python:3.12", command=[sys.executable, "-c", "print('run')"], schedule="0 3 * * 1",
        flavor="l4x1", timeout=600, namespace=backend.namespace,
        labels=labels("acme", model_b="1p8", examples="1000", epochs="1"),
    )
    app = _app(cfg, backend, watch_seconds=None, start_tab="fleet")
    async with app.run_test(size=(80, 24)) as pilot:
        await _wait(pilot, lambda: "acme" in app.fleet_table.rows_by_tenant)
        await pilot.press("r")
        await mounted_screen(pilot, RescheduleScreen, what="the cron dialog")
        cost = lambda: str(app.screen.query_one("#cron-cost").render())  # noqa: E731
        assert cost().startswith("cost: $0.75/month -> $0.75/month (+$0.0")
        app.screen.query_one("#cron-input", Input).value = "0 3 * * *"  # weekly -> daily
        await _wait(pilot, lambda: "$5.26/month" in cost(), what="the daily cost")
        assert "$0.75/month -> $5.26/month (+$4.51)" in cost()
        app.screen.query_one("#cron-input", Input).value = "every tuesday"
        await _wait(pilot, lambda: cost() == "", what="no estimate")
        assert cost() == ""  # no estimate for a cron that is not one (the preview says why)


async def test_a_failing_pass_is_said_once_and_a_slow_webhook_never_holds_up_the_screen(backend, cfg, listener):
    from console.ui.screens.help import HelpScreen

    app = _app(cfg, backend)
    calls = []

    def broken(write):
        calls.append(1)
        raise RuntimeError("oncall.sqlite is unreadable")

    app.oncall._make_watcher = broken
    async with app.run_test(size=(80, 24)) as pilot:
        await _wait(pilot, lambda: app.oncall.passes >= 3, what="three failed passes")
        failed = [n for n in _notes(app) if "On-call watch failed" in n]
        assert len(failed) == 1 and "oncall.sqlite is unreadable" in failed[0]
        assert len(calls) >= 3  # tried again at each tick

    # a webhook that takes 30 s per POST: the passes and the keys go on meanwhile
    listener.delay = 30.0
    cfg.notify.webhook_url = f"{listener.url}/slow"
    failed_job = run_python(backend, "raise SystemExit(3)", tenant="acme")
    assert await asyncio.to_thread(wait_stage, backend, failed_job.id) == "ERROR"
    app = _app(cfg, backend)
    async with app.run_test(size=(80, 24)) as pilot:
        await _wait(pilot, lambda: any(failed_job.id in n for n in _notes(app)), what="the notification")
        await pilot.press("question_mark")
        await _wait(pilot, lambda: isinstance(app.screen, HelpScreen) and app.screen.is_mounted, what="the help screen")
        assert not listener.posts  # the key was served while the POST was still on its way
        passes = app.oncall.passes
        await _wait(pilot, lambda: app.oncall.passes > passes, timeout=30, what="the next pass")


async def test_bulk_suspend_by_filter_suspends_exactly_the_previewed_schedules(backend, cfg):
    def schedule(tenant: str):
        return backend.api.create_scheduled_job(
            image="python:3.12", command=[sys.executable, "-c", "print('run')"], schedule="0 3 * * 1",
            flavor="l4x1", timeout=600, namespace=backend.namespace,
            labels=labels(tenant, model_b="1p8", examples="1000", epochs="1"),
        )

    acme, globex = schedule("acme"), schedule("globex")
    app = _app(cfg, backend, watch_seconds=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await _wait(pilot, lambda: app.refresher.refresh_count > 0)
        await pilot.press("b")
        screen = await mounted_screen(pilot, BulkScreen, what="the bulk dialog")
        screen.query_one("#bulk-action", Input).value = "suspend"
        screen.query_one("#bulk-filter", Input).value = "tenant:acme"
        screen.query_one("#bulk-filter", Input).focus()
        await pilot.press("enter")
        await _wait(pilot, lambda: screen.plan is not None, what="the preview")
        assert [i.target_id for i in screen.plan.items] == [acme.id]
        assert "suspend 1 schedule: saves $0.75/month" in str(screen.query_one("#bulk-preview").render())
        screen.query_one("#bulk-count", Input).value = "1"
        await pilot.press("enter")
        await _wait(pilot, lambda: any("Bulk suspend: 1 of 1 done" in n for n in _notes(app)))

    def suspended(sj) -> bool:
        return bool(backend.api.inspect_scheduled_job(scheduled_job_id=sj.id, namespace=backend.namespace).suspend)

    assert suspended(acme) and not suspended(globex)


async def test_a_night_of_failures_is_one_toast_and_every_webhook(backend, cfg, listener):
    """Six jobs failed while nobody watched: the first pass, at start-up, shows one toast that
    counts them, instead of toasts stacked over the screen as it opens; the webhook gets all six."""
    cfg.notify.webhook_url = f"{listener.url}/hook"
    failed = [run_python(backend, FAILING, tenant=f"t{i}") for i in range(6)]
    for job in failed:
        assert await asyncio.to_thread(wait_stage, backend, job.id) == "ERROR"
    app = _app(cfg, backend)
    async with app.run_test(size=(80, 24)) as pilot:
        await _wait(pilot, lambda: app.oncall.passes >= 1, what="the first pass")
        notes = _notes(app)
        assert notes == ["6 on-call events: 6 failed (the jobs tab lists them; `console watch` prints each)"]
        summary = next(n for n in shown(app) if n.title == "6 on-call events")
        assert summary.severity == "error"
        await _wait(pilot, lambda: {b.get("key") for b in listener.bodies("/hook")}
                    >= {f"job_error:{j.id}" for j in failed}, what="every webhook")
