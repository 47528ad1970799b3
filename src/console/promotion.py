"""Evaluation-gated promotion (`promote = "on_eval"`): after a run passes, a CPU job scores it.

A run with `--promote on_eval` lands its adapter on `main` and leaves the live tag where it is
(training/jobkit/run.py; a repo with nothing live makes it live at once). Once its job ended
COMPLETED, :func:`evaluation_submission` builds the evaluation job: training/evaluate_adapter.py
on a CPU flavor (`jobspec.PREFLIGHT_FLAVOR`), shipped like the recipes, which scores the new
adapter and the live one on the tenant's held-out rows and moves `live` only when the new one is
better by the tenant's margin (the job's `margin` label, `promote_margin` in the fleet file;
default `jobspec.DEFAULT_PROMOTE_MARGIN`). Its record, `evaluation.json` on the run's branch,
is what the versions view and `console adapters` show (`console.adapters.evaluated`).

:func:`pending` says which ended jobs need one; `console.oncall.watcher` submits each once (its
event store keeps what was sent). Blocking (HTTP through the `HfApi` given); no Textual.
"""

from __future__ import annotations

from typing import Any

from console import jobspec, levels, paths
from console.jobspec import Submission, TrainingRequest
from console.kinds import DATA_KIND
from console.stages import COMPLETED

EVALUATE_SCRIPT = "evaluate_adapter.py"
EVALUATED_KINDS = ("sft", "dpo", "kto")
"""The recipes whose adapters the evaluation scores (LoRA on a causal LM)."""
EVALUATION_TIMEOUT_S = 30 * 60
EVALUATION_KIND = "evaluate"
"""The `kind` label of an evaluation job (its `app` label is `console-eval`: not a training run)."""


def pending(job: Any) -> TrainingRequest | None:
    """The request of a console training job that ended COMPLETED under `promote = "on_eval"`
    with a Hub repo (what its evaluation needs), else None."""
    if getattr(getattr(job, "status", None), "stage", None) != COMPLETED:
        return None
    req = jobspec.read_request(job)
    if req is None or req.promote != "on_eval" or not req.hub_model_id or req.kind not in EVALUATED_KINDS:
        return None
    return req


def evaluation_args(req: TrainingRequest, run_name: str) -> list[str]:
    margin = req.promote_margin if req.promote_margin is not None else jobspec.DEFAULT_PROMOTE_MARGIN
    base = ["--base-model", req.base_model] if req.base_model else []  # named so the job's token may read it
    return [*base, "--hub-model-id", str(req.hub_model_id), "--candidate", run_name, "--dataset", req.dataset,
            "--method", DATA_KIND.get(req.kind, "sft"), "--margin", jobspec.format_number(margin)]


def evaluation_submission(req: TrainingRequest, run_name: str, job_id: str, *, backend_kind: str,
                          token: str | None) -> Submission:
    """The CPU job that evaluates `run_name` (the run of job `job_id`) against the live adapter."""
    if not token:
        raise jobspec.SubmissionError("an evaluation reads the adapter repo and moves its tag: it needs a token")
    ships = tuple((name, str(path)) for name, path in jobspec.bundle_files(paths.training_dir(), EVALUATE_SCRIPT))
    env = {k: str(v) for k, v in req.extra_env.items()}
    if backend_kind != "hub":
        env["HF_HUB_OFFLINE"] = "0"  # a local job is offline unless it talks to the local Hub
    labels = {
        "app": "console-eval",
        "tenant": req.tenant,
        "env": req.env,
        "kind": EVALUATION_KIND,
        "run": jobspec.label_value(f"eval-{run_name}"),
        "of": jobspec.label_value(job_id),
        "timeout": str(EVALUATION_TIMEOUT_S),
    }
    return Submission(
        image=jobspec.HUB_IMAGE if backend_kind == "hub" else jobspec.LOCAL_IMAGE,
        command=jobspec.hub_command(EVALUATE_SCRIPT, evaluation_args(req, run_name)),
        env=env,
        secrets={"HF_TOKEN": token},
        flavor=jobspec.PREFLIGHT_FLAVOR,
        timeout_seconds=EVALUATION_TIMEOUT_S,
        labels=labels,
        dataset=req.dataset,
        destination=f"hf://{req.hub_model_id}",
        ships=ships,
        bundle_id=jobspec.bundle_name(ships),
    )


