"""Details a person meets at 80x24, driven with Textual's pilot against the real embedded server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading

import pytest
from tests.jobwait import wait_stage
from tests.ui.conftest import (
    mounted_screen,
    notes,
    opened_box,
    run_python,
    schedule_python,
    screen_rows,
    shown,
    type_into,
    wait_for,
    wait_thread,
)
from textual.widgets import Input
from textual.widgets._footer import FooterKey

from console import config as config_mod
from console import paths
from console.backend import connect
from console.oncall import plan_bulk
from console.server import LocalServer, ServerOptions
from console.ui import keys
from console.ui.app import ConsoleApp
from console.ui.screens.bulk import BulkScreen
from console.ui.screens.reschedule import RescheduleScreen
from console.ui.screens.submit import SubmitScreen
from console.ui.widgets.costs import LedgerPane

NS = "ops"


def console(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True,
                          env=dict(os.environ), timeout=90)


@pytest.fixture
def served(_isolated_dirs):
    """An embedded server and a config file that points at it (the TUI and the CLI share both)."""
    with LocalServer(ServerOptions(namespace=NS, port=0, max_running_jobs=2)) as srv:
        path = _isolated_dirs / "config" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'namespace = "{NS}"\nbackend = "local"\nendpoint = "{srv.url}"\n'
                        'plan = "pro"\nseats = 1\nmonthly_budget_usd = 5.0\n')
        cfg = config_mod.load(path)
        backend = connect(cfg)
        try:
            yield cfg, backend
        finally:
            backend.close()


async def test_the_budget_toast_at_start_says_the_projection_console_ledger_says(served):
    """The schedules' firings are part of the projection the toast names, as in `console ledger`."""
    cfg, backend = served
    schedule_python(backend, cron="0 * * * *")  # hourly: many firings left this month
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False, watch_seconds=1.0,
                     first_watch_seconds=0.3)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: any("projected $" in n for n in notes(app)), timeout=60,
                       what="the budget toast")
        await wait_for(pilot, lambda: app.oncall.passes >= 2, timeout=60, what="two on-call passes")
        toasted = [m.group(1) for n in notes(app) for m in re.finditer(r"projected \$([\d,.]+)", n)]
        # the costs tab is mounted a moment after the fresh frame (later on a loaded machine)
        await wait_for(pilot, lambda: app.query(LedgerPane), timeout=30, what="the costs pane")
        pane = app.query_one(LedgerPane)
        await wait_for(pilot, lambda: pane.summary is not None and pane.summary.schedules, timeout=30,
                       what="the costs pane's projection with the schedules")
        shown = f"{pane.summary.projection_usd:,.2f}"
    r = console("ledger", "--json", "--summary")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["scheduled_remaining_usd"] > 0
    assert toasted == [f"{summary['projection_usd']:,.2f}"]  # one toast, the ledger's figure
    assert shown == toasted[0]


def _submit_form(app) -> SubmitScreen:
    assert isinstance(app.screen, SubmitScreen)
    return app.screen


async def _open_submit(pilot, app) -> SubmitScreen:
    await wait_for(pilot, lambda: app.refresher.refresh_count > 0, what="the first refresh")
    await pilot.press("s")
    await mounted_screen(pilot, SubmitScreen, what="the submit form")
    form = app.screen
    form.query_one("#f-tenant", Input).value = "acme"
    form.query_one("#f-dataset", Input).value = str(paths.training_dir() / "data" / "acme.jsonl")
    await pilot.pause()  # the values' Changed messages handled
    return form


async def test_erasing_the_timeout_is_not_undone_while_the_field_is_edited(backend, cfg):
    """Backspacing the padded timeout away and typing another leaves what was typed (the form
    does not refill the padded value the moment the field is empty: `99999h19m`)."""
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        form = await _open_submit(pilot, app)
        box = form.query_one("#f-timeout", Input)
        padded = box.value
        assert padded
        box.focus()
        box.cursor_position = len(box.value)
        await pilot.pause()
        for _ in range(len(padded) + 2):
            await pilot.press("backspace")
        await pilot.pause()  # what the keys set off handled
        assert box.value == ""  # erased stays erased while the field has the focus
        assert f"timeout {padded}" in str(form.query_one("#submit-estimate").render())  # empty: padded
        for ch in "3h":
            await pilot.press(ch)
        await wait_for(pilot, lambda: box.value == "3h", what="3h typed")
        assert box.value == "3h"
        assert "timeout 3h" in str(form.query_one("#submit-estimate").render())
        # emptied and left: the padded value comes back, and is kept in step again
        for _ in range(2):
            await pilot.press("backspace")
        await pilot.press("tab")
        await wait_for(pilot, lambda: box.value == padded, what="the padded timeout back")
        assert box.value == padded


