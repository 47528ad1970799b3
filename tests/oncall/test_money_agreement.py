"""One truth for money: every headless surface gives the same figures, to the cent, for the same fleet.

Randomly generated fleets (every training kind, max_steps or not, crons, flavors, Unsloth, suspended
schedules, the builder model, LoRA or full) are scheduled on a real embedded server through the
console's own builder (`jobspec.build_submission`, shipped as every submission is), and read back at
a frozen clock (`CONSOLE_NOW`) by `console fleet show --json`, `console ledger --summary --json`,
the watcher's projection (what `console watch` and the start-up toast say), the bulk previews
(`console bulk trigger|suspend|resume --json`) and `console whatif --json`. Each schedule's $/run,
$/month and what is left of this month must read the same everywhere; the month's projection the
same in the ledger and the watch. A surface that builds its own figure from its own inputs (labels
without max_steps, the wall clock, its own cron arithmetic) fails here.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, replace
from datetime import datetime

import pytest
from tests.oncall.conftest import NAMESPACE

from console import jobspec
from console.cli import main
from console.config import Config, save
from console.jobspec import TrainingRequest, build_submission
from console.ledger import Ledger
from console.oncall import Watcher
from console.ship import ship

NOW = "2026-12-09T10:17:00Z"
"""The frozen clock every surface reads (a Wednesday, mid-month: runs left and runs gone)."""
CRONS = ("0 3 * * 1", "0 */6 * * *", "30 2 * * *", "0 4 1,15 * *", "15 5 * * 0,3", "@weekly", "0 0 L * *")
FLAVORS = ("t4-small", "l4x1", "a10g-large", "a100-large")
SIZES = {"t4-small": (0.5, 1.0), "l4x1": (0.5, 1.0, 3.0), "a10g-large": (1.0, 3.0), "a100-large": (1.0, 3.0, 7.0)}


@dataclass(frozen=True)
class Planned:
    req: TrainingRequest
    cron: str
    suspend: bool


def random_fleet(seed: int) -> list[Planned]:
    rnd = random.Random(seed)
    kinds = ["sft", "dpo", "kto", "embedding"]
    rnd.shuffle(kinds)
    out = []
    for i in range(rnd.randint(3, 5)):
        kind = kinds[i % len(kinds)]
        flavor = rnd.choice(FLAVORS)
        size = 0.3 if kind == "embedding" else rnd.choice(SIZES[flavor])
        req = TrainingRequest(
            tenant=f"t{seed}-{i}", dataset=f"org/data-{seed}-{i}", base_model="org/base", model_b=size,
            examples=rnd.choice((120, 1000, 2500, 4321)), epochs=rnd.choice((0.5, 1.0, 2.0, 3.0)),
            flavor=flavor, kind=kind, env="prod",
            unsloth=kind != "embedding" and rnd.random() < 0.3,
            max_steps=rnd.choice((None, None, 50, 600, 5000)),
        )
        out.append(Planned(fitting(req), rnd.choice(CRONS), rnd.random() < 0.25))
    if rnd.random() < 0.7:  # the builder model: its own size, flavor and cadence, LoRA or full
        full = rnd.random() < 0.5
        req = TrainingRequest(
            tenant="builder", dataset=f"org/builder-{seed}", base_model="org/base", model_b=rnd.choice((1.0, 3.0)),
            examples=3000, epochs=rnd.choice((1.0, 2.0)), flavor="a100-large", kind="builder", env="prod", full=full,
            max_steps=rnd.choice((None, 800)),
        )
        out.append(Planned(fitting(req), rnd.choice(CRONS), False))
    return out


def fitting(req: TrainingRequest) -> TrainingRequest:
    """`req` on its flavor, or on the next larger one whose GPU holds it (the console refuses the rest)."""
    for flavor in FLAVORS[FLAVORS.index(req.flavor):]:
        if jobspec.fit_problem(replace(req, flavor=flavor)) is None:
            return replace(req, flavor=flavor)
    return replace(req, model_b=1.0, flavor="a100-large")


def schedule(backend, planned: list[Planned]) -> dict[str, str]:
    """Schedule the fleet as the console does; tenant -> scheduled job id."""
    ids = {}
    for p in planned:
        sub = ship(backend.api, build_submission(p.req, backend_kind="local"), backend.namespace)
        sj = backend.api.create_scheduled_job(**sub.scheduled_kwargs(p.cron, suspend=p.suspend),
                                              namespace=backend.namespace)
        ids[p.req.tenant] = sj.id
    return ids


def cli_json(capsys, *argv: str):
    assert main(list(argv)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def cli_lines(capsys, *argv: str) -> list[dict]:
    """A command that prints one JSON object a line (`watch --json`)."""
    assert main(list(argv)) == 0, capsys.readouterr().err
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def cents(value: float | None) -> float | None:
    return None if value is None else round(value + 1e-9, 2)


def figures(capsys, cfg, backend, planned: list[Planned], ids: dict[str, str]) -> dict[str, dict[str, dict]]:
    """surface -> schedule id -> {per_run, month, left} in cents, read from every headless surface."""
    got: dict[str, dict[str, dict]] = {}
    fleet = cli_json(capsys, "fleet", "show", "--json")
    got["fleet show"] = {r["scheduled_job_id"]: {"per_run": cents(r["cost_per_run_usd"]),
                                                  "month": cents(r["would_be_monthly_usd"]),
                                                  "month_now": cents(r["monthly_usd"]),
                                                  "left": cents(r["left_this_month_usd"])}
                         for r in fleet if r["scheduled_job_id"]}
    ledger = cli_json(capsys, "ledger", "--summary", "--json")
    got["ledger"] = {f["scheduled_job_id"]: {"per_run": cents(f["per_run_usd"]),
                                             "month": cents(f["would_be_month_usd"]),
                                             "month_now": cents(f["month_usd"]), "left": cents(f["remaining_usd"])}
                     for f in ledger["schedules"]}
    watcher = Watcher(backend.api, cfg, namespace=backend.namespace, backend_kind=backend.kind,
                      ledger=Ledger(), clock=lambda: datetime.fromisoformat(NOW), write=lambda _t: None)
    try:
        report = watcher.check()
    finally:
        watcher.close()
    summary = report.summary
    got["watch"] = {f.scheduled_job_id: {"per_run": cents(f.per_run_usd), "month": cents(f.would_be_month_usd),
                                         "month_now": cents(f.month_usd), "left": cents(f.remaining_usd)}
                    for f in summary.schedules}
    status = next(line for line in cli_lines(capsys, "watch", "--once", "--json") if line.get("event") == "status")
    money = status["money"]
    got["watch --once --json"] = {f["scheduled_job_id"]: {"per_run": cents(f["per_run_usd"]),
                                                          "month": cents(f["would_be_month_usd"]),
                                                          "month_now": cents(f["month_usd"]),
                                                          "left": cents(f["remaining_usd"])}
                                  for f in money["schedules"]}
    projections = {"ledger": cents(ledger["projection_usd"]), "watch": cents(summary.projection_usd),
                   "watch --once --json": cents(money["projection_usd"])}
    bulk: dict[str, dict] = {}
    for action in ("trigger", "suspend", "resume"):
        plan = cli_json(capsys, "bulk", action, "label:app=console", "--json")
        for item in plan["items"]:
            key = "per_run" if action == "trigger" else "month"
            bulk.setdefault(item["target_id"], {})[key] = cents(abs(item["delta_usd"]))
    got["bulk"] = bulk
    whatif = {}
    for p in planned:
        r = p.req
        argv = ["whatif", "--json", "--model-b", f"{r.model_b:g}", "--examples", str(r.examples),
                "--epochs", f"{r.epochs:g}", "--flavor", r.flavor, "--cadence", p.cron, "--plan", "pro",
                "--kind", "sft" if r.kind == "builder" else r.kind]
        argv += ["--max-steps", str(r.max_steps)] if r.max_steps else []
        argv += ["--unsloth"] if r.unsloth else []
        argv += ["--method", "full"] if r.full else []
        out = cli_json(capsys, *argv)
        whatif[ids[r.tenant]] = {"per_run": cents(out["cost_per_run_usd"]), "month": cents(out["tenants_monthly_usd"])}
    got["whatif"] = whatif
    got["projection"] = {"all": projections}
    return got


def assert_agree(got: dict[str, dict[str, dict]], planned: list[Planned], ids: dict[str, str]) -> None:
    suspended = {ids[p.req.tenant] for p in planned if p.suspend}
    projections = got.pop("projection")["all"]
    assert projections["ledger"] == projections["watch"] == projections["watch --once --json"], projections
    reference = got["fleet show"]
    assert set(reference) == set(ids.values())
    for surface, by_id in got.items():
        for sj_id, want in reference.items():
            have = by_id.get(sj_id)
            assert have is not None, f"{surface} does not show schedule {sj_id}"
            for key, value in have.items():
                assert value == want[key], f"{surface} says {key} {value} for {sj_id}, fleet show {want[key]}"
    for sj_id, want in reference.items():
        if sj_id in suspended:  # a suspended schedule adds $0, and says what it would
            assert want["month_now"] == 0.0 and want["left"] == 0.0 and want["month"] > 0
        else:
            assert want["month_now"] == want["month"] > 0


@pytest.mark.parametrize("seed", [3, 11])
def test_every_headless_surface_gives_the_same_figures_to_the_cent(seed, server, backend, capsys, monkeypatch):
    monkeypatch.setenv("CONSOLE_NOW", NOW)
    save(Config(namespace=NAMESPACE, endpoint=server.url, plan="pro"), os.environ["CONSOLE_CONFIG"])
    planned = random_fleet(seed)
    ids = schedule(backend, planned)
    cfg = Config(namespace=NAMESPACE, endpoint=server.url, plan="pro")
    assert_agree(figures(capsys, cfg, backend, planned, ids), planned, ids)


def test_three_tenants_read_69_cents_5_76_and_86_cents_a_run_everywhere(server, backend, capsys, monkeypatch):
    """3B, 1,000 examples, 3 epochs on l4x1: capped at 600 steps, at 5,000 steps, and uncapped on a
    6-hourly cron."""
    monkeypatch.setenv("CONSOLE_NOW", NOW)
    save(Config(namespace=NAMESPACE, endpoint=server.url, plan="pro"), os.environ["CONSOLE_CONFIG"])
    base = dict(dataset="org/d", base_model="org/base", model_b=3.0, examples=1000, epochs=3.0, flavor="l4x1",
                env="prod")
    planned = [Planned(TrainingRequest(tenant="capped", **{**base, "dataset": "org/a"}, max_steps=600), "0 3 * * 1",
                       False),
               Planned(TrainingRequest(tenant="long", **{**base, "dataset": "org/b"}, max_steps=5000), "0 3 * * 1",
                       False),
               Planned(TrainingRequest(tenant="uncapped", **{**base, "dataset": "org/c"}), "0 */6 * * *", False)]
    ids = schedule(backend, planned)
    cfg = Config(namespace=NAMESPACE, endpoint=server.url, plan="pro")
    got = figures(capsys, cfg, backend, planned, ids)
    per_run = {tenant: got["fleet show"][ids[tenant]]["per_run"] for tenant in ids}
    assert per_run == {"capped": 0.69, "long": 5.76, "uncapped": 0.86}
    assert_agree(got, planned, ids)
    read_back = {jobspec.labels_of(sj)["tenant"]: jobspec.read_request(sj).max_steps
                 for sj in backend.api.list_scheduled_jobs(namespace=backend.namespace)}
    assert read_back == {"capped": 600, "long": 5000, "uncapped": None}  # from HF Jobs alone


async def _mounted(pilot, screen_type: type, what: str):
    from tests.ui.conftest import mounted_screen

    return await mounted_screen(pilot, screen_type, what=what)


async def _until(pilot, condition, what: str, timeout: float = 60.0) -> None:
    from tests.ui.conftest import wait_for

    await wait_for(pilot, condition, timeout, what)


async def test_the_tuis_fleet_rows_costs_tab_reschedule_and_bulk_dialogs_agree_with_the_commands(
    server, backend, cfg, capsys, monkeypatch
):
    """The same random fleet in the TUI (at the same frozen clock): each fleet row, the Costs tab's
    schedules and projection, the reschedule dialog's $/month and the bulk previews read what the
    headless commands read, to the cent."""
    from textual.widgets import Input

    from console.jobs import format_cost
    from console.ui.app import ConsoleApp
    from console.ui.screens.bulk import BulkScreen
    from console.ui.screens.reschedule import RescheduleScreen

    monkeypatch.setenv("CONSOLE_NOW", NOW)
    save(Config(namespace=NAMESPACE, endpoint=server.url, plan="pro"), os.environ["CONSOLE_CONFIG"])
    planned = random_fleet(11)  # suspended schedules among them: every preview has items
    ids = schedule(backend, planned)
    headless = figures(capsys, cfg, backend, planned, ids)
    want = headless["fleet show"]
    now = datetime.fromisoformat(NOW)
    app = ConsoleApp(cfg, backend, clock=lambda: now, refresh_seconds=3600, stream_metrics=False,
                     watch_seconds=None, start_tab="fleet")
    async with app.run_test(size=(160, 48)) as pilot:
        await _until(pilot, lambda: len(app.fleet_table.rows_by_tenant) == len(ids), "the fleet rows")
        for tenant, row in app.fleet_table.rows_by_tenant.items():
            assert {"per_run": cents(row.cost_per_run), "month": cents(row.would_be_monthly_usd),
                    "month_now": cents(row.monthly_usd), "left": cents(row.left_this_month_usd)} == want[ids[tenant]]

        await pilot.press("r")
        await _mounted(pilot, RescheduleScreen, "the reschedule dialog")
        row = app.fleet_table.rows_by_tenant[app.screen.tenant]
        line = str(app.screen.query_one("#cron-cost").render())
        month = format_cost(row.would_be_monthly_usd)
        assert line.startswith(f"cost: {month}/month -> {month}/month"), line
        assert f"runs at {format_cost(row.cost_per_run)}" in line, line
        await pilot.press("escape")
        await _until(pilot, lambda: not isinstance(app.screen, RescheduleScreen), "the dialog to close")

        for action in ("trigger", "suspend", "resume"):
            await pilot.press("b")
            screen = await _mounted(pilot, BulkScreen, "the bulk dialog")
            screen.query_one("#bulk-action", Input).value = action
            screen.query_one("#bulk-filter", Input).value = "label:app=console"
            screen.query_one("#bulk-filter", Input).focus()
            await pilot.press("enter")
            await _until(pilot, lambda screen=screen: screen.plan is not None, f"the {action} preview")
            key = "per_run" if action == "trigger" else "month"
            assert screen.plan.items or action == "resume"
            for item in screen.plan.items:
                assert cents(abs(item.delta_usd)) == want[item.target_id][key], (action, item)
            await pilot.press("escape")
            await _until(pilot, lambda: not isinstance(app.screen, BulkScreen), "the bulk dialog to close")

        await pilot.press("3")
        await _until(pilot, lambda: bool(app.query("LedgerPane")), "the Costs tab")
        pane = app.query_one("LedgerPane")
        await _until(pilot, lambda: pane.summary is not None and len(pane.summary.schedules) == len(ids)
                     and not pane.updating, "the Costs tab's schedules")
        for f in pane.summary.schedules:
            assert {"per_run": cents(f.per_run_usd), "month": cents(f.would_be_month_usd),
                    "month_now": cents(f.month_usd), "left": cents(f.remaining_usd)} == want[f.scheduled_job_id]
        assert cents(pane.summary.projection_usd) == headless["projection"]["all"]["ledger"]
