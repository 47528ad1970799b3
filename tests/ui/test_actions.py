"""Actions against the real embedded server: submit, cancel, reschedule, ssh, read-only."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

from tests.jobwait import wait_stage
from tests.ui.conftest import (
    console_labels,
    notes,
    raw_job,
    run_python,
    schedule_python,
    shown,
    type_into,
    wait_for,
    wait_thread,
)
from textual.widgets import Input

from console import jobspec, paths
from console.costs import RunSpec, estimate_run
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.reschedule import RescheduleScreen
from console.ui.screens.submit import SubmitScreen


async def test_cancel_asks_then_the_job_ends_canceled(backend, cfg):
    job = run_python(backend, "import time\nprint('working', flush=True)\ntime.sleep(60)")
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(
            pilot,
            lambda: (
                job.id in app.jobs_table.rows_by_id
                and app.jobs_table.rows_by_id[job.id].stage == "RUNNING"
            ),
        )
        app.jobs_table.select_job(job.id)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.is_mounted)
        shown = " ".join(str(s.render()) for s in app.screen.query("Static"))
        assert job.id in shown and "acme" in shown and "cost so far" in shown
        await pilot.press("n")  # first: say no, nothing happens
        await wait_for(pilot, lambda: "Cancel: not done" in notes(app), what="the refusal")
        assert not isinstance(app.screen, ConfirmScreen)
        assert not [w for w in app.workers if w.group == "actions"]  # no cancel was sent
        assert (
            backend.api.inspect_job(job_id=job.id, namespace=backend.namespace).status.stage
            == "RUNNING"
        )
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.is_mounted)
        await pilot.press("y")
        await wait_thread(wait_stage, backend, job.id, ("CANCELED",), 20)
        await wait_for(pilot, lambda: app.jobs_table.rows_by_id[job.id].stage == "CANCELED")
        assert any("Canceled" in n for n in notes(app))


async def test_submit_creates_a_job_with_the_padded_timeout_and_labels(backend, cfg):
    dataset = str(paths.training_dir() / "data" / "acme.jsonl")
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.refresher.refresh_count > 0)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen.is_mounted
                                      and bool(app.screen.query("#f-tenant")))
        form = app.screen
        await type_into(pilot, form.query_one("#f-tenant", Input), "acme")
        await type_into(pilot, form.query_one("#f-dataset", Input), dataset)
        await type_into(pilot, form.query_one("#f-examples", Input), "abc")
        await wait_for(pilot, lambda: "not a whole number" in str(form.query_one("#submit-error").render()),
                       what="the refusal in the form")
        assert "not a whole number" in str(form.query_one("#submit-error").render())
        await pilot.press("ctrl+s")  # refused in the form, with the reason
        await pilot.pause()  # the refusal handled
        assert isinstance(app.screen, SubmitScreen)
        await type_into(pilot, form.query_one("#f-examples", Input), "400")
        await type_into(pilot, form.query_one("#f-max-steps", Input), "2")
        await wait_for(pilot, lambda: "x 1.3" in str(form.query_one("#submit-estimate").render()), what="the estimate")
        estimate = str(form.query_one("#submit-estimate").render())
        assert "$" in estimate and "x 1.3" in estimate
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.is_mounted)
        await pilot.press("y")
        await wait_for(
            pilot,
            lambda: any(n.startswith("Submitted") for n in notes(app)),
            timeout=20,
            what="the submit notification",
        )
    # the dataset preflight (on by default) ran first; the training job was submitted once it passed
    jobs = {j.labels["kind"]: j for j in backend.api.list_jobs(namespace=backend.namespace)}
    assert sorted(jobs) == ["sft", "validate"]
    check, train = jobs["validate"], jobs["sft"]
    assert check.status.stage == "COMPLETED" and check.flavor == "cpu-basic"
    assert check.created_at < train.created_at
    raw = raw_job(backend, train.id)
    expected = estimate_run(
        RunSpec(1.0, 400, 3.0, cfg.defaults.flavor, max_steps=2), timeout_buffer=cfg.defaults.timeout_buffer
    ).timeout_seconds  # the 2 steps typed, of 4 examples each
    assert raw["timeoutSeconds"] == expected
    labels = raw["labels"]
    for key, value in {
        "app": "console",
        "tenant": "acme",
        "env": cfg.defaults.env,
        "kind": "sft",
        "model_b": "1",
        "examples": "400",
        "epochs": "3",
        "unsloth": "0",
    }.items():
        assert labels[key] == value
    assert labels["run"].startswith("acme-sft-")
    assert all(len(v) <= 63 for v in labels.values())
    # shipped as HF would run it: the recipe from the mounted bundle, no path of this machine in the job
    assert raw["command"][:3] == ["uv", "run", f"{jobspec.TRAINING_MOUNT}/sft_lora.py"]
    # and the dataset file typed, shipped too: mounted read-only where its folder is, holding it alone
    assert [v["mountPath"] for v in raw["volumes"]] == [jobspec.TRAINING_MOUNT, str(Path(dataset).parent)]
    assert raw["volumes"][1]["readOnly"] and raw["volumes"][1]["path"].startswith("datasets/")
    shipped = [arg for arg in raw["command"] if arg != dataset]  # the file typed is the user's own
    assert str(paths.training_dir()) not in json.dumps([shipped, raw.get("environment")])
    backend.api.cancel_job(job_id=train.id, namespace=backend.namespace)


async def test_reschedule_changes_the_cron_and_the_preview(backend, cfg):
    sj = schedule_python(backend)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, start_tab="fleet", stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: "acme" in app.fleet_table.rows_by_tenant)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, RescheduleScreen) and app.screen.is_mounted)
        preview = lambda: str(app.screen.query_one("#cron-preview").render())  # noqa: E731
        assert "Monday" in preview() and "next:" in preview()
        box = app.screen.query_one("#cron-input", Input)
        await type_into(pilot, box, "0 3 * * 9")
        await wait_for(pilot, lambda: "is not a valid cron expression" in preview(), what="the refusal")
        assert preview() == "cron '0 3 * * 9' is not a valid cron expression"  # no day 9
        await type_into(pilot, box, "15 6 * * 2")
        await wait_for(pilot, lambda: "06:15" in preview(), what="the new schedule's preview")
        assert "06:15" in preview() and "Tuesday" in preview()
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("Rescheduled" in n for n in notes(app)))
        await wait_for(
            pilot, lambda: app.fleet_table.rows_by_tenant["acme"].schedule == "15 6 * * 2"
        )
    info = backend.api.inspect_scheduled_job(scheduled_job_id=sj.id, namespace=backend.namespace)
    assert info.schedule == "15 6 * * 2"


async def test_suspend_resume_and_trigger(backend, cfg):
    sj = schedule_python(backend, "print('triggered')")
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, start_tab="fleet", stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: "acme" in app.fleet_table.rows_by_tenant)
        await pilot.press("p")
        await wait_for(pilot, lambda: app.fleet_table.rows_by_tenant["acme"].suspended)
        await pilot.press("p")
        await wait_for(pilot, lambda: not app.fleet_table.rows_by_tenant["acme"].suspended)
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.is_mounted)
        await pilot.press("y")
        await wait_for(
            pilot, lambda: app.fleet_table.rows_by_tenant["acme"].last_job_id is not None
        )
    jobs = list(backend.api.list_jobs(namespace=backend.namespace))
    assert len(jobs) == 1 and jobs[0].labels["tenant"] == "acme"
    assert sj.id


async def test_read_only_refuses_every_action(backend, cfg):
    cfg.read_only = True
    job = run_python(backend, "import time; time.sleep(30)", ssh=True)
    schedule_python(backend)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: job.id in app.jobs_table.rows_by_id and app.refresher.fleet_rows)
        app.jobs_table.select_job(job.id)
        for key in ("s", "c", "x", "r", "p", "t", "R"):
            before = len(shown(app))
            await pilot.press(key)
            await wait_for(pilot, lambda before=before: len(shown(app)) > before,
                           what=f"the answer to {key}")
            assert app.screen is app.screen_stack[0], f"{key} opened a screen in read-only mode"
            assert len(shown(app)) == before + 1
            assert "Read-only" in notes(app)[-1]
        assert "READ-ONLY" in str(app.query_one("#status-line").render())
    assert [j.id for j in backend.api.list_jobs(namespace=backend.namespace)] == [job.id]
    assert (
        backend.api.inspect_job(job_id=job.id, namespace=backend.namespace).status.stage
        == "RUNNING"
    )


async def test_x_hands_the_terminal_to_ssh_into_the_job_and_the_app_resumes(backend, cfg, tmp_path, monkeypatch):
    """`x` runs the system ssh client on the job's ssh URL, as `hf jobs ssh` does (the embedded
    server's ssh is tested with the real client in tests/server/test_expose_and_ssh.py)."""
    out = tmp_path / "ssh.out"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "ssh"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {out}\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    job = backend.api.run_job(
        image="python:3.12",
        command=[sys.executable, "-c", "import time; time.sleep(60)"],
        labels=console_labels("acme"),
        ssh=True,
        flavor="t4-small",
        namespace=backend.namespace,
    )
    plain = run_python(backend, "import time; time.sleep(60)", tenant="globex")
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.jobs_table
        await wait_for(
            pilot,
            lambda: all(
                j in table.rows_by_id
                and table.rows_by_id[j].stage == "RUNNING"
                and (j != job.id or table.rows_by_id[j].ssh_url)
                for j in (job.id, plain.id)
            ),
        )
        table.select_job(plain.id)
        await pilot.press("x")
        await wait_for(pilot, lambda: "without ssh" in notes(app)[-1])
        table.select_job(job.id)
        await pilot.press("x")
        await wait_for(pilot, lambda: out.exists() and any("Back from" in n for n in notes(app)))
        url = table.rows_by_id[job.id].ssh_url
        assert url.startswith(f"ssh://{job.id}@127.0.0.1:")
        argv = out.read_text().splitlines()
        assert argv[-1] == url and argv[argv.index("-i") + 1] == str(paths.server_ssh_key_path())
        assert app.screen is app.screen_stack[0] and app.is_running
        count = app.refresher.refresh_count
        await wait_for(pilot, lambda: app.refresher.refresh_count > count)  # refreshes go on