async def test_a_refused_submit_says_why_in_the_form_only(backend, cfg):
    """The form's own error line says why; no toast repeats it over the form."""
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        form = await _open_submit(pilot, app)
        await type_into(pilot, form.query_one("#f-epochs", Input), "many")
        error = str(form.query_one("#submit-error").render())
        assert error == "epochs: 'many' is not a number"
        before = len(shown(app))
        await pilot.press("ctrl+s")
        await pilot.pause()  # the refusal handled
        assert isinstance(app.screen, SubmitScreen)  # refused: the form stays, with its reason
        assert str(form.query_one("#submit-error").render()) == error
        assert len(shown(app)) == before, notes(app)
    assert list(backend.api.list_jobs(namespace=backend.namespace)) == []


async def test_a_refused_cron_says_why_in_the_dialog_only(backend, cfg):
    sj = schedule_python(backend)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, start_tab="fleet", stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: "acme" in app.fleet_table.rows_by_tenant, what="the fleet row")
        await pilot.press("r")
        await mounted_screen(pilot, RescheduleScreen, what="the cron dialog")
        await type_into(pilot, app.screen.query_one("#cron-input", Input), "0 3 * * 9")
        before = len(shown(app))
        preview = app.screen.query_one("#cron-preview")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "is not a valid cron expression" in str(preview.render()), what="the refusal")
        assert isinstance(app.screen, RescheduleScreen)
        assert "is not a valid cron expression" in str(app.screen.query_one("#cron-preview").render())
        assert len(shown(app)) == before, notes(app)
    info = backend.api.inspect_scheduled_job(scheduled_job_id=sj.id, namespace=backend.namespace)
    assert info.schedule == "0 3 * * 1"


def _bottom_line(app) -> str:
    """The screen's last row as a person sees it."""
    return screen_rows(app)[-1]


@pytest.mark.parametrize("where", ["jobs", "log", "fleet"])
async def test_the_footer_at_80_columns_shows_the_job_and_schedule_keys_whole(backend, cfg, where):
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False,
                     start_tab="fleet" if where == "fleet" else "jobs")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.refresher.refresh_count > 0, what="the first refresh")
        if where == "log":
            app.log_pane.log_widget.focus()
        expected = "? Help q Quit s Submit c Cancel x Shell R Rerun r Resched p Pause t Trigger"
        await wait_for(pilot, lambda: _bottom_line(app).rstrip() == expected, timeout=10,
                       what=f"the footer to read {expected!r}, not {_bottom_line(app)!r}")
        # each entry is the key table's, whole (nothing after them: no letter of a cut-off key)
        entries = [(k.key_display, k.description) for k in app.screen.query(FooterKey)]
        table = {(keys.key_name(b.key), b.description) for bindings, _ in keys.SECTIONS for b in bindings}
        assert set(entries) <= table
        assert all(k.region.right <= 80 for k in app.screen.query(FooterKey))
        await pilot.resize_terminal(160, 24)  # room for everything, and the palette's key
        await wait_for(pilot, lambda: "^p palette" in _bottom_line(app), timeout=10, what="the palette's key")
        assert "1 Fleet" in _bottom_line(app)


def test_the_footer_leaves_out_whole_keys_in_table_order():
    entries = [("tab-fleet", "1", "Fleet"), ("quit", "q", "Quit"), ("help", "?", "Help"), ("trigger", "t", "Trigger")]
    assert keys.footer_fit(entries, 42) == ([2, 1, 3, 0], True)  # everything, and the palette's 11
    assert keys.footer_fit(entries, 41) == ([2, 1, 3, 0], False)
    assert keys.footer_fit(entries, 23) == ([2, 1, 3], False)  # "? Help q Quit t Trigger"
    assert keys.footer_fit(entries, 22) == ([2, 1], False)  # no half of "t Trigger"


