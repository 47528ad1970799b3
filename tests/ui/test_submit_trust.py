"""A run trains only its own tenant's data, and every confirmation says what will run: the submit
form, rerun and trigger against the real embedded server, with console jobs and schedules."""

from __future__ import annotations

from tests.ui.conftest import mounted_screen, notes, run_python, type_into, wait_for
from textual.widgets import Checkbox, Input, Select

from console import jobspec, paths
from console.inputs import format_duration
from console.jobspec import TrainingRequest
from console.kinds import SCRIPTS
from console.prices import shipped_price_book
from console.ship import ship
from console.ui.actions.jobs import _confirm_submit
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.submit import SubmitScreen

DATA = paths.training_dir() / "data"
ACME = str(DATA / "acme.jsonl")
GLOBEX = str(DATA / "globex.jsonl")
STANDIN = "print('stand-in training run', flush=True)\n"




def _request(tenant: str, dataset: str, **kw) -> TrainingRequest:
    return TrainingRequest(tenant=tenant, dataset=dataset, examples=200, epochs=1.0, flavor="l4x1", **kw)


def _schedule(backend, request: TrainingRequest):
    """A suspended console schedule for `request`, as `fleet apply` would create it."""
    sub = jobspec.build_submission(request, backend_kind="local")
    kwargs = ship(backend.api, sub, backend.namespace).scheduled_kwargs("0 3 * * 1", suspend=True)
    kwargs.pop("name", None)
    return backend.api.create_scheduled_job(**kwargs, namespace=backend.namespace)


def _console_job(backend, request: TrainingRequest, scripts):
    """A console job submitted as the console submits it, running a stand-in for the script."""
    (scripts / SCRIPTS["sft"]).write_text(STANDIN, encoding="utf-8")
    sub = jobspec.build_submission(request, backend_kind="local", script_dir=scripts)
    return backend.api.run_job(**ship(backend.api, sub, backend.namespace).run_kwargs(), namespace=backend.namespace)


def _price(flavor: str) -> float:
    return shipped_price_book().price_per_hour(flavor)


def _fleet_known(app, *tenants: str) -> bool:
    rows = app.refresher.fleet_rows
    return all(t in rows and rows[t].request is not None for t in tenants)


def _form(app) -> SubmitScreen:
    assert isinstance(app.screen, SubmitScreen)
    return app.screen


def _field(app, field_id: str) -> str:
    return _form(app).query_one(f"#{field_id}", Input).value


def _error(app) -> str:
    return str(_form(app).query_one("#submit-error").render())


def _confirmation(app) -> str:
    assert isinstance(app.screen, ConfirmScreen)
    return "\n".join([app.screen.title_text, *app.screen.details])


async def test_the_dataset_follows_the_tenant_and_another_tenants_dataset_is_refused(backend, cfg):
    _schedule(backend, _request("acme", ACME))
    _schedule(backend, _request("globex", GLOBEX, hub_model_id="ops/globex-lora"))
    job = run_python(backend, "print('globex run')", tenant="globex")
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(
            pilot,
            lambda: _fleet_known(app, "acme", "globex") and job.id in app.jobs_table.rows_by_id,
            what="the fleet and the globex job",
        )
        app.jobs_table.select_job(job.id)
        await pilot.press("s")
        await mounted_screen(pilot, SubmitScreen, what="the submit form")
        form = _form(app)
        assert _field(app, "f-tenant") == "globex"
        assert _field(app, "f-dataset") == GLOBEX

        await type_into(pilot, form.query_one("#f-tenant", Input), "acme")
        assert _field(app, "f-dataset") == ACME  # acme's own data, not globex's
        assert _error(app) == ""
        await type_into(pilot, form.query_one("#f-tenant", Input), "globex")
        assert _field(app, "f-hub-model-id") == "ops/globex-lora"  # the destination follows too
        await type_into(pilot, form.query_one("#f-tenant", Input), "acme")
        assert _field(app, "f-hub-model-id") == "oncall/adapter-acme"  # acme's own repo, not globex's

        await type_into(pilot, form.query_one("#f-tenant", Input), "newco")  # not in the fleet
        assert _field(app, "f-dataset") == ""
        assert _error(app) == "dataset is required"
        await type_into(pilot, form.query_one("#f-dataset", Input), "ops/newco-chats")
        await wait_for(pilot, lambda: _error(app) == "", what="the typed dataset taken")
        assert _field(app, "f-dataset") == "ops/newco-chats"  # typed for this tenant: it stays
        assert _error(app) == ""

        await type_into(pilot, form.query_one("#f-tenant", Input), "acme")
        assert _field(app, "f-dataset") == ACME
        # a tenant pasted and its dataset typed before the form saw the tenant change: it stays
        form.query_one("#f-tenant", Input).value = "newco2"
        form.query_one("#f-dataset", Input).value = "ops/newco2-chats"
        await pilot.pause()  # the Changed messages handled
        assert _field(app, "f-dataset") == "ops/newco2-chats"

        await type_into(pilot, form.query_one("#f-tenant", Input), "acme")
        await type_into(pilot, form.query_one("#f-dataset", Input), GLOBEX)
        reason = f"dataset {GLOBEX} is tenant globex's: acme trains only on its own data"
        assert _error(app) == reason
        await pilot.press("ctrl+s")
        await pilot.pause()  # the refusal handled
        assert isinstance(app.screen, SubmitScreen)  # refused in the form, with the reason
        assert _error(app) == reason and not any(reason in n for n in notes(app))  # said once, in the form
    assert [j.id for j in backend.api.list_jobs(namespace=backend.namespace)] == [job.id]


