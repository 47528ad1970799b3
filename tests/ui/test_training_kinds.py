"""Every training kind in the TUI, against the real embedded server: the submit form's kind, its
fields and GPU-memory fit, the preflight that checks the kind's data, and the kinds in the jobs
table."""

from __future__ import annotations

import dataclasses

import pytest
from tests.ui.conftest import mounted_screen, notes, type_into, wait_for
from textual.widgets import Checkbox, Input, Select

from console import jobspec, paths, vram
from console.costs import estimate_run
from console.jobspec import TrainingRequest
from console.kinds import SCRIPTS
from console.prices import UNSLOTH_SPEEDUP, shipped_price_book
from console.ship import ship
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.submit import SubmitScreen

DATA = paths.training_dir() / "data"
HOOLI = str(DATA / "hooli.jsonl")  # DPO pairs: prompt, chosen, rejected




async def _pick(pilot, form: SubmitScreen, select_id: str, value: str) -> None:
    form.query_one(f"#{select_id}", Select).value = value
    await pilot.pause()  # the Changed message handled


def _error(form: SubmitScreen) -> str:
    return str(form.query_one("#submit-error").render())


def _estimate(form: SubmitScreen) -> str:
    return str(form.query_one("#submit-estimate").render())


async def test_the_form_follows_the_kind_and_refuses_a_model_that_does_not_fit(backend, cfg):
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.refresher.refresh_count > 0)
        await pilot.press("s")
        await mounted_screen(pilot, SubmitScreen, what="the submit form")
        form = app.screen
        await type_into(pilot, form.query_one("#f-tenant", Input), "stark")
        await type_into(pilot, form.query_one("#f-dataset", Input), str(DATA / "stark.jsonl"))
        # an SFT run: neither the encoder nor the full fine-tune is asked for
        assert not form.query_one("#row-encoder").display and not form.query_one("#row-full").display
        await _pick(pilot, form, "f-kind", "embedding")
        assert form.query_one("#row-encoder").display and not form.query_one("#row-full").display
        await _pick(pilot, form, "f-encoder", "cross")
        assert "embedding data" in _estimate(form) and "GB on" in _estimate(form)
        request, _ = form.read_request()
        assert (request.kind, request.encoder, request.full) == ("embedding", "cross", False)
        assert not form.query_one("#row-rewards").display

        # GRPO: the rewards row shows, and a reward that is neither built in nor a module is refused
        await type_into(pilot, form.query_one("#f-dataset", Input), str(DATA / "massive.jsonl"))
        await _pick(pilot, form, "f-kind", "grpo")
        assert form.query_one("#row-rewards").display and not form.query_one("#row-encoder").display
        assert not form.query_one("#row-unsloth").display  # GRPO does not load through Unsloth
        await type_into(pilot, form.query_one("#f-rewards", Input), "numeric, massive_rewards.py")
        request, _ = form.read_request()
        assert (request.kind, request.rewards) == ("grpo", "numeric,massive_rewards.py")
        assert _error(form) == "" and "grpo data" in _estimate(form)
        await type_into(pilot, form.query_one("#f-rewards", Input), "numeric,eval")
        assert _error(form).startswith("reward 'eval' must be one of exact, numeric, format")
        await type_into(pilot, form.query_one("#f-rewards", Input), "")
        await type_into(pilot, form.query_one("#f-dataset", Input), str(DATA / "stark.jsonl"))

        # an 8B LoRA on a T4 (16 GB, fp16): refused in one line, with a flavor that fits
        await _pick(pilot, form, "f-kind", "sft")
        await _pick(pilot, form, "f-flavor", "t4-small")
        await type_into(pilot, form.query_one("#f-model-b", Input), "8")
        error = _error(form)
        expected = jobspec.fit_problem(
            TrainingRequest(tenant="stark", dataset="x", model_b=8.0, flavor="t4-small"), shipped_price_book()
        )
        assert expected and error == expected and "\n" not in error
        assert "t4-small has 16 GB" in error and "the cheapest flavor that fits:" in error
        await pilot.press("ctrl+s")
        await pilot.pause()  # the refusal handled
        assert isinstance(app.screen, SubmitScreen)
        assert _error(form) == error and not any("t4-small has" in n for n in notes(app))
        await _pick(pilot, form, "f-flavor", "l40sx1")
        assert _error(form) == "" and "fits" in _estimate(form)

        # the builder: the full fine-tune box shows; a full 13B fine-tune does not fit an A100 80 GB
        await _pick(pilot, form, "f-kind", "builder")
        assert form.query_one("#row-full").display and not form.query_one("#row-encoder").display
        await type_into(pilot, form.query_one("#f-model-b", Input), "13")
        await _pick(pilot, form, "f-flavor", "a100-large")
        assert _error(form) == ""  # LoRA of 13B fits
        form.query_one("#f-full", Checkbox).value = True
        await pilot.pause()  # the Changed message handled
        assert _error(form).startswith("a full fine-tune of a 13B model")
        assert "the cheapest flavor that fits: h200" in _error(form)
        request, _ = form.read_request()
        assert (request.kind, request.full) == ("builder", True)
        await pilot.press("escape")


