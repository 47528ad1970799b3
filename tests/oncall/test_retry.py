"""Retry with resume: a run killed by its timeout is resumed by the watching console from its last
pushed checkpoint, once, and ends PASS, the retry named in the notifications, the fleet and the
ledger (a real tiny training run on the embedded server, stalled after its first checkpoint as on a
GPU that hung). A run that failed its own way (a FAIL verdict), one its manifest calls not
resumable, and one whose retries are used up or would cost more than its cap are not retried; two
consoles that retry the same run at once keep one retry."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.jobwait import STALLED_TIMEOUT_S, stalled_after_checkpoint
from tests.oncall.conftest import wait_stage

from console import jobspec
from console.adapters import last_checkpoint
from console.commands.ledger import _print_text
from console.fleet.derive import derive_fleet
from console.jobspec import TrainingRequest
from console.ledger import Ledger, ledger_summary, timed_out
from console.oncall import Watcher
from console.oncall.retry import Retrier, infrastructure_cause
from console.oncall.store import OnCallStore
from console.ship import ship

DATA = Path(__file__).resolve().parents[2] / "training" / "data"
PROGRESS = re.compile(r"^progress step=(\d+)/(\d+) ")


def _watcher(backend, cfg, tmp_path) -> Watcher:
    return Watcher(backend.api, cfg, namespace=backend.namespace, backend_kind="local",
                   store=OnCallStore(tmp_path / "oncall.sqlite"), ledger=Ledger(tmp_path / "ledger.sqlite"))


def test_a_run_killed_by_its_timeout_is_resumed_once_by_itself_and_passes(backend, cfg, tmp_path, capsys):
    api, ns = backend.api, backend.namespace
    repo = f"{ns}/adapter-acme"
    stall, hold = stalled_after_checkpoint("acme", tmp_path.name)
    req = TrainingRequest(tenant="acme", dataset=str(DATA / "acme.jsonl"), max_steps=40, learning_rate=5e-3,
                          lora_r=8, lora_alpha=16, hub_model_id=repo, run_name="acme-slow",
                          timeout_seconds=STALLED_TIMEOUT_S, extra_env=stall, retry=1, retry_max_usd=5.0)
    sub = jobspec.build_submission(req, backend_kind="local", token=api.token)
    assert sub.labels["retry"] == "1" and sub.labels["retry_max_usd"] == "5"
    job = api.run_job(**ship(api, sub, ns).run_kwargs(), namespace=ns)
    done = api.wait_for_job(job.id, timeout=STALLED_TIMEOUT_S + 120, poll_interval=0.5, namespace=ns)
    assert timed_out(done) and infrastructure_cause(done) == "killed by its timeout", done.status
    checkpoint = last_checkpoint(api, repo, "acme-slow")
    assert checkpoint is not None and 0 < checkpoint.step < 40, \
        "\n".join(list(api.fetch_job_logs(job_id=job.id, namespace=ns))[-30:])
    hold.unlink()  # the GPU is back: the retry runs at full speed

    watcher = _watcher(backend, cfg, tmp_path)
    events = watcher.check().events
    [retry] = [e for e in events if e.kind == "retry"]
    assert retry.title == f"retry 1 of 1 of acme's run, from step {checkpoint.step}"
    assert retry.data["retry_of"] == job.id and retry.text.endswith("(submitted)")
    new_id = retry.job_id
    again = watcher.check().events + _watcher(backend, cfg, tmp_path / "other").check().events
    assert not [e for e in again if e.kind == "retry" and e.text.endswith("(submitted)")]  # once, by any console
    assert [j.id for j in api.list_jobs(namespace=ns) if jobspec.labels_of(j).get("retry_of") == job.id] == [new_id]

    resumed = api.wait_for_job(new_id, timeout=240, poll_interval=0.5, namespace=ns)
    logs = list(api.fetch_job_logs(job_id=new_id, namespace=ns))
    assert resumed.status.stage == "COMPLETED", "\n".join(logs[-40:])
    assert logs[-1].startswith("VERDICT: PASS ") and " steps=40 " in logs[-1], logs[-1]
    assert f"resuming from acme-slow step={checkpoint.step}" in "\n".join(logs)
    steps = [int(m.group(1)) for m in map(PROGRESS.match, logs) if m]
    assert steps[0] == checkpoint.step + 1 and steps[-1] == 40
    request = jobspec.read_request(api.inspect_job(job_id=new_id, namespace=ns))
    assert (request.resume_from, request.retry_of, request.attempt) == ("acme-slow", job.id, 1)
    assert request.timeout_seconds > STALLED_TIMEOUT_S  # a timeout for what is left, not the one that killed it

    # the fleet and the ledger say it
    jobs = list(api.list_jobs(namespace=ns))
    [row] = derive_fleet([], jobs)
    assert (row.last_job_id, row.last_stage, row.last_retry) == (new_id, "COMPLETED", "retry 1 of 1")
    watcher.check()
    entries = watcher.ledger.entries()
    assert {e.job_id: jobspec.retry_words(e.labels) for e in entries} == {job.id: None, new_id: "retry 1 of 1"}
    _print_text(ledger_summary(watcher.ledger, plan="pro"), entries, 10, "ledger")
    assert f"COMPLETED (retry 1 of 1 of {job.id})" in capsys.readouterr().out


def _killed(backend, *, run: str, repo: str, code: str = "kill -9 $$", **labels: str):
    """A console job of `run` pushing to `repo` whose shell ends as `code` says."""
    api, ns = backend.api, backend.namespace
    all_labels = {"app": "console", "tenant": "acme", "env": "dev", "kind": "sft", "model_b": "1",
                  "examples": "100", "epochs": "1", "run": run, "timeout": "60", "retry": "2", **labels}
    job = api.run_job(image="python:3.12", command=["bash", "-c", code, "recipe", "--dataset",
                                                    str(DATA / "acme.jsonl"), "--max-steps", "40",
                                                    "--hub-model-id", repo, "--run-name", run],
                      flavor="t4-small", labels=all_labels, timeout=60, namespace=ns)
    wait_stage(backend, job.id)
    return api.inspect_job(job_id=job.id, namespace=ns)


def _checkpoint(api, repo: str, run: str, step: int, manifest: dict | None = None) -> None:
    api.create_repo(repo, private=True, exist_ok=True)
    api.create_branch(repo, branch=f"runs/{run}", exist_ok=True)
    state = {"global_step": step, "max_steps": 40}
    api.upload_file(repo_id=repo, path_or_fileobj=json.dumps(state).encode(), revision=f"runs/{run}",
                    path_in_repo="last-checkpoint/trainer_state.json", commit_message=f"{run}: checkpoint {step}")
    if manifest is not None:
        api.upload_file(repo_id=repo, path_or_fileobj=json.dumps(manifest).encode(), revision=f"runs/{run}",
                        path_in_repo="manifest.json", commit_message=f"{run}: FAIL")


def _retries(api, ns: str, job_id: str) -> list[str]:
    return [j.id for j in api.list_jobs(namespace=ns) if jobspec.labels_of(j).get("retry_of") == job_id]


def test_a_fail_verdict_is_not_retried(backend, cfg, tmp_path):
    api, ns = backend.api, backend.namespace
    repo = f"{ns}/adapter-acme"
    _checkpoint(api, repo, "acme-fail", 10)
    job = _killed(backend, run="acme-fail", repo=repo,
                  code="echo 'VERDICT: FAIL loss_not_decreasing: first=2.0 last=2.1'; exit 1")
    assert job.status.stage == "ERROR" and infrastructure_cause(job) is None
    events = _watcher(backend, cfg, tmp_path).check().events
    assert not [e for e in events if e.kind.startswith("retry")] and _retries(api, ns, job.id) == []


def test_a_not_resumable_run_is_not_retried(backend, cfg, tmp_path):
    api, ns = backend.api, backend.namespace
    repo = f"{ns}/adapter-acme"
    _checkpoint(api, repo, "acme-nan", 12, {"run_name": "acme-nan", "verdict": "FAIL",
                                            "not_resumable": "the loss became NaN at step 12"})
    job = _killed(backend, run="acme-nan", repo=repo)
    assert infrastructure_cause(job) == "its process was killed"
    [event] = [e for e in _watcher(backend, cfg, tmp_path).check().events if e.kind.startswith("retry")]
    assert event.kind == "retry_refused" and event.title == f"acme's run {job.id} is not retried"
    assert "not resumable: the loss became NaN at step 12" in event.text
    assert _retries(api, ns, job.id) == []


def test_the_count_and_the_cost_cap_stop_retries(backend, cfg, tmp_path):
    api, ns = backend.api, backend.namespace
    repo = f"{ns}/adapter-acme"
    _checkpoint(api, repo, "acme-cap", 20)
    capped = _killed(backend, run="acme-cap", repo=repo, retry_max_usd="0")
    _checkpoint(api, repo, "acme-last", 30)
    used_up = _killed(backend, run="acme-last", repo=repo, retry_of="j-earlier", attempt="2")
    retrier = Retrier(api, cfg, ns, "local")
    prices = _watcher(backend, cfg, tmp_path).prices()
    cap = retrier.consider(capped, prices)
    assert cap.kind == "retry_refused" and "over retry_max_usd $0.00" in cap.text, cap.text
    last = retrier.consider(used_up, prices)
    assert last.kind == "retry_refused" and last.text == "its process was killed; its 2 retries are used up"
    assert _retries(api, ns, capped.id) == _retries(api, ns, used_up.id) == []


def test_the_infrastructure_causes_are_the_servers_own_words():
    from types import SimpleNamespace

    from console.server.host.runner import SERVER_STOPPED_MESSAGE

    def ended(stage: str, message: str | None):
        return SimpleNamespace(status=SimpleNamespace(stage=stage, message=message))

    assert infrastructure_cause(ended("ERROR", SERVER_STOPPED_MESSAGE)) == "the server stopped"
    assert infrastructure_cause(ended("ERROR", "Job was killed by signal SIGKILL")) == "its process was killed"
    assert infrastructure_cause(ended("ERROR", "Job failed with exit code: 137")) == "its process was killed"
    assert infrastructure_cause(ended("ERROR", "Job timed out after 30s (timeoutSeconds)")) == "killed by its timeout"
    for own in (ended("ERROR", "Job failed with exit code: 1"), ended("ERROR", "Job failed with exit code: 1370"),
                ended("COMPLETED", None), ended("CANCELED", None)):
        assert infrastructure_cause(own) is None


def test_two_consoles_retrying_the_same_run_at_once_keep_one_retry(backend, cfg, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    api, ns = backend.api, backend.namespace
    repo = f"{ns}/adapter-acme"
    _checkpoint(api, repo, "acme-both", 8)
    job = _killed(backend, run="acme-both", repo=repo)
    prices = _watcher(backend, cfg, tmp_path).prices()
    consoles = [Retrier(api, cfg, ns, "local") for _ in range(2)]
    with ThreadPoolExecutor(2) as pool:
        events = list(pool.map(lambda r: r.consider(job, prices), consoles))
    assert [e.kind for e in events] == ["retry", "retry"]
    assert sum(e.text.endswith("(submitted)") for e in events) == 1, [e.text for e in events]
    assert len({e.job_id for e in events}) == 1, [e.text for e in events]  # both name the one kept
    for other in set(_retries(api, ns, job.id)) - {events[0].job_id}:  # the other is canceled
        assert wait_stage(backend, other) == "CANCELED"
    kept = api.inspect_job(job_id=events[0].job_id, namespace=ns)
    assert kept.status.stage != "CANCELED", kept.status
    api.cancel_job(job_id=kept.id, namespace=ns)