async def test_a_rerun_on_another_tenants_dataset_is_refused(backend, cfg, tmp_path):
    _schedule(backend, _request("acme", ACME))
    _schedule(backend, _request("globex", GLOBEX))
    # made behind the console's back: acme trained on globex's data
    job = _console_job(backend, _request("acme", GLOBEX), tmp_path)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(
            pilot,
            lambda: _fleet_known(app, "acme", "globex") and job.id in app.jobs_table.rows_by_id,
            what="the fleet and the acme job",
        )
        app.jobs_table.select_job(job.id)
        await pilot.press("R")
        await wait_for(pilot, lambda: any(n.startswith("Rerun refused") for n in notes(app)), what="the refusal")
        assert not isinstance(app.screen, ConfirmScreen)
        assert notes(app)[-1] == (
            f"Rerun refused: dataset {GLOBEX} is tenant globex's: acme trains only on its own data"
        )
    assert [j.id for j in backend.api.list_jobs(namespace=backend.namespace)] == [job.id]


async def test_submit_rerun_and_trigger_confirmations_name_what_will_run(backend, cfg, tmp_path):
    sj = _schedule(backend, _request("acme", ACME, hub_model_id="ops/acme-lora"))
    job = _console_job(backend, _request("acme", ACME), tmp_path)
    est = jobspec.build_submission(_request("acme", ACME))
    run = f"tenant acme, sft on l4x1 (${_price('l4x1'):.2f}/h)"
    timeout = f"timeout {format_duration(est.timeout_seconds)}: {est.timeout_rule}"
    assert est.timeout_rule.startswith("(") and " set-up and push) x 1.3 = " in est.timeout_rule
    cost = f"estimated {format_duration(est.estimate_hours * 3600)}, ${est.estimate_usd:.2f} per run"
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(
            pilot,
            lambda: _fleet_known(app, "acme") and job.id in app.jobs_table.rows_by_id,
            what="the fleet and the acme job",
        )
        app.jobs_table.select_job(job.id)

        await pilot.press("s")
        await mounted_screen(pilot, SubmitScreen, what="the submit form")
        await pilot.pause()
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.is_mounted,
                       what="the submit confirmation")
        text = _confirmation(app)
        assert "Submit a job now?" in text
        assert run in text
        assert f"dataset {ACME}" in text
        assert "weights to hf://ops/acme-lora" in text
        assert timeout in text
        assert cost in text
        assert (
            "first a CPU dataset preflight on cpu-basic (~$0.01); "
            "the l4x1 job is submitted only after it passes"
        ) in text
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is app.screen_stack[0])

        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.is_mounted,
                       what="the rerun confirmation")
        text = _confirmation(app)
        assert f"Run job {job.id} again?" in text
        assert run in text
        assert f"dataset {ACME}" in text
        assert "weights to local artifacts acme-sft-" in text
        assert timeout in text
        assert cost in text
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is app.screen_stack[0])

        await pilot.press("1")
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.is_mounted,
                       what="the trigger confirmation")
        text = _confirmation(app)
        assert f"Run acme's scheduled job {sj.id} now?" in text
        assert run in text
        assert f"dataset {ACME}" in text
        assert "weights to hf://ops/acme-lora" in text
        assert timeout in text
        assert cost in text
        await pilot.press("n")
    assert [j.id for j in backend.api.list_jobs(namespace=backend.namespace)] == [job.id]