async def test_read_only_refusals_read_as_whole_sentences(backend, cfg):
    """Each key that would change something says what it refused, its object included."""
    cfg.read_only = True
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.refresher.refresh_count > 0, what="the first refresh")
        for key in ("s", "c", "x", "R", "r", "p", "t", "b"):
            await pilot.press(key)
        await wait_for(pilot, lambda: len([n for n in notes(app) if n.startswith("Read-only:")]) == 8,
                       what="eight refusals")
        said = [n.removeprefix("Read-only: ").split(" refused (")[0] for n in notes(app) if n.startswith("Read-only:")]
        assert said == ["submit", "cancel", "open a shell", "rerun", "reschedule", "suspend/resume", "trigger",
                        "bulk action"]
        assert app.screen is app.screen_stack[0]


async def test_an_unknown_stage_in_the_filter_is_named_with_the_stages_there_are(backend, cfg):
    run_python(backend, "print('done')")
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.jobs_table.row_count == 1, what="the job's row")
        await pilot.press("slash")
        await type_into(pilot, await opened_box(pilot, app, "#jobs-filter"), "stage:runing")
        state = app.query_one("#jobs-filter-state")
        expected = " stage 'runing' is none of: scheduling running completed canceled error deleted"
        await wait_for(pilot, lambda: str(state.render()) == expected, timeout=5,
                       what=f"{expected!r}, not {str(state.render())!r}")
        assert state.display and len(expected) <= 80  # whole at 80 columns
        await type_into(pilot, app.query_one("#jobs-filter", Input), "s:run,comp")  # prefixes are stages
        await wait_for(pilot, lambda: "none of" not in str(state.render()), timeout=5, what="no complaint")


def test_a_bulk_filter_with_an_unknown_stage_is_refused_naming_it(served):
    _cfg, backend = served
    run_python(backend, "import time; time.sleep(60)")
    r = console("bulk", "cancel", "stage:runing")
    assert r.returncode == 2
    assert r.stderr.strip() == (
        "console: bulk: stage 'runing' is none of: scheduling running completed canceled error deleted "
        "scheduled suspended")
    assert [j.status.stage for j in backend.api.list_jobs(namespace=NS)] != ["CANCELED"]


def _passing_run(adapter: str) -> str:
    return (f"print('progress step=1/1 loss=0.5', flush=True)\n"
            f"print('saved adapter={adapter}', flush=True)\n"
            "print('VERDICT: PASS last_loss=0.5', flush=True)\n")


def _screen_rows(app) -> list[str]:
    return screen_rows(app)


async def test_the_fleet_keeps_the_tenant_in_view_and_names_each_adapter(backend, cfg, tmp_path):
    local = tmp_path / "data" / "artifacts" / "acme-6b1080146a56382a98489b34"
    runs = [run_python(backend, _passing_run(str(local)), tenant="acme"),
            run_python(backend, _passing_run("hf://ops/globex-lora"), tenant="globex")]
    for job in runs:
        assert await wait_thread(wait_stage, backend, job.id) == "COMPLETED"
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False, start_tab="fleet",
                     watch_seconds=None)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.fleet_table
        await wait_for(pilot, lambda: all(table.rows_by_tenant.get(t) and table.rows_by_tenant[t].adapter
                                          for t in ("acme", "globex")), timeout=60, what="both outcomes")
        await wait_for(pilot, lambda: str(table.get_cell("acme", "adapter")) != "-", what="the Adapter cells")
        # the adapter's name (the run's folder, the Hub repo id), not the tail of a path
        assert str(table.get_cell("acme", "adapter")) == "acme-6b1080146a56382a98…"
        assert str(table.get_cell("globex", "adapter")) == "ops/globex-lora"
        table.focus()
        table.scroll_to(x=table.max_scroll_x, animate=False)  # the last columns: Adapter, ...
        await wait_for(pilot, lambda: table.scroll_x > 0, what="the table scrolled")
        assert table.scroll_x > 0
        rows = [r for r in _screen_rows(app) if "globex-lora" in r]
        assert rows, _screen_rows(app)
        # the Tenant column stays at the left of the scrolled row
        assert re.match(r"^\s*[!~= ]?globex\b", rows[0]), rows[0]


LONG_LINES = "for i in range(300): print(f'line {i:03d} ' + 'x' * 120, flush=True)"


