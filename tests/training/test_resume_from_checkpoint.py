"""A run killed mid-way (as a timeout kills a job: SIGKILL, no chance to clean up) keeps the
checkpoints it pushed to its branch, and a run started with `--resume-from` that run continues
from its last checkpoint (weights, optimizer, step count) and ends PASS at the full step count,
judged on the losses of the whole run (the checkpoint's log history and its own).
Real CPU runs of training/sft_lora.py against the embedded server's Hub, forked from one fork server
(one import of the training stack; the killed run is its forked child, killed by its pid)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import time

from huggingface_hub import HfApi
from training_helpers import SFT, hub_env, parse_fields, run, sft_hub_args

REPO = "ops/adapter-acme"
PROGRESS = re.compile(r"^progress step=(\d+)/(\d+) ")
LATE = 24  # of 30: the kill comes late, so the resumed run trains a few steps only


def _checkpoint_step(api: HfApi, branch: str) -> int | None:
    try:
        files = api.list_repo_files(REPO, revision=branch)
    except Exception:  # noqa: BLE001 - the branch is not there yet
        return None
    if "last-checkpoint/trainer_state.json" not in files:
        return None
    path = api.hf_hub_download(REPO, "last-checkpoint/trainer_state.json", revision=branch)
    with open(path, encoding="utf-8") as fh:
        return int(json.load(fh)["global_step"])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_killed_run_resumes_from_its_last_pushed_checkpoint_and_passes(hub, hub_forks, tmp_path):
    env = hub_env(tmp_path, hub)
    api = HfApi(endpoint=hub.url, token=hub.token)
    slow = {**env, "CONSOLE_STEP_DELAY_S": "0.4"}  # a slow GPU: the kill comes mid-run
    cut = hub_forks.start(SFT, sft_hub_args("acme-cut", REPO), slow)
    try:
        deadline = time.monotonic() + 180
        step = None
        while time.monotonic() < deadline and _alive(cut.pid):
            step = _checkpoint_step(api, "runs/acme-cut")
            if step and step >= LATE:
                break
            time.sleep(0.3)
        assert step and step >= LATE, f"no checkpoint from step {LATE} was pushed before the run ended"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(cut.pid, signal.SIGKILL)  # the timeout's kill
        killed = cut.wait()
    assert killed.returncode == -signal.SIGKILL
    assert "VERDICT" not in killed.stdout + killed.stderr  # killed: it never got to say anything
    assert step < 30

    resumed = hub_forks.run(SFT, sft_hub_args("acme-resumed", REPO, "--resume-from", "acme-cut"), env)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert resumed.last_line.startswith("VERDICT: PASS "), resumed.last_line
    assert parse_fields(resumed.last_line)["steps"] == "30"
    at = _checkpoint_step(api, "runs/acme-cut")
    assert f"resuming from acme-cut step={at}" in resumed.stdout
    steps = [int(m.group(1)) for m in map(PROGRESS.match, resumed.lines) if m]
    assert steps[0] == at + 1 and steps[-1] == 30  # the step count continues from the checkpoint
    # judged as the whole run: its own few steps alone are too flat to pass
    assert f"resumed history: {at} logged steps to step {at}" in resumed.stdout
    manifest = json.loads(open(api.hf_hub_download(REPO, "manifest.json"), encoding="utf-8").read())
    assert manifest["run_name"] == "acme-resumed" and manifest["resumed_from"] == "acme-cut"
    assert manifest["resumed_at_step"] == at


def test_resuming_a_run_with_nothing_pushed_is_refused_before_training(hub, tmp_path):
    env = hub_env(tmp_path, hub)
    result = run(SFT, sft_hub_args("acme-again", REPO, "--resume-from", "acme-never"), env)
    assert result.returncode == 2
    assert result.last_line.startswith("VERDICT: FAIL no_checkpoint: "), result.last_line
    assert "runs/acme-never" in result.last_line
