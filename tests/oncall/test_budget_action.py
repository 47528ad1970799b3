"""A budget that acts (`budget_action = "suspend"`): when the month's projection passes
`monthly_budget_usd`, the watcher suspends schedules, the most expensive this month first, until it
fits, says so once, and `console budget undo` resumes them (the budget warns from then on)."""

from __future__ import annotations

import json
import os
from datetime import datetime

from msgspec.structs import replace
from tests.oncall.conftest import NAMESPACE
from tests.oncall.test_money_agreement import NOW, Planned, schedule

from console.cli import main
from console.config import Config, save
from console.jobspec import TrainingRequest
from console.ledger import Ledger
from console.oncall import Watcher
from console.oncall.budget import plan_cut


def _fleet() -> list[Planned]:
    def req(tenant: str, model_b: float, examples: int) -> TrainingRequest:
        return TrainingRequest(tenant=tenant, dataset=f"org/{tenant}", base_model="org/base", model_b=model_b,
                               examples=examples, epochs=1.0, flavor="l4x1", kind="sft", env="prod")
    return [Planned(req("acme", 1.0, 1000), "0 3 * * *", False),    # daily, small
            Planned(req("globex", 3.0, 4000), "0 */6 * * *", False),  # 4 a day, the biggest
            Planned(req("initech", 0.5, 500), "@weekly", False)]


def _check(backend, cfg):
    watcher = Watcher(backend.api, cfg, namespace=backend.namespace, backend_kind=backend.kind, ledger=Ledger(),
                      clock=lambda: datetime.fromisoformat(NOW), write=lambda _t: None)
    try:
        return watcher.check()
    finally:
        watcher.close()


def _suspended(backend) -> dict[str, bool]:
    return {sj.job_spec.labels["tenant"]: bool(sj.suspend)
            for sj in backend.api.list_scheduled_jobs(namespace=NAMESPACE)}


def test_over_budget_suspends_the_most_expensive_until_it_fits_once_and_undo_resumes(
        server, backend, cfg, capsys, monkeypatch):
    monkeypatch.setenv("CONSOLE_NOW", NOW)
    ids = schedule(backend, _fleet())
    first = _check(backend, replace(cfg, monthly_budget_usd=0.0))  # warn only: read the month as it is
    by_tenant = {f.tenant: f for f in first.summary.schedules}
    biggest = max(by_tenant.values(), key=lambda f: f.remaining_usd)
    assert biggest.tenant == "globex" and biggest.remaining_usd > 1
    assert _suspended(backend) == {"acme": False, "globex": False, "initech": False}  # warn: nothing acts
    # a budget that one suspension brings the month under
    budget = round(first.summary.projection_usd - biggest.remaining_usd + 0.01, 2)
    acting = replace(cfg, monthly_budget_usd=budget, budget_action="suspend")
    save(Config(namespace=NAMESPACE, plan="pro", endpoint=server.url, monthly_budget_usd=budget,
                budget_action="suspend"), os.environ["CONSOLE_CONFIG"])

    report = _check(backend, acting)
    assert _suspended(backend) == {"acme": False, "globex": True, "initech": False}
    cuts = [e for e in report.events if e.kind == "budget_suspended"]
    assert len(cuts) == 1 and "globex" in cuts[0].text and "console budget undo" in cuts[0].text
    assert cuts[0].data["suspended"][0]["scheduled_job_id"] == ids["globex"]
    assert cuts[0].data["after_usd"] <= budget

    again = _check(backend, acting)  # the month fits now: nothing more suspended, nothing said again
    assert _suspended(backend)["acme"] is False
    assert not [e for e in again.events if e.kind == "budget_suspended"]
    assert again.summary.projection_usd <= budget

    assert main(["budget", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [s["tenant"] for s in shown["schedules"]] == ["globex"]
    assert main(["budget", "undo"]) == 0
    out = capsys.readouterr().out
    assert f"resumed globex (schedule {ids['globex']})" in out
    assert _suspended(backend) == {"acme": False, "globex": False, "initech": False}

    after_undo = _check(backend, acting)  # an engineer chose to spend: a warning, no new suspension
    assert _suspended(backend)["globex"] is False
    assert [e.kind for e in after_undo.events if e.kind.startswith("budget")] == ["budget"]
    assert main(["budget", "undo"]) == 0
    assert "nothing to undo" in capsys.readouterr().out


def test_the_cut_takes_the_most_expensive_first_and_says_when_nothing_fits():
    class F:
        def __init__(self, tenant, remaining, suspended=False):
            self.tenant = self.scheduled_job_id = tenant
            self.remaining_usd, self.suspended = remaining, suspended

    class summary:
        def __init__(self, projection, budget, schedules):
            self.month, self.projection_usd, self.budget_usd, self.schedules = "2026-12", projection, budget, schedules

    schedules = [F("a", 10.0), F("b", 30.0), F("c", 20.0), F("d", 50.0, suspended=True)]
    cut = plan_cut(summary(100.0, 55.0, schedules))
    assert [s.tenant for s in cut.schedules] == ["b", "c"] and cut.fits and cut.after_usd == 50.0
    assert plan_cut(summary(100.0, 100.0, schedules)) is None  # fits already
    everything = plan_cut(summary(100.0, 5.0, schedules))  # spent money alone passes it
    assert [s.tenant for s in everything.schedules] == ["b", "c", "a"] and not everything.fits
    assert "still $40.00 with every schedule suspended" in everything.line()


async def test_u_on_the_costs_tab_resumes_what_the_budget_suspended(tmp_path):
    """One key undoes the cut: `U` on the Costs tab asks, naming each schedule, then resumes them."""
    from tests.ui.conftest import mounted_screen, schedule_python, wait_for

    from console.backend import connect
    from console.config import ServerSettings
    from console.oncall.budget import BudgetCut, Suspended, last_cut, remember_cut
    from console.oncall.store import OnCallStore
    from console.ui.app import ConsoleApp
    from console.ui.screens.confirm import ConfirmScreen

    cfg = Config(namespace="oncall", plan="pro", server=ServerSettings(max_running_jobs=4))
    backend = connect(cfg)
    try:
        sj = schedule_python(backend, tenant="globex")
        backend.api.suspend_scheduled_job(scheduled_job_id=sj.id, namespace=backend.namespace)
        store = OnCallStore()
        remember_cut(store, BudgetCut("2026-12", 10.0, 25.0, (Suspended(sj.id, "globex", 15.0),), 0.0))
        app = ConsoleApp(cfg, backend, refresh_seconds=3600, watch_seconds=None)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("3")
            await wait_for(pilot, lambda: bool(app.query("LedgerPane")), what="the Costs tab")
            app.query_one("#ledger-tenants").focus()
            await pilot.pause()
            await pilot.press("U")
            await mounted_screen(pilot, ConfirmScreen, what="the confirmation")
            details = " ".join(str(w.render()) for w in app.screen.query(".confirm-detail"))
            assert f"globex: schedule {sj.id}, $15.00 left this month" in details
            await pilot.press("y")
            await wait_for(pilot, lambda: not backend.api.inspect_scheduled_job(
                scheduled_job_id=sj.id, namespace=backend.namespace).suspend, what="the schedule resumed")
        assert last_cut(store) is None
    finally:
        backend.close()
