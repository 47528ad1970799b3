"""`promote = "on_eval"` on the embedded server, end to end: two real CPU training jobs of the tiny
model push to one adapter repo of its Hub; the first becomes live (nothing was); the second, a few
steps at a low learning rate, passes its own verdict but is worse. The watcher's pass sees it
COMPLETED and submits its evaluation, once, as a real CPU job (training/evaluate_adapter.py),
which scores both adapters on the tenant's rows and leaves `live` where it was; the versions view,
`console adapters` and the record on the run's branch show both scores.

(That a better run is promoted: tests/training/test_evaluate_adapter.py, the same script.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from console import jobspec
from console.adapters import list_versions
from console.jobspec import TrainingRequest
from console.oncall import Watcher
from console.oncall.store import OnCallStore
from console.ship import ship
from console.ui.screens.versions import version_cells

DATA = Path(__file__).resolve().parents[2] / "training" / "data"


def _train(backend, repo: str, run_name: str, **kw) -> str:
    req = TrainingRequest(tenant="acme", dataset=str(DATA / "acme.jsonl"), lora_r=8, lora_alpha=16,
                          hub_model_id=repo, promote="on_eval", run_name=run_name, **kw)
    sub = jobspec.build_submission(req, backend_kind=backend.kind, token=backend.api.token)
    job = backend.api.run_job(**ship(backend.api, sub, backend.namespace).run_kwargs(), namespace=backend.namespace)
    done = backend.api.wait_for_job(job.id, timeout=300, poll_interval=0.5, namespace=backend.namespace)
    logs = "\n".join(backend.api.fetch_job_logs(job_id=job.id, namespace=backend.namespace))
    assert done.status.stage == "COMPLETED", logs[-3000:]
    return logs


def _live(api, repo: str) -> str | None:
    return next((t.target_commit for t in api.list_repo_refs(repo).tags if t.name == "live"), None)


@pytest.mark.timeout(900)  # three real jobs: two trainings of a few seconds, one evaluation
def test_a_passing_run_that_scores_worse_leaves_live_where_it_was(backend, cfg, tmp_path):
    repo = f"{backend.namespace}/adapter-acme"
    api = backend.api
    _train(backend, repo, "acme-first", max_steps=20, learning_rate=5e-3)
    first = _live(api, repo)
    assert first is not None  # nothing was live: the first passing run is

    logs = _train(backend, repo, "acme-worse", max_steps=8, learning_rate=2e-3)
    assert "live tag live left where it is until the evaluation (promote=on_eval)" in logs

    store = OnCallStore(tmp_path / "oncall.sqlite")
    watcher = Watcher(api, cfg, namespace=backend.namespace, backend_kind=backend.kind, store=store)
    try:
        events = [e for e in watcher.check().events if e.kind == "evaluating"]
        again = [e for e in watcher.check().events if e.kind == "evaluating"]
    finally:
        watcher.close()
    # one evaluation, of the run that left live to it (the first made itself live)
    [event] = events
    assert again == [] and event.data["run"] == "acme-worse" and event.tenant == "acme"
    evaluation = api.inspect_job(job_id=event.data["evaluation_job"], namespace=backend.namespace)
    assert evaluation.flavor == jobspec.PREFLIGHT_FLAVOR
    assert jobspec.labels_of(evaluation)["kind"] == "evaluate"
    done = api.wait_for_job(evaluation.id, timeout=300, poll_interval=0.5, namespace=backend.namespace)
    logs = "\n".join(api.fetch_job_logs(job_id=evaluation.id, namespace=backend.namespace))
    assert done.status.stage == "COMPLETED", logs[-3000:]
    assert [line for line in logs.splitlines() if line.startswith("VERDICT:")][-1].startswith(
        "VERDICT: PASS run=acme-worse promoted=no "), logs[-2000:]

    assert _live(api, repo) == first  # the worse adapter is not served
    versions = list_versions(api, repo)
    assert versions.live is not None and versions.live.run == "acme-first"
    worse = versions.find("acme-worse")
    assert worse is not None and worse.evaluation["promoted"] is False
    cand, live = worse.evaluation["candidate"]["loss"], worse.evaluation["live"]["loss"]
    assert cand > live and worse.evaluation["live"]["run"] == "acme-first"
    cell = version_cells(worse)[-1]  # the view's last column: Eval vs live
    assert cell == f"{cand:.3g} vs {live:.3g} kept"  # both scores in the versions view
    assert f"eval loss {cand:.4f} vs live {live:.4f} (acme-first): kept" in worse.evaluated()
