"""`promote = "on_eval"` on the embedded server, end to end: real CPU training jobs of the tiny
model push to one adapter repo of its Hub; the first becomes live (nothing was); the second, a few
steps at a low learning rate, passes its own verdict but is worse. The watcher's pass sees it
COMPLETED and submits its evaluation, once, as a real CPU job (training/evaluate_adapter.py),
which scores both adapters on the tenant's rows and leaves `live` where it was; the versions view
and the record on the run's branch show both scores. A third run, longer, scores better: the same
script, run as the job runs it, moves `live` to it.

The first two runs and the worse run's evaluation are one module-scoped history (`worse_kept`),
trained once; the test of the better run continues from it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.conftest import module_isolated_dirs
from tests.oncall.conftest import NAMESPACE
from tests.training.training_helpers import SFT, TRAINING, ForkServer, hub_env, parse_fields

from console import jobspec
from console.adapters import Versions, list_versions
from console.backend import Backend, connect
from console.config import Config, ServerSettings
from console.jobspec import TrainingRequest
from console.oncall import Watcher
from console.oncall.store import OnCallStore
from console.server import LocalServer, ServerOptions
from console.ship import ship
from console.ui.screens.versions import version_cells

DATA = Path(__file__).resolve().parents[2] / "training" / "data"
REPO = f"{NAMESPACE}/adapter-acme"
EVALUATE = TRAINING / "evaluate_adapter.py"

pytestmark = pytest.mark.xdist_group("eval_promotion")  # one worker trains the shared history once


@pytest.fixture(scope="module", autouse=True)
def _isolated_dirs(tmp_path_factory):
    yield from module_isolated_dirs(tmp_path_factory)


def _logs(backend: Backend, job_id: str) -> str:
    return "\n".join(backend.api.fetch_job_logs(job_id=job_id, namespace=backend.namespace))


def _verdict(logs: str) -> str:
    return [line for line in logs.splitlines() if line.startswith("VERDICT:")][-1]


def _train(backend: Backend, run_name: str, **kw) -> str:
    req = TrainingRequest(tenant="acme", dataset=str(DATA / "acme.jsonl"), lora_r=8, lora_alpha=16,
                          hub_model_id=REPO, promote="on_eval", run_name=run_name, **kw)
    sub = jobspec.build_submission(req, backend_kind=backend.kind, token=backend.api.token)
    job = backend.api.run_job(**ship(backend.api, sub, backend.namespace).run_kwargs(), namespace=backend.namespace)
    done = backend.api.wait_for_job(job.id, timeout=300, poll_interval=0.5, namespace=backend.namespace)
    logs = _logs(backend, job.id)
    assert done.status.stage == "COMPLETED", logs[-3000:]
    assert _verdict(logs).startswith("VERDICT: PASS "), logs[-3000:]
    return logs


def _live(api) -> str | None:
    return next((t.target_commit for t in api.list_repo_refs(REPO).tags if t.name == "live"), None)


def _evaluations(watcher: Watcher) -> list:
    return [e for e in watcher.check().events if e.kind == "evaluating"]


def _evaluated(backend: Backend, event) -> tuple[object, str]:
    """The evaluation job the watcher submitted for `event`, once it ended, and its logs."""
    api = backend.api
    evaluation = api.inspect_job(job_id=event.data["evaluation_job"], namespace=backend.namespace)
    done = api.wait_for_job(evaluation.id, timeout=300, poll_interval=0.5, namespace=backend.namespace)
    logs = _logs(backend, evaluation.id)
    assert done.status.stage == "COMPLETED", logs[-3000:]
    return evaluation, logs


@dataclass
class History:
    server: LocalServer
    backend: Backend
    cfg: Config
    store: OnCallStore
    first: str | None  # the live tag's commit after the first run
    worse_logs: str  # the worse run's training job's logs
    events: list  # the watcher's evaluating events, first pass
    again: list  # and its second pass
    evaluation: object  # the worse run's evaluation job
    evaluation_logs: str
    live_after: str | None  # the live tag's commit once that evaluation ended
    versions: Versions  # the versions view then


@pytest.fixture(scope="module")
def worse_kept(_isolated_dirs, tmp_path_factory) -> Iterator[History]:
    """The shared history: a first run (made live), a worse one, and the watcher's evaluation of
    the worse one, each ended."""
    srv = LocalServer(ServerOptions(namespace=NAMESPACE, max_running_jobs=4))
    srv.start()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("CONSOLE_SERVER_TOKEN", srv.token)
            cfg = Config(namespace=NAMESPACE, plan="pro", endpoint=srv.url,
                         server=ServerSettings(max_running_jobs=4))
            backend = connect(cfg)
            store = OnCallStore(tmp_path_factory.mktemp("oncall") / "oncall.sqlite")
            try:
                _train(backend, "acme-first", max_steps=20, learning_rate=5e-3)
                first = _live(backend.api)
                worse_logs = _train(backend, "acme-worse", max_steps=8, learning_rate=2e-3)
                watcher = Watcher(backend.api, cfg, namespace=backend.namespace, backend_kind=backend.kind,
                                  store=store)
                try:
                    events = _evaluations(watcher)
                    again = _evaluations(watcher)
                finally:
                    watcher.close()
                evaluation, evaluation_logs = (_evaluated(backend, events[0]) if len(events) == 1
                                               else (None, ""))
                yield History(srv, backend, cfg, store, first, worse_logs, events, again, evaluation,
                              evaluation_logs, _live(backend.api), list_versions(backend.api, REPO))
            finally:
                backend.close()
    finally:
        srv.stop()


@pytest.mark.timeout(900)  # three real jobs: two trainings of a few seconds, one evaluation
def test_a_passing_run_that_scores_worse_leaves_live_where_it_was(worse_kept: History):
    h = worse_kept
    assert h.first is not None  # nothing was live: the first passing run is, on_eval or not
    assert "live tag live left where it is until the evaluation (promote=on_eval)" in h.worse_logs

    # one evaluation, of the run that left live to it (the first made itself live)
    [event] = h.events
    assert h.again == [] and event.data["run"] == "acme-worse" and event.tenant == "acme"
    assert h.evaluation.flavor == jobspec.PREFLIGHT_FLAVOR
    assert jobspec.labels_of(h.evaluation)["kind"] == "evaluate"
    verdict = _verdict(h.evaluation_logs)
    assert verdict.startswith("VERDICT: PASS run=acme-worse promoted=no "), h.evaluation_logs[-2000:]
    fields = parse_fields(verdict)
    assert fields["live_run"] == "acme-first", verdict
    assert float(fields["candidate_loss"]) > float(fields["live_loss"])

    assert h.live_after == h.first  # the worse adapter is not served
    versions = h.versions
    assert versions.live is not None and versions.live.run == "acme-first"
    worse = versions.find("acme-worse")
    assert worse is not None and worse.evaluation is not None and worse.evaluation["promoted"] is False
    cand, live = worse.evaluation["candidate"]["loss"], worse.evaluation["live"]["loss"]
    assert cand > live and worse.evaluation["live"]["run"] == "acme-first"
    cell = version_cells(worse)[-1]  # the view's last column: Eval vs live
    assert cell == f"{cand:.3g} vs {live:.3g} kept"  # both scores in the versions view
    text = worse.evaluated()
    assert f"eval loss {cand:.4f} vs live {live:.4f} (acme-first): kept" in text
    assert fields["candidate_loss"][:5] in text and fields["live_loss"][:5] in text  # the verdict's scores


@pytest.mark.timeout(900)  # on top of the shared history: one training, one evaluation
def test_a_better_run_is_promoted_by_its_evaluation(worse_kept: History, tmp_path):
    """The recipe and the evaluation as scripts (as the job runs them), pointed at the server's Hub,
    both forked from one fork server started in their environment (one import of the training stack)."""
    h = worse_kept
    api = h.backend.api
    env = hub_env(tmp_path, h.server)
    with ForkServer(env) as forks:
        better = forks.run(SFT, ["--base-model", "tiny-random", "--dataset", str(DATA / "acme.jsonl"),
                                 "--max-steps", "40", "--learning-rate", "5e-3", "--lora-r", "8", "--lora-alpha", "16",
                                 "--hub-model-id", REPO, "--promote", "on_eval", "--run-name", "acme-better"], env)
        assert better.returncode == 0 and better.last_line.startswith("VERDICT: PASS "), (
            better.stdout[-3000:] + better.stderr[-2000:])
        assert "live tag live left where it is until the evaluation (promote=on_eval)" in better.stdout
        assert _live(api) == h.first  # on_eval: live waits for the evaluation

        promoted = forks.run(EVALUATE, ["--hub-model-id", REPO, "--candidate", "acme-better", "--dataset",
                                        str(DATA / "acme.jsonl"), "--method", "sft", "--max-length", "256"], env)
    assert promoted.returncode == 0, promoted.stdout[-3000:] + promoted.stderr[-3000:]
    fields = parse_fields(promoted.last_line)
    assert fields["promoted"] == "yes" and fields["live_run"] == "acme-first", promoted.last_line
    assert float(fields["candidate_loss"]) < float(fields["live_loss"])

    versions = list_versions(api, REPO)
    assert versions.live is not None and versions.live.run == "acme-better"
    assert "promoted" in versions.live.evaluated()
    path = api.hf_hub_download(REPO, "evaluation.json", revision="runs/acme-better", cache_dir=str(tmp_path / "dl"))
    with open(path, encoding="utf-8") as fh:
        record = json.load(fh)
    assert record["promoted"] is True and record["live"]["run"] == "acme-first"
    assert record["candidate"]["loss"] < record["live"]["loss"]