def _top_line(pane) -> str:
    """The kept line whose text is at the top of the log view."""
    log = pane.log_widget
    row = str(log.lines[int(log.scroll_y)]) if log.lines else ""
    return row.split()[1] if row.startswith("line ") else row


async def _long_log_app(backend, cfg) -> tuple[object, ConsoleApp]:
    """A finished job of 300 long lines, and an app to show it."""
    job = run_python(backend, LONG_LINES)
    assert await wait_thread(wait_stage, backend, job.id) == "COMPLETED"
    return job, ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False, watch_seconds=None)


async def _whole_log(pilot, job):
    """The log pane once it holds the job's whole log, following its end: (pane, log widget)."""
    pane = pilot.app.log_pane
    await wait_for(pilot, lambda: pane.job_id == job.id and pane.ended and pane.received >= 300, timeout=30,
                   what="the whole log")
    log = pane.log_widget
    log.focus()
    await wait_for(pilot, lambda: pane.follow and log.scroll_y == log.max_scroll_y, what="the log at its end")
    assert pane.follow and log.scroll_y == log.max_scroll_y
    return pane, log


async def test_w_keeps_the_log_where_it_was_following_or_reading(backend, cfg):
    job, app = await _long_log_app(backend, cfg)
    async with app.run_test(size=(80, 24)) as pilot:
        pane, log = await _whole_log(pilot, job)
        await pilot.press("w")  # following: still at the end, still following
        await wait_for(pilot, lambda: pane.wrap and log.max_scroll_y > 0 and log.scroll_y == log.max_scroll_y,
                       what="wrapped, at the end")
        assert pane.wrap and pane.follow and log.max_scroll_y > 0 and log.scroll_y == log.max_scroll_y
        await pilot.press("w")
        await wait_for(pilot, lambda: not pane.wrap and log.scroll_y == log.max_scroll_y, what="unwrapped, at the end")
        assert not pane.wrap and pane.follow and log.scroll_y == log.max_scroll_y
        for _ in range(10):  # read back up the log: follow pauses
            await pilot.press("pageup")
        await wait_for(pilot, lambda: not pane.follow, what="follow paused")
        assert not pane.follow
        reading = _top_line(pane)
        assert reading.isdigit() and 0 < int(reading) < 290
        await pilot.press("w")  # wrapped: the line read stays at the top
        await wait_for(pilot, lambda: pane.wrap and _top_line(pane) == reading, what="wrapped at the line read")
        await pilot.pause()  # and the layout that follows handled
        assert not pane.follow and _top_line(pane) == reading
        await pilot.press("w")
        await wait_for(pilot, lambda: not pane.wrap and _top_line(pane) == reading, what="unwrapped at the line read")
        await pilot.pause()
        assert not pane.follow and _top_line(pane) == reading


async def test_the_mouse_wheel_up_pauses_following_and_scrolls(backend, cfg):
    """Reading back with the wheel is reading back: the log stops jumping to its end."""
    from textual.events import MouseScrollUp

    job, app = await _long_log_app(backend, cfg)
    async with app.run_test(size=(80, 24)) as pilot:
        pane, log = await _whole_log(pilot, job)
        for _ in range(3):  # what the terminal sends for the wheel over the log
            log.post_message(MouseScrollUp(log, 2, 2, 0, -1, 0, False, False, False))
        await wait_for(pilot, lambda: not pane.follow, what="follow paused")
        await wait_for(pilot, lambda: log.scroll_y < log.max_scroll_y, what="the log scrolled up")
        assert log.scroll_y < log.max_scroll_y


