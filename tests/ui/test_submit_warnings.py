"""What a submission's confirmation warns about before anything is sent (`Submission.warnings`):
the form on the hub backend against the real embedded server, its confirmation, and no job."""

from __future__ import annotations

from dataclasses import replace

from tests.ui.conftest import mounted_screen, type_into, wait_for
from textual.widgets import Input

from console.jobspec import TrainingRequest
from console.ui.actions.jobs import _confirm_submit
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.submit import SubmitScreen

HUB_RUN = TrainingRequest(tenant="acme", dataset="ops/acme-chats", base_model="Qwen/Qwen3-0.6B", model_b=0.6,
                          examples=200, epochs=1.0, flavor="t4-small", hub_model_id="ops/adapter-acme")


def _confirmation(app) -> str:
    assert isinstance(app.screen, ConfirmScreen)
    return "\n".join([app.screen.title_text, *app.screen.details])


async def _confirm(app, pilot, request: TrainingRequest) -> str:
    """The hub form for `request`, sent, and the text of its confirmation (then declined)."""
    app.push_screen(SubmitScreen(request, backend_kind="hub", timeout_buffer=1.3, token="hf_test_token"),
                    lambda result: _confirm_submit(app, result))
    await mounted_screen(pilot, SubmitScreen, what="the submit form")
    await type_into(pilot, app.screen.query_one("#f-base-model", Input), request.base_model)
    await pilot.press("ctrl+s")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.is_mounted,
                   what="the submit confirmation")
    text = _confirmation(app)
    await pilot.press("n")
    await wait_for(pilot, lambda: app.screen is app.screen_stack[0])
    return text


async def test_a_hub_run_with_no_trackio_space_is_warned_in_its_confirmation(backend, cfg):
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.refresher.refresh_count > 0)
        text = await _confirm(app, pilot, HUB_RUN)
        assert "warning: the run logs to Trackio (project console) but names no Trackio Space" in text, text
        assert "metrics stay in the job's container and are lost when the job ends" in text
        assert "set trackio.space_id in the config" in text
        assert text.startswith("Submit a job now?")  # asked as any submission: a warning, not a refusal

        text = await _confirm(app, pilot, replace(HUB_RUN, trackio_space_id="ops/trackio"))
        assert "Trackio Space" not in text, text
    assert list(backend.api.list_jobs(namespace=backend.namespace)) == []
