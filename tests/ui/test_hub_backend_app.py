"""The TUI on the hub backend (`backend = "hub"`), pointed at the embedded server with its token as
HF_TOKEN: a job submitted the way the console submits to the Hub shows in the jobs pane with its
log streaming, the fleet and the cost ledger count it, and the Training tab says where metrics would come
from. (The shipped script is a stand-in: see tests/server/test_hub_backend.py.)"""

from __future__ import annotations

import os
import re
import sys

import pytest
from tests.jobwait import wait_stage
from tests.ui.conftest import screen_text, wait_for, wait_thread

from console import jobspec
from console.backend import HUB, connect
from console.config import Config
from console.jobspec import TrainingRequest
from console.kinds import SCRIPTS
from console.ship import ship
from console.ui.app import ConsoleApp

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the hub wrapper is a bash script")

LINES = 40
STANDIN = f"for i in range({LINES}):\n    print('stand-in line', i, flush=True)\n"


def _on_screen(app) -> str:
    return screen_text(app)


@pytest.fixture
def hub(backend, cfg, monkeypatch, tmp_path):
    """A hub backend on the embedded server that `backend` started, logged in through HF_TOKEN."""
    monkeypatch.setenv("HF_TOKEN", backend.api.token)
    monkeypatch.setenv("UV_OFFLINE", "1")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    hub_cfg = Config(namespace=cfg.namespace, plan=cfg.plan, backend=HUB, endpoint=backend.url)
    with connect(hub_cfg) as hub_backend:
        yield hub_cfg, hub_backend


async def test_the_tui_on_the_hub_backend_shows_a_hub_job_its_log_and_no_metrics_source(hub, tmp_path):
    hub_cfg, backend = hub
    scripts = tmp_path / "training"
    scripts.mkdir()
    (scripts / SCRIPTS["sft"]).write_text(STANDIN, encoding="utf-8")
    request = TrainingRequest(tenant="acme", dataset="ops/acme-chats", base_model="Qwen/Qwen3-0.6B",
                              examples=300, epochs=1.0,
                              flavor="t4-small", max_steps=3, hub_model_id="ops/adapter-acme")
    sub = jobspec.build_submission(request, backend_kind=HUB, token=os.environ["HF_TOKEN"], script_dir=scripts)
    sub = ship(backend.api, sub, backend.namespace)  # through the jobs-artifacts bucket, as the app does
    job = backend.api.run_job(**sub.run_kwargs(), namespace=backend.namespace)
    await wait_thread(wait_stage, backend, job.id, ("COMPLETED",), 60)

    app = ConsoleApp(hub_cfg, backend, refresh_seconds=0.3)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: job.id in app.jobs_table.rows_by_id, what="the hub job's row")
        assert f"hub {backend.url.removeprefix('http://')}" in _on_screen(app)
        app.jobs_table.select_job(job.id)
        pane = app.log_pane
        await wait_for(pilot, lambda: pane.job_id == job.id and pane.ended, timeout=30, what="its log")
        assert [line for line in pane.lines if line.startswith("stand-in")] == [
            f"stand-in line {i}" for i in range(LINES)
        ]
        assert app.jobs_table.rows_by_id[job.id].tenant == "acme"

        await pilot.press("1")
        await wait_for(pilot, lambda: "acme" in app.fleet_table.rows_by_tenant, what="the tenant on the fleet")
        assert app.fleet_table.rows_by_tenant["acme"].last_stage == "COMPLETED"

        await pilot.press("3")
        await wait_for(
            pilot,
            lambda: re.search(r"^\s*acme\s+1\s+\$", _on_screen(app), re.MULTILINE) is not None,
            what="the run in the cost ledger",
        )
        await pilot.press("4")
        await wait_for(
            pilot, lambda: "no Trackio Space configured" in _on_screen(app), what="where metrics would come from"
        )