async def test_hub_jobs_of_older_consoles_are_kept_without_their_shipped_script(backend, cfg):
    """Hub jobs submitted by older consoles carry their scripts in their environment; the console
    reads the job's request and shows the tenant, but does not keep 49 KB of script per job."""
    from console import jobspec
    from console.ship import ship

    request = jobspec.TrainingRequest(
        tenant="acme", dataset="ops/acme-chats", base_model="Qwen/Qwen3-0.6B", model_b=1.0, examples=500,
        epochs=1.0, flavor="l4x1", env="prod", hub_model_id="ops/adapter-acme",
    )
    sub = jobspec.build_submission(request, backend_kind="hub", token="hf_not_a_real_token")
    sub = ship(backend.api, sub, backend.namespace)
    old_env = {jobspec.SCRIPT_ENV: "H4sI" + "A" * 49_000}  # what an older console's job carried
    kwargs = {**sub.scheduled_kwargs("0 3 * * 1", suspend=True), "env": old_env}
    kwargs.pop("name", None)
    sj = backend.api.create_scheduled_job(**kwargs, namespace=backend.namespace)
    job = backend.api.run_job(
        image="python:3.12",
        command=[sys.executable, "-c", "print('done')"],
        env=old_env,
        flavor="t4-small",
        labels={**sub.labels, "tenant": "globex"},
        namespace=backend.namespace,
    )
    assert jobspec.SCRIPT_ENV in raw_job(backend, job.id)["environment"]
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, start_tab="fleet", stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: "acme" in app.fleet_table.rows_by_tenant
                       and "globex" in app.fleet_table.rows_by_tenant and app.refresher.job_row(job.id))
        row = app.fleet_table.rows_by_tenant["acme"]
        assert row.request.dataset == "ops/acme-chats" and row.flavor == "l4x1" and row.suspended
        kept = app.refresher.job_info(job.id)  # finished: from the cache, as it was kept
        assert jobspec.SCRIPT_ENV not in (kept.environment or {})
        assert app.fleet_table.rows_by_tenant["globex"].request == jobspec.read_request(kept) is not None
        assert jobspec.SCRIPT_ENV not in (getattr(app.refresher.scheduled[sj.id].job_spec, "environment", None) or {})
        assert jobspec.read_request(app.refresher.scheduled[sj.id]).dataset == "ops/acme-chats"
