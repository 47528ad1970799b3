"""`R` on a run killed by its timeout offers to resume it from the last checkpoint it pushed, with
a timeout for what is left (the rule in words) and its cost; the resumed run ends PASS with its step
count continuing from the checkpoint. Until then the killed run's version shows its own progress
(the steps it reached, its last checkpoint), not the figures of the passing run before it. A real
run on the embedded server, pushing to its Hub, stalled after its first checkpoint (as on a GPU that
hung) so that its timeout kills it mid-way however long its set-up took."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.jobwait import STALLED_TIMEOUT_S, stalled_after_checkpoint
from tests.ui.conftest import wait_for, wait_thread

from console import jobspec
from console.adapters import last_checkpoint, list_versions
from console.jobspec import TrainingRequest
from console.ledger import timed_out
from console.oncall.incident import gather, render
from console.ship import ship
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.versions import version_cells

DATA = Path(__file__).resolve().parents[2] / "training" / "data"
PROGRESS = re.compile(r"^progress step=(\d+)/(\d+) ")


async def test_r_resumes_a_timed_out_run_from_its_checkpoint_and_it_passes(backend, cfg):
    api, ns = backend.api, backend.namespace
    repo = f"{ns}/adapter-acme"
    stall, hold = stalled_after_checkpoint("acme", "resume-timed-out")
    req = TrainingRequest(tenant="acme", dataset=str(DATA / "acme.jsonl"), max_steps=40, learning_rate=5e-3,
                          lora_r=8, lora_alpha=16, hub_model_id=repo, run_name="acme-slow",
                          timeout_seconds=STALLED_TIMEOUT_S, extra_env=stall)
    # a previous passing run on main: the killed run's branch opens from it
    api.create_repo(repo, private=True)
    old = {"run_name": "acme-old", "verdict": "PASS", "steps": 99, "first_loss": 9.5, "last_loss": 1.5}
    api.upload_file(repo_id=repo, path_or_fileobj=json.dumps(old).encode(), path_in_repo="manifest.json",
                    commit_message="acme-old: PASS run=acme-old steps=99")
    sub = jobspec.build_submission(req, backend_kind="local", token=api.token)
    job = api.run_job(**ship(api, sub, ns).run_kwargs(), namespace=ns)
    done = await wait_thread(api.wait_for_job, job.id, timeout=STALLED_TIMEOUT_S + 120, poll_interval=0.5,
                             namespace=ns)
    assert timed_out(done), done.status
    checkpoint = last_checkpoint(api, repo, "acme-slow")
    assert checkpoint is not None and 0 < checkpoint.step < 40 and checkpoint.steps_total == 40, \
        "\n".join(list(api.fetch_job_logs(job_id=job.id, namespace=ns))[-30:])
    hold.unlink()  # the GPU is back: the resumed run goes at full speed
    # the killed run shows its own progress, not the figures of the run before it
    killed = list_versions(api, repo).find("acme-slow")
    assert killed is not None and killed.verdict == "partial" and killed.first_loss is None
    assert (killed.steps, killed.steps_total, killed.checkpoint_step) == (checkpoint.step, 40, checkpoint.step)
    assert version_cells(killed)[1] == f"partial {checkpoint.step}/40"
    assert killed.progress() == f"step {checkpoint.step}/40, checkpoint {checkpoint.step}"
    assert killed.dataset_revision and killed.dataset_revision.startswith("sha256:")
    bundle = render(gather(api, job.id, namespace=ns))  # the incident bundle names it
    assert f"- Last checkpoint: step {checkpoint.step}/40 at hf://{repo}@runs/acme-slow/last-checkpoint" in bundle
    assert f"- Trained on: dataset {DATA / 'acme.jsonl'} @ sha256:" in bundle and "Resume from it" in bundle

    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: job.id in app.jobs_table.rows_by_id)
        app.jobs_table.select_job(job.id)
        before = {j.id for j in api.list_jobs(namespace=ns)}
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.is_mounted, timeout=30)
        screen = app.screen
        assert f"Resume job {job.id} from step {checkpoint.step}?" in screen.title_text
        text = "\n".join(screen.details)
        assert f"resumes acme-slow (killed by its timeout) from its last checkpoint: step {checkpoint.step}/40" in text
        assert "what is left:" in text and "timeout (" in text and "set-up and push" in text
        await pilot.press("y")
        await wait_for(pilot, lambda: {j.id for j in api.list_jobs(namespace=ns)} - before, timeout=30)
    (new_id,) = {j.id for j in api.list_jobs(namespace=ns)} - before
    resumed = await wait_thread(api.wait_for_job, new_id, timeout=240, poll_interval=0.5, namespace=ns)
    logs = list(api.fetch_job_logs(job_id=new_id, namespace=ns))
    assert resumed.status.stage == "COMPLETED", "\n".join(logs[-40:])
    assert logs[-1].startswith("VERDICT: PASS ") and " steps=40 " in logs[-1], logs[-1]
    at = last_checkpoint(api, repo, "acme-slow").step
    assert f"resuming from acme-slow step={at}" in "\n".join(logs)
    steps = [int(m.group(1)) for m in map(PROGRESS.match, logs) if m]
    assert steps[0] == at + 1 and steps[-1] == 40
    # the resumed run's timeout covers what is left, never the one that killed the first run
    assert jobspec.read_request(api.inspect_job(job_id=new_id, namespace=ns)).resume_from == "acme-slow"
