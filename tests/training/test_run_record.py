"""A run's record on its Hub branch: the dataset and base model revisions it trained on, each
checkpoint pushed whole (weights, last-checkpoint/ and the manifest in one commit), and a run that
failed on NaN not offered for resume, by the recipe or by the console.

Real CPU runs of training/sft_lora.py (not forked: the fork server's Hub client is offline)
against the embedded server's Hub, which holds the tenant's dataset as a dataset repo: a run
passes on its first export, then a job of the server on the "nightly export" commit goes NaN."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from huggingface_hub import HfApi
from training_helpers import DATA, SFT, hub_env, run, sft_hub_args

from console import jobspec
from console.adapters import last_checkpoint
from console.backend import connect
from console.config import Config, ServerSettings
from console.jobspec import TrainingRequest
from console.oncall.incident import gather, render
from console.run_record import read_record
from console.ship import ship
from console.ui.reasons import _with_dataset_change

REPO = "ops/adapter-acme"
DATASET = "ops/acme"
STEP = re.compile(r"\bstep (\d+)\b")


def _json(api: HfApi, name: str, revision: str) -> dict:
    with open(api.hf_hub_download(REPO, name, revision=revision), encoding="utf-8") as fh:
        return json.load(fh)


def _export(api: HfApi, text: str, title: str) -> str:
    return api.upload_file(path_or_fileobj=text.encode(), path_in_repo="acme.jsonl", repo_id=DATASET,
                           repo_type="dataset", commit_message=title).oid


@pytest.fixture
def backend():
    """The embedded server with its Jobs API (namespace `ops`): the NaN run is one of its jobs."""
    b = connect(Config(namespace="ops", plan="pro", server=ServerSettings(max_running_jobs=2)))
    try:
        yield b
    finally:
        b.close()


def test_runs_record_their_revisions_push_whole_checkpoints_and_a_nan_run_is_not_resumed(backend, tmp_path):
    api, ns = backend.api, backend.namespace
    env = hub_env(tmp_path, SimpleNamespace(url=backend.url, token=api.token))
    api.create_repo(DATASET, repo_type="dataset")
    rows = (DATA / "acme.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    first = _export(api, "".join(rows), "first export")

    good = run(SFT, sft_hub_args("acme-good", REPO, "--dataset", DATASET, max_steps=10), env)
    assert good.last_line.startswith("VERDICT: PASS "), good.stdout[-3000:] + good.stderr[-3000:]
    landed = _json(api, "manifest.json", "main")
    assert landed["dataset_revision"] == first and landed["dataset_commit"]["title"] == "first export"
    assert landed["base_model_revision"] is None  # the tiny random base has no repo

    nightly = _export(api, "".join(rows[:-20]), "nightly export")
    req = TrainingRequest(tenant="acme", dataset=DATASET, max_steps=10, learning_rate=5e-3, lora_r=8, lora_alpha=16,
                          hub_model_id=REPO, run_name="acme-nan", timeout_seconds=600,
                          extra_env={"CONSOLE_INJECT_NAN_AT_STEP": "6"})
    sub = jobspec.build_submission(req, backend_kind="local", token=api.token)
    job = api.run_job(**ship(api, sub, ns).run_kwargs(), namespace=ns)
    done = api.wait_for_job(job.id, timeout=400, poll_interval=0.5, namespace=ns)
    logs = list(api.fetch_job_logs(job_id=job.id, namespace=ns))
    assert logs[-1].startswith("VERDICT: FAIL nan_loss"), "\n".join(logs[-40:])
    assert any(line.startswith(f"trained on dataset={DATASET}@{nightly} ") for line in logs)
    record = _json(api, "manifest.json", "runs/acme-nan")
    assert record["run_name"] == "acme-nan" and record["dataset_revision"] == nightly
    assert record["not_resumable"].startswith("its loss went NaN")

    # every commit of the branch that names a step holds the full checkpoint of that step
    pushed = [c for c in api.list_repo_commits(REPO, revision="runs/acme-nan") if STEP.search(c.title)]
    assert pushed, [c.title for c in api.list_repo_commits(REPO, revision="runs/acme-nan")]
    for commit in pushed:
        files = api.list_repo_files(REPO, revision=commit.commit_id)
        assert "last-checkpoint/trainer_state.json" in files, (commit.title, files)
        state = _json(api, "last-checkpoint/trainer_state.json", commit.commit_id)
        assert state["global_step"] == int(STEP.search(commit.title).group(1)), commit.title
        assert _json(api, "manifest.json", commit.commit_id)["checkpoint_step"] == state["global_step"]

    # the console: what changed since the last PASS (the why-failed text, the incident bundle),
    # and no resume offered
    change = read_record(api, REPO, "acme-nan").dataset_change()
    expected = f'dataset changed since the last PASS ({nightly[:8]} "nightly export", '
    assert change is not None and change.startswith(expected), change
    assert _with_dataset_change(api, done, "FAIL nan_loss") == f"FAIL nan_loss; {change}"
    bundle = render(gather(api, job.id, namespace=ns))
    assert f"- **{change}**" in bundle and f"- Trained on: dataset {DATASET} @ {nightly[:8]} " in bundle
    assert "- Not resumable: its loss went NaN" in bundle and "Resume from it" not in bundle
    assert read_record(api, REPO, "acme-good") is not None
    checkpoint = last_checkpoint(api, REPO, "acme-nan")
    assert checkpoint is not None and 0 < checkpoint.step <= 6  # the step that went NaN is saved too
    assert checkpoint.refused and checkpoint.refused.startswith("its loss went NaN")

    again = run(SFT, sft_hub_args("acme-again", REPO, "--dataset", DATASET, "--resume-from", "acme-nan",
                                  max_steps=10), env)
    assert again.returncode == 2, again.stdout[-3000:]
    assert again.last_line.startswith("VERDICT: FAIL not_resumable: run acme-nan failed nan_loss: its loss went NaN")
