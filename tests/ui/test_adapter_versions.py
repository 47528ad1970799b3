"""The TUI's adapter versions against the real embedded server and its Hub: the fleet's Live column,
the versions view (`v`), promote (`p`) and roll back (`b`), read-only.

Real runs of one tenant, trained by the server's jobs and pushed to its Hub: a passing one, a
failed one, then (with the app open) a second passing one; the tenant's scheduled job names the
repo, which is how the app finds it."""

from __future__ import annotations

import msgspec
from tests.ui.conftest import mounted_screen, notes, refreshes, schedule_python, wait_for, wait_thread
from textual.widgets import DataTable

from console import jobspec, paths
from console.jobspec import TrainingRequest
from console.ship import ship
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.versions import VersionsScreen

REPO = "oncall/adapter-acme"
DATA = paths.training_dir() / "data" / "acme.jsonl"


def _submission(backend, run_name: str, learning_rate: float):
    req = TrainingRequest(tenant="acme", dataset=str(DATA), max_steps=12, learning_rate=learning_rate,
                          lora_r=8, lora_alpha=16, hub_model_id=REPO, run_name=run_name)
    return jobspec.build_submission(req, backend_kind="local", token=backend.api.token)


def _train(backend, run_name: str, learning_rate: float) -> str:
    sub = ship(backend.api, _submission(backend, run_name, learning_rate), backend.namespace)
    job = backend.api.run_job(**sub.run_kwargs(),
                              namespace=backend.namespace)
    backend.api.wait_for_job(job.id, timeout=240, poll_interval=0.5, namespace=backend.namespace)
    return job.id


def _live(backend) -> str | None:
    return {t.name: t.target_commit for t in backend.api.list_repo_refs(REPO).tags}.get("live")


def _rows(screen: VersionsScreen) -> list[list[str]]:
    table = screen.query_one(DataTable)
    return [[cell.plain for cell in table.get_row_at(i)] for i in range(table.row_count)]


def _cell(app: ConsoleApp, tenant: str = "acme") -> str:
    return app.fleet_table.get_cell(tenant, "live").plain


async def _select(pilot, screen: VersionsScreen, run: str) -> None:
    table = screen.query_one(DataTable)
    want = next(i for i, row in enumerate(_rows(screen)) if row[4] == run)
    while table.cursor_row != want:
        await pilot.press("down" if table.cursor_row < want else "up")
    assert screen.selected().run == run


async def test_live_column_versions_view_promote_and_roll_back(backend, cfg):
    nightly = ship(backend.api, _submission(backend, "acme-nightly", 5e-3), backend.namespace)
    backend.api.create_scheduled_job(**nightly.scheduled_kwargs("0 3 * * 1", suspend=True), namespace=backend.namespace)
    schedule_python(backend, tenant="globex")  # a tenant whose runs name no repo
    good = _train(backend, "acme-good", 5e-3)
    bad = _train(backend, "acme-dead", 1e3)
    first_live = _live(backend)
    assert first_live is not None  # the repo's first passing run is made live

    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, start_tab="fleet", stream_metrics=False,
                     watch_seconds=None)
    async with app.run_test(size=(160, 40)) as pilot:
        # the fleet row: the live version's short commit, its verdict and age
        await wait_for(pilot, lambda: "acme" in app.fleet_table.live, timeout=60, what="the Live cell")
        assert _cell(app).startswith(f"{first_live[:8]} PASS")
        await wait_for(pilot, lambda: "globex" in app.fleet_table.live, what="globex's Live cell")
        assert _cell(app, "globex") == "-"
        reads = app.live.reads
        await refreshes(pilot, 4)  # refreshes go on; a repo already read is not read again
        assert app.live.reads == reads

        # the versions view: both runs, with their verdicts, jobs and losses; the live one marked
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, VersionsScreen) and app.screen.is_mounted)
        view = app.screen
        await wait_for(pilot, lambda: len(_rows(view)) == 2, what="both versions")
        rows = {row[4]: row for row in _rows(view)}
        assert rows["acme-good"][0] == f"* {first_live[:8]}"  # the live one marked
        assert rows["acme-good"][1] == "PASS" and rows["acme-good"][3] == good[-8:]
        first, last = (float(x) for x in rows["acme-good"][5].split("->"))
        assert last < first
        assert rows["acme-dead"][0].startswith("  ") and rows["acme-dead"][1] == "FAIL zero_grad"
        assert rows["acme-dead"][3] == bad[-8:]
        title = str(view.query_one("#versions-title").render())
        assert REPO in title and "acme-good PASS" in title

        # a failed version cannot be live: refused with check_promotable's reason, nothing asked
        await _select(pilot, view, "acme-dead")
        await pilot.press("p")
        await wait_for(pilot, lambda: any("cannot be live" in n for n in notes(app)), what="the refusal")
        refusal = next(n for n in notes(app) if "cannot be live" in n)
        assert "acme-dead" in refusal and "FAIL (zero_grad)" in refusal
        assert app.screen is view and _live(backend) == first_live

        # a third run passes while the view is open: its tenant's run finished, the repo is read again
        await wait_thread(_train, backend, "acme-better", 5e-3)
        await wait_for(pilot, lambda: len(_rows(view)) == 3, timeout=60, what="the new version")
        assert _live(backend) == first_live  # manual policy: the new pass is on main, not live
        await _select(pilot, view, "acme-better")
        await pilot.press("p")
        await mounted_screen(pilot, ConfirmScreen, what="the confirmation")
        asked = " ".join(str(s.render()) for s in app.screen.query("Static"))
        assert "acme-good PASS" in asked and "acme-better PASS" in asked and "loss" in asked
        await pilot.press("y")
        await wait_for(pilot, lambda: _live(backend) not in (None, first_live), what="the tag to move")
        better = _live(backend)
        assert better == view.versions.find("acme-better").commit
        await wait_for(pilot, lambda: {r[4]: r[0][0] for r in _rows(view)}.get("acme-better") == "*",
                       what="the view to mark the new live version")
        await wait_for(pilot, lambda: _cell(app).startswith(f"{better[:8]} PASS"), what="the fleet row")

        # roll back: live goes back to the passing version before it
        await pilot.press("b")
        await mounted_screen(pilot, ConfirmScreen, what="the confirmation")
        asked = " ".join(str(s.render()) for s in app.screen.query("Static"))
        assert "acme-better PASS" in asked and "acme-good PASS" in asked
        await pilot.press("y")
        await wait_for(pilot, lambda: _live(backend) == first_live, what="the tag to move back")
        await wait_for(pilot, lambda: _cell(app).startswith(f"{first_live[:8]} PASS"), what="the fleet row")
        await wait_for(pilot, lambda: {r[4]: r[0][0] for r in _rows(view)}.get("acme-good") == "*")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, VersionsScreen))

    # read-only: the view opens, promote and roll back are refused and nothing moves
    ro = ConsoleApp(msgspec.structs.replace(cfg, read_only=True), backend, refresh_seconds=0.3, start_tab="fleet",
                    stream_metrics=False, watch_seconds=None)
    async with ro.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: "acme" in ro.fleet_table.rows_by_tenant, timeout=30)
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(ro.screen, VersionsScreen))
        view = ro.screen
        await wait_for(pilot, lambda: len(_rows(view)) == 3)
        await _select(pilot, view, "acme-better")
        await pilot.press("p")
        await pilot.press("b")
        await wait_for(pilot, lambda: any("Read-only: roll back refused" in n for n in notes(ro)))
        assert any("Read-only: promote refused" in n for n in notes(ro))
        assert not isinstance(ro.screen, ConfirmScreen)
    assert _live(backend) == first_live
