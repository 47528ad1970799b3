"""The configured timeout overhead (`defaults.timeout_overhead_s`) pads every timeout the console
shows or sets: the submit form's and the what-if's, as `jobspec.build_submission` pads it."""

from __future__ import annotations

from tests.ui.conftest import wait_for
from textual.widgets import Input

from console import jobspec, paths
from console.costs import padded_timeout_seconds
from console.inputs import format_duration
from console.jobspec import TrainingRequest
from console.ui.app import ConsoleApp
from console.ui.screens.submit import SubmitScreen
from console.ui.screens.whatif import WhatIfScreen

OVERHEAD = 1200


async def test_the_configured_overhead_pads_the_submit_forms_timeout_and_the_whatifs(backend, cfg):
    cfg.defaults.timeout_overhead_s = OVERHEAD
    dataset = str(paths.training_dir() / "data" / "acme.jsonl")
    request = TrainingRequest(tenant="acme", dataset=dataset, flavor=cfg.defaults.flavor)
    expected = jobspec.build_submission(
        request, timeout_buffer=cfg.defaults.timeout_buffer, timeout_overhead_s=OVERHEAD
    )
    assert "20m set-up and push" in expected.timeout_rule
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.refresher.refresh_count > 0)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen.is_mounted
                                      and bool(app.screen.query("#f-tenant")))
        form = app.screen
        form.query_one("#f-tenant", Input).value = "acme"
        form.query_one("#f-dataset", Input).value = dataset
        padded = format_duration(expected.timeout_seconds)
        await wait_for(pilot, lambda: form.query_one("#f-timeout", Input).value == padded, what="the padded timeout")
        assert form.query_one("#f-timeout", Input).value == format_duration(expected.timeout_seconds)
        assert expected.timeout_rule in str(form.query_one("#submit-estimate").render())
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.screen_stack[0])

        await pilot.press("dollar_sign")
        await wait_for(pilot, lambda: isinstance(app.screen, WhatIfScreen) and app.screen.is_mounted
                                      and app.screen.result is not None)
        per_run = app.screen.result.heuristic.per_run
        assert per_run.timeout_overhead_s == OVERHEAD
        assert per_run.timeout_seconds == padded_timeout_seconds(
            per_run.timeout_basis_hours, cfg.defaults.timeout_buffer, OVERHEAD
        )