async def test_the_bulk_dialog_lists_five_jobs_whole_and_moves_the_focus_only_if_it_stayed(backend, cfg):
    jobs = [run_python(backend, "import time; time.sleep(120)", tenant="acme") for _ in range(5)]
    gate = threading.Event()

    def planner(action: str, text: str):  # the real plan, read once the test lets it
        gate.wait(30)
        return plan_bulk(backend.api, action, text, namespace=backend.namespace)

    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False, watch_seconds=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.refresher.refresh_count > 0, what="the first refresh")
        screen = BulkScreen(planner, filter_text="tenant:acme")
        app.push_screen(screen)
        assert await mounted_screen(pilot, BulkScreen, what="the dialog") is screen
        await pilot.press("enter")  # preview, asked from the filter
        await wait_for(pilot, lambda: screen.planning, what="the preview to start")
        await pilot.press("shift+tab")  # the user moves on while it is read
        moved_to = app.focused
        assert moved_to is screen.query_one("#bulk-action", Input)
        gate.set()
        await wait_for(pilot, lambda: screen.plan is not None and not screen.planning, what="the preview")
        await pilot.pause()  # the preview's follow-ups handled
        assert app.focused is moved_to  # not pulled to the count
        await pilot.press("enter")  # preview again, from here, and stay: the count is next
        await wait_for(pilot, lambda: app.focused is screen.query_one("#bulk-count", Input), what="the count")
        rows = _screen_rows(app)
        for job in jobs:  # each job on a row of its own, with its money, all five in view
            assert len([r for r in rows if job.id[-8:] in r]) == 1, rows
            [row] = [r for r in rows if job.id[-8:] in r]
            assert "saves" in row
        count = screen.query_one("#bulk-count", Input)
        before = len(shown(app))
        await type_into(pilot, count, "4")
        await pilot.press("enter")
        preview = screen.query_one("#bulk-preview")
        await wait_for(pilot, lambda: "must be the count 5" in str(preview.render()), what="the refusal")
        assert app.screen is screen and len(shown(app)) == before
        assert "the confirmation must be the count 5, got '4'" in str(screen.query_one("#bulk-preview").render())
        await pilot.press("escape")
    for job in jobs:
        backend.api.cancel_job(job_id=job.id, namespace=backend.namespace)


# -- the answers at 80x24: the highlighted row said whole under its table ------------------------


def _said(app) -> str:
    """The screen's text with its line breaks and runs of blanks as single spaces (a wrapped line
    read as a sentence)."""
    return " ".join(" ".join(screen_rows(app)).split())


REASON = "bad_data: 49 of 51 rows have no assistant turn (fix the nightly export)"


async def test_at_80x24_the_selected_jobs_failure_reason_and_cost_at_the_timeout_read_whole(backend, cfg):
    from tests.oncall.conftest import run_python as run_labelled
    from tests.oncall.conftest import slow_trackio_code

    failed = run_python(backend, f"print('VERDICT: FAIL {REASON}', flush=True)\nraise SystemExit(1)",
                        tenant="wayne")
    assert await wait_thread(wait_stage, backend, failed.id) == "ERROR"
    slow = run_labelled(backend, slow_trackio_code(cfg.trackio.project, "acme-slow"), run="acme-slow")
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False, watch_seconds=1.0,
                     first_watch_seconds=0.3)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            table = app.jobs_table
            await wait_for(pilot, lambda: failed.id in table.reasons, timeout=60, what="the failure reason")
            table.select_job(failed.id)
            await wait_for(pilot, lambda: REASON in _said(app), timeout=10,
                           what=f"the whole reason on screen, not {screen_rows(app)}")
            assert table.scroll_x == 0  # read without scrolling sideways
            await wait_for(pilot, lambda: (m := table.oncall_mark(slow.id)) is not None and " at timeout" in m.line,
                           timeout=60, what="the forecast")
            table.select_job(slow.id)
            await pilot.pause()
            at_timeout = re.search(r"\$[\d.]+ at timeout", table.oncall_mark(slow.id).line).group(0)
            await wait_for(pilot, lambda: re.search(r"\$[\d.]+ at timeout", _said(app)) is not None, timeout=10,
                           what=f"the cost at the timeout ({at_timeout}) on screen, not {screen_rows(app)}")
            assert table.scroll_x == 0
    finally:
        backend.api.cancel_job(job_id=slow.id, namespace=backend.namespace)


def _hub(backend):
    from huggingface_hub import HfApi

    return HfApi(endpoint=backend.api.endpoint, token=backend.api.token)


def _land(api, repo: str, run: str, job_id: str, loss: float, tmp_path) -> str:
    """A passing run landed on main with its manifest, as training/jobkit/run.py commits it."""
    manifest = tmp_path / f"{run}.json"
    manifest.write_text(json.dumps({"run_name": run, "verdict": "PASS", "job_id": job_id, "first_loss": 6.0,
                                    "last_loss": loss}))
    return api.upload_file(path_or_fileobj=str(manifest), path_in_repo="manifest.json", repo_id=repo,
                           commit_message=f"{run}: PASS run={run} steps=10").oid