async def test_a_dpo_submission_is_preflighted_as_dpo_data_and_runs_the_dpo_recipe(backend, cfg):
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.refresher.refresh_count > 0)
        await pilot.press("s")
        await mounted_screen(pilot, SubmitScreen, what="the submit form")
        form = app.screen
        await type_into(pilot, form.query_one("#f-tenant", Input), "hooli")
        await type_into(pilot, form.query_one("#f-dataset", Input), HOOLI)
        await _pick(pilot, form, "f-kind", "dpo")
        await type_into(pilot, form.query_one("#f-max-steps", Input), "1")
        assert _error(form) == ""
        assert "preflight ~$0.01 (dpo data)" in _estimate(form)
        await pilot.press("ctrl+s")
        await mounted_screen(pilot, ConfirmScreen, what="the confirmation")
        shown = " ".join(str(s.render()) for s in app.screen.query("Static"))
        assert "dpo on" in shown and "it checks the dataset as dpo data" in shown
        await pilot.press("y")
        await wait_for(
            pilot,
            lambda: any(n.startswith("Submitted") for n in notes(app)),
            timeout=30,
            what="the submit notification",
        )
        jobs = {j.labels["kind"]: j for j in backend.api.list_jobs(namespace=backend.namespace)}
        assert sorted(jobs) == ["dpo", "validate"]
        check, train = jobs["validate"], jobs["dpo"]
        backend.api.cancel_job(job_id=train.id, namespace=backend.namespace)
        # the preflight checked the dataset as DPO pairs, and passed
        assert check.status.stage == "COMPLETED"
        assert jobspec.script_args_of(list(check.command))[-2:] == ["--method", "dpo"]
        assert f"{jobspec.TRAINING_MOUNT}/dpo_lora.py" in train.command
        # the jobs table shows both, each with its kind
        await wait_for(pilot, lambda: train.id in app.jobs_table.rows_by_id, what="the dpo row")
        assert app.jobs_table.rows_by_id[train.id].kind == "dpo"


STANDIN = "print('stand-in training run', flush=True)\n"


def _submit_kinds(backend, scripts) -> dict[str, object]:
    """One console job of every training kind, submitted as the console submits it (stand-in
    scripts), by tenant."""
    for script in set(SCRIPTS.values()):
        (scripts / script).write_text(STANDIN, encoding="utf-8")
    requests = [
        TrainingRequest(tenant="acme", dataset=str(DATA / "acme.jsonl")),
        TrainingRequest(tenant="hooli", dataset=HOOLI, kind="dpo"),
        TrainingRequest(tenant="vandelay", dataset=str(DATA / "vandelay.jsonl"), kind="kto"),
        TrainingRequest(tenant="tyrell", dataset=str(DATA / "tyrell.jsonl"), kind="embedding", encoder="cross"),
        TrainingRequest(tenant="massive", dataset=str(DATA / "massive.jsonl"), kind="grpo", rewards="numeric"),
        TrainingRequest(tenant="cyberdyne", dataset=str(DATA / "cyberdyne.jsonl"), kind="reward"),
        TrainingRequest(tenant="builder", dataset=str(DATA / "builder.jsonl"), kind="builder", full=True,
                        model_b=7.0, flavor="a100-large"),
    ]
    jobs = {}
    for request in requests:
        sub = jobspec.build_submission(request, backend_kind="local", script_dir=scripts)
        jobs[request.tenant] = backend.api.run_job(**ship(backend.api, sub, backend.namespace).run_kwargs(),
                                                     namespace=backend.namespace)
    return jobs


