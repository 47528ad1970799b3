"""Where a run's weights land on the Hub: each run pushes its checkpoints to a branch of its own
(`runs/<run name>`), only a passing run's final adapter lands on `main`, where serving reads, and
the `live` tag moves by the promotion policy.

Real CPU runs of training/sft_lora.py (forked from one fork server: one import of the training stack)
pushing to one model repo on the embedded server through
`HF_ENDPOINT`, in turn: one that passes (the first passing run becomes live), one that fails (a
dead learning rate) after pushing checkpoints, whose checkpoints stay on its branch while `main`
and `live` keep the passing adapter, then a passing run under the manual policy (main moves, live
stays) and one under `on_pass` (live follows).
"""

from __future__ import annotations

import json

import pytest
from huggingface_hub import HfApi, hf_hub_download
from training_helpers import SFT, hub_env, parse_fields, sft_hub_args

REPO = "ops/adapter-acme"


def _file(hub, name: str, tmp_path, revision: str = "main") -> bytes:
    path = hf_hub_download(REPO, name, revision=revision, endpoint=hub.url, token=hub.token,
                           cache_dir=tmp_path / "dl" / revision.replace("/", "_"))
    with open(path, "rb") as fh:
        return fh.read()


def _live(api: HfApi) -> str | None:
    return {t.name: t.target_commit for t in api.list_repo_refs(REPO).tags}.get("live")


def _main(api: HfApi) -> str:
    return {b.name: b.target_commit for b in api.list_repo_refs(REPO).branches}["main"]


@pytest.mark.timeout(600)  # four real runs pushing to the Hub: about 5 minutes under coverage on a loaded machine
def test_runs_land_on_their_branches_main_keeps_the_passing_adapter_and_live_follows_the_policy(
    hub, hub_forks, tmp_path
):
    env = hub_env(tmp_path, hub)
    run = hub_forks.run
    api = HfApi(endpoint=hub.url, token=hub.token)

    good = run(SFT, sft_hub_args("acme-good", REPO, learning_rate="5e-3", max_steps=12), env)
    assert good.returncode == 0, good.stdout[-3000:] + good.stderr[-3000:]
    assert good.last_line.startswith("VERDICT: PASS "), good.last_line
    assert parse_fields(good.last_line)["adapter"] == f"hf://{REPO}"
    said = [line for line in good.lines if line.startswith(("pushing ", "landed ", "saved ", "live tag "))]
    assert said[0] == f"pushing adapter to hf://{REPO} (branch runs/acme-good, then main)"  # where it goes, first
    assert said[1].startswith("landed adapter on main commit=") and said[-1] == f"saved adapter=hf://{REPO}"

    passing_adapter = _file(hub, "adapter_model.safetensors", tmp_path)
    manifest = json.loads(_file(hub, "manifest.json", tmp_path))
    assert manifest["run_name"] == "acme-good" and manifest["verdict"] == "PASS"
    branches = {b.name for b in api.list_repo_refs(REPO).branches}
    assert {"main", "runs/acme-good"} <= branches
    # the passing run's own branch holds what it pushed, checkpoints included
    good_commits = [c.title for c in api.list_repo_commits(REPO, revision="runs/acme-good")]
    assert any("checkpoint" in t.lower() or "training in progress" in t.lower() for t in good_commits), good_commits
    assert _live(api) == _main(api)  # nothing was live: the first passing run is
    live = _live(api)

    bad = run(SFT, sft_hub_args("acme-dead", REPO, "--promote", "on_pass", learning_rate="1e3", max_steps=12), env)
    assert bad.returncode == 1, bad.stdout[-3000:] + bad.stderr[-3000:]
    assert bad.last_line.startswith("VERDICT: FAIL zero_grad: "), bad.last_line

    # main: still the passing run's adapter and manifest
    assert _file(hub, "adapter_model.safetensors", tmp_path / "after") == passing_adapter
    assert json.loads(_file(hub, "manifest.json", tmp_path / "after"))["run_name"] == "acme-good"
    main_titles = [c.title for c in api.list_repo_commits(REPO)]
    assert not any("acme-dead" in t for t in main_titles), main_titles
    # the failed run's checkpoints were pushed (kept for a look or a resume), on its branch only,
    # with its manifest saying it failed
    assert "runs/acme-dead" in {b.name for b in api.list_repo_refs(REPO).branches}
    dead = json.loads(_file(hub, "manifest.json", tmp_path, revision="runs/acme-dead"))
    assert dead["run_name"] == "acme-dead" and dead["verdict"] == "FAIL" and dead["failure"].startswith("zero_grad: ")
    dead_files = api.list_repo_files(REPO, revision="runs/acme-dead")
    assert "adapter_model.safetensors" in dead_files
    assert _file(hub, "adapter_model.safetensors", tmp_path, revision="runs/acme-dead") != passing_adapter
    assert _live(api) == live == _main(api)  # a failed run never becomes live, even on_pass

    manual = run(SFT, sft_hub_args("acme-manual", REPO, learning_rate="5e-3", max_steps=12), env)
    assert manual.returncode == 0, manual.stdout[-3000:]
    assert _main(api) != live and _live(api) == live  # main moved on, live stays where it was
    assert "live tag live left where it is (promote=manual)" in manual.stdout

    on_pass = run(SFT, sft_hub_args("acme-on-pass", REPO, "--promote", "on_pass", learning_rate="5e-3",
                                    max_steps=12), env)
    assert on_pass.returncode == 0, on_pass.stdout[-3000:]
    assert _live(api) == _main(api) != live
    live_manifest = json.loads(_file(hub, "manifest.json", tmp_path, revision="live"))
    assert live_manifest["run_name"] == "acme-on-pass" and live_manifest["verdict"] == "PASS"
