"""The submit form's Promote choice and margin: `on_eval` with a margin reaches the request (the
job's `--promote on_eval` and `margin` label), a margin outside [0, 1) and a policy without a Hub
repo are refused in the form with the field named, and manual passes nothing."""

from __future__ import annotations

import pytest
from tests.ui.conftest import mounted_screen, type_into, wait_for
from textual.widgets import Input, Select

from console import jobspec, paths
from console.jobspec import SubmissionError, TrainingRequest
from console.ui.app import ConsoleApp
from console.ui.screens.submit import SubmitScreen

ACME = str(paths.training_dir() / "data" / "acme.jsonl")


async def test_on_eval_and_its_margin_come_from_the_form(backend, cfg):
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    request = TrainingRequest(tenant="acme", dataset=ACME, examples=200, epochs=1.0, flavor="l4x1",
                              hub_model_id="ops/adapter-acme")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.refresher.refresh_count > 0)
        app.push_screen(SubmitScreen(request, backend_kind="local", timeout_buffer=1.3))
        await mounted_screen(pilot, SubmitScreen, what="the submit form")
        form = app.screen
        assert form.read_request()[0].promote is None  # manual: nothing passed
        form.query_one("#f-promote", Select).value = "on_eval"
        await pilot.pause()
        await type_into(pilot, form.query_one("#f-promote-margin", Input), "0.05")
        req, _ = form.read_request()
        assert req.promote == "on_eval" and req.promote_margin == 0.05
        sub = jobspec.build_submission(req, backend_kind="local", token="tok")
        args = jobspec.script_args_of(sub.command)
        assert args[args.index("--promote") + 1] == "on_eval" and sub.labels["margin"] == "0p05"

        await type_into(pilot, form.query_one("#f-promote-margin", Input), "1.5")
        with pytest.raises(SubmissionError, match="margin must be a share of the live loss"):
            form.read_request()
        await type_into(pilot, form.query_one("#f-promote-margin", Input), "")
        await type_into(pilot, form.query_one("#f-hub-model-id", Input), "")
        with pytest.raises(SubmissionError, match="promote on_eval: name the Hub repo"):
            form.read_request()
