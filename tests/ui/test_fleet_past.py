"""The fleet as it was (`J` on the Fleet tab, `console fleet show --at`), on the real embedded
server: a tenant whose run was RUNNING at a time and failed after reads RUNNING as of that time;
`esc` brings the present back; the headless form says the same, with the live version the
console saw then."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from tests.jobwait import wait_stage
from tests.ui.conftest import mounted_screen, notes, refreshes, run_python, type_into, wait_for, wait_thread
from textual.widgets import Input

from console.cache import JobCache, cache_path
from console.cache.past import live_as_of, record_live
from console.ui.app import ConsoleApp
from console.ui.screens.prompt import PromptScreen

RUN_THEN_FAIL = "import sys, time\ntime.sleep(3)\nprint('failing now', flush=True)\nsys.exit(3)\n"
"""A run that is RUNNING for three seconds, then fails."""


async def test_j_shows_the_fleet_as_it_was_and_esc_the_present(backend, cfg, capsys):
    done = run_python(backend, "print('done')", tenant="acme")
    assert await wait_thread(wait_stage, backend, done.id) == "COMPLETED"
    failing = run_python(backend, RUN_THEN_FAIL, tenant="beta")
    await wait_thread(wait_stage, backend, failing.id, ("RUNNING",))
    between = datetime.now(UTC)  # beta runs, acme is done
    assert await wait_thread(wait_stage, backend, failing.id) == "ERROR"
    info = backend.api.inspect_job(job_id=failing.id, namespace=backend.namespace)
    assert info.started_at <= between < info.finished_at

    cache = JobCache(cache_path(backend.kind, backend.namespace, cfg.endpoint))  # what the console kept
    record_live(cache, {"beta": ("aaaa1111 PASS", None)}, between - timedelta(seconds=5))
    record_live(cache, {"beta": ("bbbb2222 PASS", None)}, between + timedelta(seconds=1))
    cache.close()

    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False, start_tab="fleet",
                     watch_seconds=None)
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.fleet_table
        await wait_for(pilot, lambda: {"acme", "beta"} <= set(table.rows_by_tenant)
                       and table.rows_by_tenant["beta"].last_stage == "ERROR" and table.row_count == 2,
                       what="the present fleet")
        table.focus()
        await pilot.press("J")
        await mounted_screen(pilot, PromptScreen, what="the prompt")
        await type_into(pilot, app.screen.query_one(Input), between.strftime("%Y-%m-%dT%H:%M:%S.%f"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: table.past is not None and table.row_count == 2, what="the past")
        assert str(table.get_row("beta")[1]) == "RUNNING"  # it failed later
        assert str(table.get_row("acme")[1]) == "COMPLETED"
        assert str(table.get_row("beta")[12]) == "aaaa1111 PASS"  # live then, as the console saw it
        assert str(table.get_row("acme")[12]) == "not seen"
        assert not str(table.get_row("beta")[0]).startswith("!")  # not flagged failed then
        assert table.has_class("-past") and "as of" in str(table.border_title)
        assert str(app.query_one("#fleet-line").render()).startswith("as of ")
        app.refresher.refresh()  # the present's news does not overwrite the past
        await refreshes(pilot, 1)
        assert str(table.get_row("beta")[1]) == "RUNNING"

        await pilot.press("p")  # an action on the past is refused
        await wait_for(pilot, lambda: any("is the past: suspend/resume refused" in n for n in notes(app)),
                       what="the refusal")

        await pilot.press("escape")
        await wait_for(pilot, lambda: table.past is None and str(table.get_row("beta")[1]) != "RUNNING",
                       what="the present again")
        assert str(table.get_row("beta")[12]) != "aaaa1111 PASS"
        assert str(table.get_row("beta")[0]).startswith("!") and not table.has_class("-past")

        before = datetime(2000, 1, 1, tzinfo=UTC)  # before any run: no tenant had run yet
        await pilot.press("J")
        await mounted_screen(pilot, PromptScreen, what="the prompt")
        await type_into(pilot, app.screen.query_one(Input), before.isoformat())
        await pilot.press("enter")
        await wait_for(pilot, lambda: table.past == before, what="the earlier past")
        assert table.row_count == 0
        await pilot.press("J")  # an empty time: the present
        await mounted_screen(pilot, PromptScreen, what="the prompt")
        await pilot.press("enter")
        await wait_for(pilot, lambda: table.past is None and table.row_count == 2, what="the present")
        app.set_focus(None)  # J on the fleet tab wherever the focus is
        await pilot.press("J")
        await mounted_screen(pilot, PromptScreen, what="the prompt")
        await type_into(pilot, app.screen.query_one(Input), between.isoformat())
        await pilot.press("enter")
        await wait_for(pilot, lambda: table.past == between, what="the past from another pane")
        assert app.active_tab == "fleet"

    # the headless form, with the live version the console kept
    from console.cli import main
    from console.config import save

    save(cfg)
    capsys.readouterr()
    assert main(["fleet", "show", "--at", between.isoformat()]) == 0
    out = capsys.readouterr().out
    assert "The fleet as of " in out
    [beta] = [line for line in out.splitlines() if line.startswith("beta ")]
    assert " RUNNING " in beta and "LIVE aaaa1111 PASS" in beta and "failed" not in beta
    assert main(["fleet", "show", "--json", "--at", between.isoformat()]) == 0
    rows = {r["tenant"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["beta"]["last_stage"] == "RUNNING" and rows["acme"]["last_stage"] == "COMPLETED"
    assert rows["beta"]["live"] == "aaaa1111 PASS" and rows["beta"]["as_of"] == between.isoformat()
    assert main(["fleet", "show", "--json"]) == 0
    assert {r["tenant"]: r for r in json.loads(capsys.readouterr().out)}["beta"]["last_stage"] == "ERROR"
    assert main(["fleet", "show", "--at", "soon"]) == 2
    assert "--at: expected a time ago" in capsys.readouterr().err


def test_the_cache_keeps_each_live_version_seen(tmp_path):
    cache = JobCache(tmp_path / "c.sqlite")
    t0 = datetime(2026, 12, 7, 2, 0, tzinfo=UTC)
    made = t0 - timedelta(hours=1)
    assert record_live(cache, {"acme": ("aaaa1111 PASS", made), "beta": ("-", None)}, t0) == 2
    assert record_live(cache, {"acme": ("aaaa1111 PASS", made)}, t0 + timedelta(hours=1)) == 0  # unchanged
    assert record_live(cache, {"acme": ("bbbb2222 PASS", None)}, t0 + timedelta(hours=2)) == 1
    assert live_as_of(cache, t0 - timedelta(minutes=1)) == {}
    assert live_as_of(cache, t0 + timedelta(hours=1)) == {"acme": ("aaaa1111 PASS", made), "beta": ("-", None)}
    assert live_as_of(cache, t0 + timedelta(hours=3))["acme"] == ("bbbb2222 PASS", None)