async def test_the_preflight_is_on_by_default_for_every_gpu_flavor(backend, cfg):
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.refresher.refresh_count > 0)
        await pilot.press("s")
        await mounted_screen(pilot, SubmitScreen, what="the submit form")
        form = _form(app)
        await type_into(pilot, form.query_one("#f-tenant", Input), "acme")
        await type_into(pilot, form.query_one("#f-dataset", Input), ACME)
        flavors = [f.name for f in app.prices.gpu_flavors()]
        assert flavors
        for flavor in flavors:
            form.query_one("#f-flavor", Select).value = flavor
            await pilot.pause()
            assert form.query_one("#f-preflight", Checkbox).value, flavor
            if _error(app) == "":  # the model fits this flavor
                assert "+ preflight ~$0.01" in str(form.query_one("#submit-estimate").render())


async def test_a_hub_submission_without_a_destination_or_a_token_is_refused_in_the_form(backend, cfg):
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    results: list = []
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.refresher.refresh_count > 0)

        def form(token: str | None) -> SubmitScreen:
            return SubmitScreen(
                _request("acme", "ops/acme-chats"), backend_kind="hub", timeout_buffer=1.3, token=token
            )

        app.push_screen(form(None), results.append)
        await mounted_screen(pilot, SubmitScreen, what="the submit form")
        assert _field(app, "f-hub-model-id") == ""
        assert _error(app).startswith(
            "a run on HF Jobs needs a destination (hub_model_id): the job's disk is thrown away "
            "when it ends, and weights not pushed are lost"
        )
        await pilot.press("ctrl+s")
        await pilot.pause()  # the refusal handled
        assert isinstance(app.screen, SubmitScreen) and results == []
        await type_into(pilot, _form(app).query_one("#f-hub-model-id", Input), "ops/acme-lora")
        assert _error(app) == (
            "a run on HF Jobs needs a token to push with: `hf auth login` or set HF_TOKEN"
        )
        await pilot.press("ctrl+s")
        await pilot.pause()  # the refusal handled
        assert isinstance(app.screen, SubmitScreen) and results == []
        assert _error(app).startswith("a run on HF Jobs needs a token")
        assert not any("needs a token" in n for n in notes(app))  # the form says it, no toast over it
        await pilot.press("escape")
        await wait_for(pilot, lambda: results == [None])

        app.push_screen(form("hf_test_token"), results.append)
        await mounted_screen(pilot, SubmitScreen, what="the submit form")
        await type_into(pilot, _form(app).query_one("#f-hub-model-id", Input), "ops/acme-lora")
        # the form's offline toy base would train noise on a paid GPU: refused, naming base_model
        assert _field(app, "f-base-model") == "tiny-random"
        assert _error(app).startswith("base_model 'tiny-random' is the offline toy model")
        await pilot.press("ctrl+s")
        await pilot.pause()  # the refusal handled
        assert isinstance(app.screen, SubmitScreen) and len(results) == 1
        await type_into(pilot, _form(app).query_one("#f-base-model", Input), "Qwen/Qwen3-0.6B")
        assert _error(app) == ""
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: len(results) == 2)
        assert results[1].submission.destination == "hf://ops/acme-lora"
    assert list(backend.api.list_jobs(namespace=backend.namespace)) == []


async def test_a_typed_timeout_below_the_estimate_asks_first(backend, cfg):
    request = _request("acme", ACME, model_b=3.0)
    padded = jobspec.build_submission(request).timeout_seconds  # hours of training
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    results: list = []
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.refresher.refresh_count > 0)
        app.push_screen(SubmitScreen(request, backend_kind="local", timeout_buffer=1.3),
                        lambda result: (results.append(result), _confirm_submit(app, result)))
        await mounted_screen(pilot, SubmitScreen, what="the submit form")
        await type_into(pilot, _form(app).query_one("#f-timeout", Input), "1m")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.is_mounted,
                       what="the submit confirmation")
        text = _confirmation(app)
        assert "Submit a job now with a timeout below the estimate?" in text
        assert f"warning: timeout 1m is below the padded estimate {format_duration(padded)}" in text
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is app.screen_stack[0])
    assert list(backend.api.list_jobs(namespace=backend.namespace)) == []


async def test_the_form_of_a_local_tenant_without_a_repo_offers_its_repo_on_the_local_hub(backend, cfg):
    _schedule(backend, _request("acme", ACME))
    job = run_python(backend, "print('acme run')", tenant="acme")
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: _fleet_known(app, "acme") and job.id in app.jobs_table.rows_by_id,
                       what="the fleet and the acme job")
        app.jobs_table.select_job(job.id)
        await pilot.press("s")
        await mounted_screen(pilot, SubmitScreen, what="the submit form")
        assert _field(app, "f-tenant") == "acme"
        assert _field(app, "f-hub-model-id") == "oncall/adapter-acme"  # every local run pushes
        assert _error(app) == ""
        await type_into(pilot, _form(app).query_one("#f-tenant", Input), "newco")  # not in the fleet
        assert _field(app, "f-hub-model-id") == "oncall/adapter-newco"