async def test_every_kind_in_the_jobs_table_and_the_fleet_pane_the_builder_its_own_row_last(
    backend, cfg, tmp_path
):
    jobs = _submit_kinds(backend, tmp_path)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.jobs_table
        await wait_for(pilot, lambda: all(j.id in table.rows_by_id for j in jobs.values()), what="every kind")
        await pilot.press("2")
        await pilot.pause()
        kinds = {tenant: table.get_cell(job.id, "kind").plain for tenant, job in jobs.items()}
        assert kinds == {"acme": "sft", "hooli": "dpo", "vandelay": "kto", "tyrell": "emb cross", "massive": "grpo",
                         "cyberdyne": "rwd", "builder": "bld"}
        # the embedding run's encoder, from its `encoder` label, said whole on the detail line
        table.move_cursor(row=table.get_row_index(jobs["tyrell"].id))
        await wait_for(pilot, lambda: "tyrell emb cross " in str(table.detail.render()), what="the detail line")

        await pilot.press("1")
        fleet = app.fleet_table
        await wait_for(pilot, lambda: fleet.row_count == 7, what="the fleet rows")
        cells = {t: fleet.get_cell(t, "kind").plain for t in jobs}
        assert cells == {"acme": "sft", "hooli": "dpo", "vandelay": "kto", "tyrell": "emb cross", "massive": "grpo",
                         "cyberdyne": "rwd", "builder": "bld full"}
        order = [fleet.get_row_at(i)[0].plain.strip() for i in range(fleet.row_count)]
        assert order == ["acme", "cyberdyne", "hooli", "massive", "tyrell", "vandelay", "builder"]  # builder last


