"""`console adapters TENANT`: a tenant's versions on the (local) Hub and the live one, promote
and roll back. Real runs: two of one tenant trained by the embedded server's jobs and pushed to
its Hub (one PASS, one FAIL, then a second PASS), read back through HfApi."""

from __future__ import annotations

import json
import os
from pathlib import Path

from huggingface_hub import HfApi
from tests.oncall.conftest import NAMESPACE

from console import cli, jobspec
from console.config import Config, save
from console.jobspec import TrainingRequest
from console.ship import ship

DATA = Path(__file__).resolve().parents[2] / "training" / "data"
REPO = f"{NAMESPACE}/adapter-acme"


def _train(server, api: HfApi, run_name: str, learning_rate: float) -> str:
    req = TrainingRequest(tenant="acme", dataset=str(DATA / "acme.jsonl"), max_steps=12,
                          learning_rate=learning_rate, lora_r=8, lora_alpha=16, hub_model_id=REPO,
                          run_name=run_name)
    sub = jobspec.build_submission(req, backend_kind="local", token=server.token)
    job = api.run_job(**ship(api, sub, NAMESPACE).run_kwargs(), namespace=NAMESPACE)
    api.wait_for_job(job.id, timeout=240, poll_interval=0.5, namespace=NAMESPACE)
    return job.id


def _adapters(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["adapters", "acme", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _live(api: HfApi) -> str | None:
    return {t.name: t.target_commit for t in api.list_repo_refs(REPO).tags}.get("live")


def test_versions_promote_refusals_roll_back_and_promote_on_one_tenants_runs(server, capsys):
    """One tenant's runs, trained once (they are the test's cost): its versions with their
    verdicts, the refusals, then a third run promoted, rolled back and promoted again."""
    save(Config(namespace=NAMESPACE, endpoint=server.url), os.environ["CONSOLE_CONFIG"])
    api = HfApi(endpoint=server.url, token=server.token)
    good = _train(server, api, "acme-good", 5e-3)
    bad = _train(server, api, "acme-dead", 1e3)
    _versions_list_both_runs_with_verdicts_and_the_live_tag_on_the_passing_one(api, good, bad, capsys)
    _a_failed_run_cannot_be_promoted_and_read_only_refuses(api, capsys)
    _roll_back_moves_live_to_the_earlier_version_and_promote_brings_it_back(api, server, capsys)


def _versions_list_both_runs_with_verdicts_and_the_live_tag_on_the_passing_one(api, good, bad, capsys):
    code, out, err = _adapters(capsys, "--repo", REPO, "--json")
    assert code == 0, err
    doc = json.loads(out)
    runs = {v["run"]: v for v in doc["versions"]}
    assert set(runs) == {"acme-good", "acme-dead"}
    assert runs["acme-good"]["verdict"] == "PASS" and runs["acme-good"]["where"] == "main"
    assert runs["acme-good"]["job_id"] == good and runs["acme-good"]["live"] is True
    assert runs["acme-good"]["last_loss"] < runs["acme-good"]["first_loss"]
    assert runs["acme-dead"]["verdict"] == "FAIL" and runs["acme-dead"]["failure"] == "zero_grad"
    assert runs["acme-dead"]["job_id"] == bad and runs["acme-dead"]["live"] is False
    assert runs["acme-dead"]["where"] == "runs/acme-dead"
    assert doc["live_commit"] == runs["acme-good"]["commit"] == _live(api)

    code, out, _ = _adapters(capsys, "--repo", REPO)
    assert code == 0
    first = out.splitlines()[0]
    assert first.startswith(f"{REPO}  live (live): {runs['acme-good']['commit'][:8]} acme-good PASS")
    assert any(line.startswith("* ") and "acme-good" in line for line in out.splitlines())


def _a_failed_run_cannot_be_promoted_and_read_only_refuses(api, capsys):
    live = _live(api)
    code, _, err = _adapters(capsys, "--repo", REPO, "--promote", "acme-dead", "--yes")
    assert code == 2 and "acme-dead" in err and "cannot be live" in err and "FAIL (zero_grad)" in err
    code, _, err = cli.main(["--read-only", "adapters", "acme", "--repo", REPO, "--rollback", "--yes"]), None, None
    err = capsys.readouterr().err
    assert code == 2 and "read-only" in err
    assert _live(api) == live


def _roll_back_moves_live_to_the_earlier_version_and_promote_brings_it_back(api, server, capsys):
    first_live = _live(api)
    _train(server, api, "acme-better", 5e-3)
    assert _live(api) == first_live  # manual policy: the new pass is on main, not live

    code, out, err = _adapters(capsys, "--repo", REPO, "--promote", "acme-better", "--yes")
    assert code == 0, err
    assert "live -> " in out and "acme-better PASS" in out
    better = _live(api)
    assert better != first_live

    code, out, err = _adapters(capsys, "--repo", REPO, "--rollback", "--yes")
    assert code == 0, err
    assert _live(api) == first_live  # `hf repos` / list_repo_refs shows the tag moved back
    assert "acme-good PASS" in out

    # without a terminal and without --yes nothing moves, and the question names both versions
    code, _, err = _adapters(capsys, "--repo", REPO, "--promote", "acme-better")
    assert code == 2 and "acme-good PASS" in err and "acme-better PASS" in err and "--yes" in err
    assert _live(api) == first_live
