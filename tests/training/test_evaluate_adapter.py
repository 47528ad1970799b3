"""Evaluation-gated promotion (`--promote on_eval`): a passing run lands on main and leaves `live`
to training/evaluate_adapter.py, which scores it and the live adapter on the tenant's rows and
moves `live` only when the new one's loss is lower by the margin; the record (`evaluation.json`
on the run's branch) gives both scores, and the versions view (`console.adapters`) shows them.

Real CPU runs of sft_lora.py pushing to one repo of the embedded server's Hub: a first run (made
live: nothing was), a worse one (a few steps at a low learning rate: it passes its own verdict,
and scores worse), kept out of live, then a better one (more steps), promoted.
"""

from __future__ import annotations

import json

import pytest
from huggingface_hub import HfApi
from training_helpers import DATA, SFT, TRAINING, hub_env, parse_fields, run, sft_hub_args

from console.adapters import list_versions

REPO = "ops/adapter-acme"
EVALUATE = TRAINING / "evaluate_adapter.py"


def _live(api: HfApi) -> str | None:
    return {t.name: t.target_commit for t in api.list_repo_refs(REPO).tags}.get("live")


def _evaluate(run_name: str, env, *extra: str):
    return run(EVALUATE, ["--hub-model-id", REPO, "--candidate", run_name, "--dataset",
                                 str(DATA / "acme.jsonl"), "--method", "sft", "--max-length", "256", *extra], env)


def _train(run_name: str, env, **kw):
    done = run(SFT, sft_hub_args(run_name, REPO, "--promote", "on_eval", **kw), env)
    assert done.returncode == 0 and done.last_line.startswith("VERDICT: PASS "), (
        done.stdout[-3000:] + done.stderr[-2000:])
    return done


@pytest.mark.timeout(900)  # five real runs of a few seconds each, each paying its imports
def test_a_worse_run_stays_out_of_live_and_a_better_one_is_promoted(hub, tmp_path):
    env = hub_env(tmp_path, hub)
    api = HfApi(endpoint=hub.url, token=hub.token)

    _train("acme-first", env, learning_rate="5e-3", max_steps=20)
    first = _live(api)
    assert first is not None  # nothing was live: the first passing run is, on_eval or not

    worse = _train("acme-worse", env, learning_rate="2e-3", max_steps=8)
    assert "live tag live left where it is until the evaluation (promote=on_eval)" in worse.stdout
    assert _live(api) == first

    kept = _evaluate("acme-worse", env)
    assert kept.returncode == 0, kept.stdout[-3000:] + kept.stderr[-3000:]
    fields = parse_fields(kept.last_line)
    assert fields["promoted"] == "no" and fields["live_run"] == "acme-first", kept.last_line
    assert float(fields["candidate_loss"]) > float(fields["live_loss"])
    assert _live(api) == first  # the worse adapter is not served

    versions = list_versions(api, REPO)
    cand = versions.find("acme-worse")
    assert cand is not None and cand.evaluation is not None
    assert cand.evaluation["promoted"] is False
    text = cand.evaluated()
    assert "kept" in text and fields["candidate_loss"][:5] in text and fields["live_loss"][:5] in text
    assert versions.live is not None and versions.live.run == "acme-first"

    _train("acme-better", env, learning_rate="5e-3", max_steps=40)
    assert _live(api) == first
    promoted = _evaluate("acme-better", env)
    assert promoted.returncode == 0, promoted.stdout[-3000:] + promoted.stderr[-3000:]
    fields = parse_fields(promoted.last_line)
    assert fields["promoted"] == "yes", promoted.last_line
    assert float(fields["candidate_loss"]) < float(fields["live_loss"])
    versions = list_versions(api, REPO)
    assert versions.live is not None and versions.live.run == "acme-better"
    assert "promoted" in versions.live.evaluated()
    path = api.hf_hub_download(REPO, "evaluation.json", revision="runs/acme-better", cache_dir=str(tmp_path / "dl"))
    with open(path, encoding="utf-8") as fh:
        record = json.load(fh)
    assert record["promoted"] is True and record["live"]["run"] == "acme-first"
    assert record["candidate"]["loss"] < record["live"]["loss"]