async def test_the_what_if_names_the_flavors_that_fit_and_costs_the_builder_model(backend, cfg, tmp_path):
    from console.scenario import project
    from console.ui.screens.whatif import WhatIfScreen

    builder = TrainingRequest(tenant="builder", dataset=str(DATA / "builder.jsonl"), kind="builder", full=True,
                              model_b=7.0, examples=3000, epochs=1.0, flavor="a100-large")
    tenant = TrainingRequest(tenant="acme", dataset=str(DATA / "acme.jsonl"), model_b=3.0, flavor="a100-large")
    for request in (builder, tenant):
        sub = ship(backend.api, jobspec.build_submission(request, backend_kind="local"), backend.namespace)
        kwargs = sub.scheduled_kwargs("0 3 * * 1")
        kwargs.pop("name", None)
        backend.api.create_scheduled_job(**kwargs, namespace=backend.namespace)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(120, 50)) as pilot:
        await wait_for(pilot, lambda: len(app.refresher.scheduled) == 2, what="the schedules")
        await pilot.press("$")
        await wait_for(pilot, lambda: isinstance(app.screen, WhatIfScreen) and app.screen.is_mounted)
        screen = app.screen
        await wait_for(pilot, lambda: screen.result is not None)

        def notes() -> str:
            return str(screen.query_one("#whatif-notes").render())

        # the fleet's builder model: its own cost per run and per month, as `console whatif` shows it
        assert screen.result.scenario.builder is not None
        assert screen.query_one("#wi-builder-b", Input).value == "7"
        expected = project(screen.result.scenario, app.prices)
        assert screen.result.heuristic.builder_usd == pytest.approx(expected.builder_usd) and expected.builder_usd > 0
        assert "Builder: 7B full on a100-large" in notes() and f"${expected.builder_usd:,.2f}/month" in notes()
        assert "Builder does not fit" not in notes()  # a full 7B fine-tune fits 80 GB
        screen.query_one("#wi-builder-b", Input).value = "13"
        await wait_for(pilot, lambda: "Builder does not fit a100-large" in notes(), what="the builder's fit")
        assert "Builder does not fit a100-large: a full fine-tune of a 13B model" in notes()

        # a 3B LoRA on an A100: cheaper flavors whose GPU memory holds it are named
        screen.query_one("#wi-model-b", Input).value = "3"
        screen.query_one("#wi-flavor", Select).value = "a100-large"
        await wait_for(pilot, lambda: "Cheaper: " in notes(), what="the cheaper flavors")
        assert screen.result.cheaper and "Cheaper: " in notes() and "Memory: ~" in notes()
        shape = vram.RunShape(3.0)
        assert all(vram.fit(shape, app.prices.get(e.flavor)).fits for e in screen.result.cheaper)
        # an 8B LoRA does not fit a T4: said in red with the cheapest flavor that fits
        screen.query_one("#wi-model-b", Input).value = "8"
        screen.query_one("#wi-flavor", Select).value = "t4-small"
        await wait_for(pilot, lambda: "Does not fit t4-small" in notes(), what="the T4's fit")
        assert "Does not fit t4-small: LoRA of a 8B model" in notes()
        assert "the cheapest flavor that fits:" in notes()
        assert all(vram.fit(vram.RunShape(8.0), app.prices.get(e.flavor)).fits for e in screen.result.cheaper)
        await pilot.press("escape")

        # the Costs tab names the builder model's part of the schedules' remaining cost
        await pilot.press("3")

        def summary() -> str:
            return str(app.query_one("#ledger-summary").render())

        await wait_for(pilot, lambda: "builder model +$" in summary(), what="the builder in the costs summary")
        from console.money import remaining_firings

        runs = remaining_firings("0 3 * * 1", app.session.clock())
        assert f"builder model +${runs * expected.builder_per_run.cost_usd:,.2f}, {runs} run" in summary()


async def test_unsloth_from_the_form_fits_a_7b_lora_on_a_24_gb_flavor_and_halves_the_estimate(backend, cfg):
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.refresher.refresh_count > 0)
        await pilot.press("s")
        await mounted_screen(pilot, SubmitScreen, what="the submit form")
        form = app.screen
        await type_into(pilot, form.query_one("#f-tenant", Input), "stark")
        await type_into(pilot, form.query_one("#f-dataset", Input), str(DATA / "stark.jsonl"))
        await _pick(pilot, form, "f-kind", "sft")
        assert form.query_one("#row-unsloth").display  # a LoRA kind offers Unsloth
        await _pick(pilot, form, "f-flavor", "l4x1")
        await type_into(pilot, form.query_one("#f-model-b", Input), "7")
        assert "l4x1 has 24 GB" in _error(form)  # without Unsloth a 7B LoRA does not fit
        form.query_one("#f-unsloth", Checkbox).value = True
        await pilot.pause()  # the Changed message handled
        assert _error(form).strip() == ""
        request, _ = form.read_request()
        assert request.unsloth and request.kind == "sft"
        prices = shipped_price_book()
        submission = jobspec.build_submission(request, prices=prices)
        assert "--unsloth" in submission.command and submission.labels["unsloth"] == "1"
        plain = estimate_run(dataclasses.replace(request, unsloth=False).run_spec(), prices)
        assert submission.estimate_hours == pytest.approx(plain.hours / UNSLOTH_SPEEDUP)
        assert f"${submission.estimate_usd:.2f}" in _estimate(form)
        # an embedding run has no Unsloth box
        await _pick(pilot, form, "f-kind", "embedding")
        assert not form.query_one("#row-unsloth").display