def _tag_live(api, repo: str, commit: str) -> None:
    if "live" in {t.name for t in api.list_repo_refs(repo).tags}:
        api.delete_tag(repo, tag="live")
    api.create_tag(repo, tag="live", revision=commit)


GLOBEX_REPO = "oncall/adapter-globex"
RUNS = ("globex-sft-20261201-030000", "globex-sft-20261202-030000", "globex-sft-20261203-030000")
JOB_IDS = ("6b1650fb2c800a3073379a40", "6b16a2118344966b5d23764d", "6b17f3aa0d1e2f3a4b5c6d7e")


async def test_at_80x24_a_tenants_live_version_and_its_versions_read_whole_and_the_selection_stays(
        backend, cfg, tmp_path):
    from console.ui.screens.confirm import ConfirmScreen
    from console.ui.screens.versions import VersionsScreen

    cfg.defaults.hub_model_id = "oncall/adapter-{tenant}"
    api = _hub(backend)
    api.create_repo(GLOBEX_REPO)
    first = _land(api, GLOBEX_REPO, RUNS[0], JOB_IDS[0], 1.5, tmp_path)
    _tag_live(api, GLOBEX_REPO, first)
    second = _land(api, GLOBEX_REPO, RUNS[1], JOB_IDS[1], 1.2, tmp_path)
    schedule_python(backend, tenant="globex")
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False, start_tab="fleet", watch_seconds=None)
    async with app.run_test(size=(80, 24)) as pilot:
        fleet = app.fleet_table
        await wait_for(pilot, lambda: "globex" in fleet.live and fleet.selected_row is not None, timeout=60,
                       what="globex's live version")
        # the fleet: the live version (the table's last column) on the line under the table
        await wait_for(pilot, lambda: f"globex: live {first[:8]} PASS" in _said(app), timeout=10,
                       what=f"the live version on screen, not {screen_rows(app)}")
        assert fleet.scroll_x == 0
        # the versions view: when each version was made and by which job, in the rows at 80 columns
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, VersionsScreen) and app.screen.is_mounted,
                       what="the versions view")
        view = app.screen
        await wait_for(pilot, lambda: view.versions is not None and len(view.versions.versions) == 2, timeout=30,
                       what="both versions")

        def made_rows() -> bool:
            rows = screen_rows(app)
            for run, job_id in zip(RUNS[:2], JOB_IDS[:2], strict=True):
                version = view.versions.find(run)
                made = version.time[5:16].replace("T", " ")  # `12-07 06:40`
                # the row: commit, verdict, made, job (then the run's name as far as 80 columns go)
                if not any(re.search(rf"{version.short}\s+PASS\s+{made}\s+{job_id[-8:]}\s", r) for r in rows):
                    return False
            return True

        await wait_for(pilot, made_rows, what=f"each version's commit, verdict, time and job, not {screen_rows(app)}")
        # the highlighted version whole under the table: its run name and its job, not cut
        await pilot.press("down")  # the older one, live
        await wait_for(pilot, lambda: view.selected() is not None and view.selected().run == RUNS[0])
        await wait_for(pilot, lambda: f"{first[:8]} {RUNS[0]}: PASS, live" in _said(app) and JOB_IDS[0] in _said(app),
                       what=f"the highlighted version whole, not {screen_rows(app)}")
        await pilot.press("up")  # the newer one, not live
        await wait_for(pilot, lambda: view.selected() is not None and view.selected().commit == second)
        # a new version lands above while the view is open: the highlighted one stays highlighted
        _land(api, GLOBEX_REPO, RUNS[2], JOB_IDS[2], 1.0, tmp_path)
        app.live.read_now("globex", GLOBEX_REPO)
        await wait_for(pilot, lambda: len(view.versions.versions) == 3, timeout=30, what="the third version")
        await pilot.pause()  # the view redrawn with it
        assert view.selected().commit == second
        # and promote names it: the tenant, its run and the job that made it
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.is_mounted,
                       what="the confirmation")
        asked = " ".join([app.screen.title_text, *app.screen.details])
        assert f"tenant globex: {RUNS[1]}, made by job {JOB_IDS[1]}" in asked
        assert f"to {second[:8]} {RUNS[1]} PASS" in asked
        await pilot.press("n")