def submit_evaluation(api: Any, job: Any, *, namespace: str, backend_kind: str) -> Any:
    """Submit the evaluation of `job` (a `pending` one) and return the new job's info."""
    from console.ship import ship

    req = pending(job)
    if req is None:
        raise jobspec.SubmissionError(f"job {job.id} is not a passing on_eval run with a repo")
    run_name = jobspec.trackio_run_name(job.id, jobspec.labels_of(job)) or req.run_name or ""
    sub = evaluation_submission(req, run_name, job.id, backend_kind=backend_kind, token=getattr(api, "token", None))
    return api.run_job(**ship(api, sub, namespace).run_kwargs(), namespace=namespace)


def already_live(api: Any, repo_id: str, run_name: str) -> bool:
    """Whether the live tag is on `run_name`'s commit on main (the first passing run of a repo
    makes itself live: it needs no evaluation)."""
    from console.adapters import LIVE_TAG

    live = next((t.target_commit for t in api.list_repo_refs(repo_id).tags if t.name == LIVE_TAG), None)
    if live is None:
        return False
    landed = next((c.commit_id for c in api.list_repo_commits(repo_id, revision="main")
                   if (c.title or "").startswith(f"{run_name}: PASS")), None)
    return landed == live


def evaluate_ended(api: Any, jobs: Any, store: Any, *, now: float, since: float, namespace: str | None,
                   backend_kind: str | None, read_only: bool = False) -> tuple[list[Any], list[str]]:
    """Submit the evaluation of each `pending` job that ended since `since`, once for good (the
    `evaluate:<job id>` key of the on-call store is claimed first, so two watchers submit one);
    a run already live (its repo's first version) needs none.
    Returns (the events to send: one per evaluation submitted or refused, the problems)."""
    from console.oncall.notify import Event

    events: list[Any] = []
    problems: list[str] = []
    for job in jobs:
        req = pending(job)
        ended = getattr(job, "finished_at", None) or getattr(job, "created_at", None)
        if req is None or (ended is not None and ended.timestamp() < since):
            continue
        key = f"evaluate:{job.id}"
        if read_only or key in store.sent_keys([key]):
            continue
        run_name = jobspec.trackio_run_name(job.id, jobspec.labels_of(job)) or req.run_name or job.id
        if not store.claim(key, kind="evaluation", job_id=job.id, at=now, payload=""):
            continue
        try:
            if already_live(api, str(req.hub_model_id), run_name):
                continue  # the repo's first version: live as it landed, nothing to compare it with
            info = submit_evaluation(api, job, namespace=namespace or "", backend_kind=backend_kind or "hub")
        except Exception as exc:  # noqa: BLE001 - said once, as an event: nothing else submits it
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            problems.append(f"evaluation of {run_name}: {text}")
            events.append(Event(key=f"evaluation_failed:{job.id}", kind="evaluation_failed", level=levels.ERROR,
                                title=f"{req.tenant}: {run_name} passed but its evaluation was not submitted",
                                text=f"{text}; live stays where it is (console adapters {req.tenant} --promote "
                                     f"{run_name} promotes it by hand)", at=now, job_id=job.id, tenant=req.tenant))
            continue
        events.append(Event(key=f"evaluating:{job.id}", kind="evaluating", level="INFO",
                            title=f"{req.tenant}: {run_name} passed; evaluating it against the live adapter",
                            text=f"evaluation job {info.id} on {jobspec.PREFLIGHT_FLAVOR}: live moves only if "
                                 f"it scores better by the margin", at=now, job_id=job.id, tenant=req.tenant,
                            data={"evaluation_job": info.id, "run": run_name, "repo": req.hub_model_id}))
    return events, problems
