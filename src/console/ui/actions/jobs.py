"""Job actions: submit (`s`), cancel (`c`), rerun (`R`) and save the log (`ctrl+s`).

Each is one function taking the app: read-only check, what it applies to, a confirmation that
names what will happen and what it costs, then the API call in a worker (see `console.ui.actions`).
A submission's preflight checks its dataset for the run's kind (`jobspec.preflight_request`).
A run trains only its own tenant's data: a submission or rerun on a dataset another tenant of the
known fleet trains on is refused, and so is one to the Hub with no destination or no token.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.worker import get_current_worker

from console import jobspec, paths
from console.jobs import format_cost
from console.jobspec import TrainingRequest
from console.ship import BaseModelCheck, ship
from console.stages import COMPLETED, TERMINAL_STAGES
from console.ui.actions import (
    ActionDone,
    confirm_then_run,
    dataset_owners,
    fleet_requests,
    refuse_if_read_only,
    submission_details,
)
from console.ui.base import ConsoleBase

if TYPE_CHECKING:
    from console.ui.screens.submit import SubmitResult

TERMINAL = TERMINAL_STAGES


def cancel_job(app: ConsoleBase) -> None:
    """Cancel the selected job, after a confirmation naming its tenant and its cost so far."""
    if refuse_if_read_only(app, "cancel_job"):
        return
    job = app.selected_job()
    if job is None:
        app.notify("No job selected", severity="warning")
        return
    if not job.active:
        app.notify(f"Job {job.id} is {job.stage}: nothing to cancel", severity="warning")
        return
    ns = app.namespace

    def cancel() -> str:
        app.api.cancel_job(job_id=job.id, namespace=ns)
        return f"Canceled {job.id} ({job.tenant})"

    confirm_then_run(
        app,
        f"Cancel job {job.id}?",
        [
            f"tenant {job.tenant}, {job.kind}, {job.stage} on {job.flavor}",
            f"cost so far {format_cost(job.cost_usd)}; its work since the last push is lost",
        ],
        yes_label="Cancel job",
        description=f"Cancel {job.id}",
        fn=cancel,
        declined="Cancel: not done",
    )


def submit(app: ConsoleBase) -> None:
    """Open the submit form, prefilled from the selected tenant (or job); confirm; submit."""
    if refuse_if_read_only(app, "submit"):
        return
    from console.ui.screens.submit import SubmitScreen  # modal screens load on first use

    screen = SubmitScreen(
        _initial_request(app),
        backend_kind=app.backend_kind,
        timeout_buffer=app.cfg.defaults.timeout_buffer,
        timeout_overhead_s=app.cfg.defaults.timeout_overhead_s,
        token=app.session.hub_token(),
        prices=app.prices,
        known=fleet_requests(app),
        destination=_destination(app),
    )
    app.push_screen(screen, lambda result: _confirm_submit(app, result))


def _destination(app: ConsoleBase) -> str | None:
    """The Hub repo template of a tenant that names none, on this backend."""
    return jobspec.default_destination(app.cfg.defaults.hub_model_id, app.backend_kind, app.namespace)


def _initial_request(app: ConsoleBase) -> TrainingRequest:
    tenant = app.selected_tenant()
    base = tenant.request if tenant and tenant.request else None
    if base is None:
        job = app.selected_job()
        info = app.refresher.job_info(job.id) if job else None
        base = jobspec.read_request(info) if info is not None else None
    if base is None:
        base = TrainingRequest(tenant=tenant.tenant if tenant else "", dataset="", flavor=app.cfg.defaults.flavor)
    return replace(
        base,
        env=app.cfg.defaults.env,
        run_name=None,
        scheduled=False,
        timeout_seconds=None,
        ssh=app.backend_kind == "local",
        trackio_project=base.trackio_project or app.cfg.trackio.project,
        trackio_space_id=base.trackio_space_id or app.cfg.trackio.space_id,
        datasets_cache=base.datasets_cache or app.cfg.defaults.datasets_cache,
        hub_model_id=base.hub_model_id or (base.tenant and jobspec.hub_model_id_for(base.tenant, _destination(app)))
        or None,
    )


def _confirm_submit(app: ConsoleBase, result: SubmitResult | None) -> None:
    if result is None:
        app.notify("Submit: nothing submitted", timeout=3)
        return
    sub = result.submission
    what = f"a scheduled job ({result.schedule})" if result.schedule else "a job now"
    details = submission_details(sub, result.request.tenant, app.prices)
    if result.preflight:
        then = "the schedule is created" if result.schedule else f"the {sub.flavor} job is submitted"
        data_kind = jobspec.preflight_request(result.request).validates
        details.append(
            f"first a CPU dataset preflight on {jobspec.PREFLIGHT_FLAVOR} (~$0.01); {then} only after it passes; "
            f"it checks the dataset as {data_kind} data"
        )
    question = f"Submit {what}?"
    if sub.timeout_warning:  # a typed timeout below the estimate: said first, and asked about
        details.insert(0, f"warning: {sub.timeout_warning}")
        question = f"Submit {what} with a timeout below the estimate?"
    confirm_then_run(
        app,
        question,
        details,
        yes_label="Submit",
        description=f"Submit {result.request.tenant}",
        fn=lambda: _submit_now(app, result),
        declined="Submit: nothing submitted",
    )


def _submit_now(app: ConsoleBase, result: SubmitResult) -> str:
    """Worker thread: the optional preflight, then the job or the scheduled job."""
    token = app.session.hub_token()
    request = result.request
    if not request.scheduled:  # the run name (and so the destination) the confirmation showed
        request = replace(request, run_name=result.submission.labels.get("run") or None)
    ns = app.namespace
    build: dict[str, Any] = dict(
        backend_kind=app.backend_kind,
        timeout_buffer=app.cfg.defaults.timeout_buffer,
        timeout_overhead_s=app.cfg.defaults.timeout_overhead_s,
        token=token,
        prices=app.prices,
    )
    submission = jobspec.build_submission(request, **build)
    if why := BaseModelCheck(app.api, app.backend_kind, app.prices)(request):
        raise jobspec.SubmissionError(why)
    if result.preflight:
        # the dataset checked as the kind's data (DPO pairs, KTO labels, embedding columns...)
        check = jobspec.build_submission(jobspec.preflight_request(request), **build)
        job = app.api.run_job(**ship(app.api, check, ns).run_kwargs(), namespace=ns)
        app.post_message(ActionDone(f"Preflight {job.id} started for {request.tenant}", refresh=True))
        stage = _wait_terminal(app.api, job.id, ns)
        if stage != COMPLETED:
            return f"Preflight {job.id} ended {stage}: training not submitted (see its log)"
    submission = ship(app.api, submission, ns)  # a Hub job's scripts, through the artifacts bucket
    if result.schedule:
        sj = app.api.create_scheduled_job(**submission.scheduled_kwargs(result.schedule), namespace=ns)
        return f"Scheduled {request.tenant} ({sj.id}): {result.schedule}"
    job = app.api.run_job(**submission.run_kwargs(), namespace=ns)
    return (
        f"Submitted {job.id} for {request.tenant} "
        f"(timeout {submission.timeout_seconds}s, est ${submission.estimate_usd:.2f})"
    )


def _wait_terminal(api: Any, job_id: str, namespace: str, poll: float = 1.0, limit: float = 3600.0) -> str:
    deadline = time.monotonic() + limit
    worker = get_current_worker()
    while time.monotonic() < deadline and not worker.is_cancelled:
        stage = api.inspect_job(job_id=job_id, namespace=namespace).status.stage
        if stage in TERMINAL:
            return stage
        time.sleep(poll)
    return "UNFINISHED"


def rerun(app: ConsoleBase) -> None:
    """Run the selected job again: a console job from its request (fresh timeout and estimate),
    any other job from its image, command, env and flavor (its secrets are not copied). A console
    run killed by its timeout that pushed a checkpoint is offered a resume from it instead, with a
    timeout for what is left (the checkpoint is looked up off the UI thread)."""
    if refuse_if_read_only(app, "rerun"):
        return
    job = app.selected_job()
    info = app.refresher.job_info(job.id) if job else None
    if job is None or info is None:
        app.notify("No job selected", severity="warning")
        return
    request = jobspec.read_request(info)
    run_name = jobspec.trackio_run_name(job.id, jobspec.labels_of(info)) if request else None
    from console.ledger import timed_out  # the ledger's modules load with the costs tab, not the first frame

    if request is not None and request.hub_model_id and run_name and timed_out(info):
        from console.adapters import last_checkpoint

        repo = request.hub_model_id

        def look() -> None:
            try:
                checkpoint = last_checkpoint(app.api, repo, run_name)
            except Exception:  # noqa: BLE001 - no checkpoint known: a plain rerun
                checkpoint = None
            if checkpoint is not None and not checkpoint.resumable:
                checkpoint = None  # it failed on its training (a NaN loss): a fresh run, not a resume
            app.call_from_thread(_rerun, app, job, info, request, checkpoint)

        app.run_worker(look, thread=True, group="actions", exit_on_error=False,
                       description=f"look for {run_name}'s last checkpoint")
        return
    _rerun(app, job, info, request, None)


def _resumed(app: ConsoleBase, info: Any, request: TrainingRequest, checkpoint: Any) -> tuple[TrainingRequest, str]:
    """The request that resumes from `checkpoint`, with its timeout for what is left, and the rule."""
    from console.oncall.retry import resume_request

    return resume_request(request, info, checkpoint, app.prices, timeout_buffer=app.cfg.defaults.timeout_buffer,
                          timeout_overhead_s=app.cfg.defaults.timeout_overhead_s)


def _rerun(app: ConsoleBase, job: Any, info: Any, request: TrainingRequest | None, checkpoint: Any) -> None:
    ns = app.namespace
    if request is not None:
        request = replace(
            request,
            run_name=None,
            scheduled=False,
            timeout_seconds=None,
            retry_of=None,  # a human's rerun starts a chain of its own
            attempt=0,
            ssh=bool(job.ssh_url) or app.backend_kind == "local",
        )
        rule = ""
        if checkpoint is not None:
            try:
                request, rule = _resumed(app, info, request, checkpoint)
            except Exception as exc:  # noqa: BLE001 - a cost input the model refuses
                app.notify(f"Resume refused: {exc}", severity="error")
                return
        try:
            sub = jobspec.build_submission(
                request,
                backend_kind=app.backend_kind,
                timeout_buffer=app.cfg.defaults.timeout_buffer,
                timeout_overhead_s=app.cfg.defaults.timeout_overhead_s,
                token=app.session.hub_token(),
                prices=app.prices,
                owners=dataset_owners(app),
            )
        except jobspec.SubmissionError as exc:
            app.notify(f"{'Resume' if checkpoint else 'Rerun'} refused: {exc}", severity="error")
            return
        details = submission_details(sub, request.tenant, app.prices)
        verb = "Resume" if checkpoint else "Rerun"
        if checkpoint is not None:
            details = [
                f"resumes {checkpoint.run} (killed by its timeout) from its last checkpoint: {checkpoint.describe()}",
                f"what is left: {100 - round(checkpoint.done_fraction * 100)}% of the run; timeout {rule}",
                *details,
                "to start over instead: s (submit) with the same settings",
            ]

        def run_again() -> str:
            if why := BaseModelCheck(app.api, app.backend_kind, app.prices)(request):
                raise jobspec.SubmissionError(why)
            new = app.api.run_job(**ship(app.api, sub, ns).run_kwargs(), namespace=ns)
            return f"{verb} of {job.id}: {new.id} ({request.tenant})"
    else:
        verb = "Rerun"
        details = [
            f"tenant {job.tenant}, {job.kind} on {job.flavor}",
            "dataset and destination unknown: not a console job (its own command, env and flavor)",
            "timeout and cost unknown (not a console job)",
        ]

        def run_again() -> str:
            new = app.api.run_job(
                image=info.docker_image or "python:3.12",
                command=list(info.command or []) + list(info.arguments or []),
                env=dict(info.environment or {}),
                flavor=info.flavor,
                labels=jobspec.labels_of(info),
                namespace=ns,
            )
            return f"Rerun of {job.id}: {new.id} (secrets are not copied)"

    confirm_then_run(
        app,
        f"Resume job {job.id} from step {checkpoint.step}?" if checkpoint else f"Run job {job.id} again?",
        details,
        yes_label=verb,
        description=f"{verb} {job.id}",
        fn=run_again,
        declined=f"{verb}: not done",
    )


def save_log(app: ConsoleBase) -> None:
    """Ask where (by default `<data dir>/logs/<job id>.log`), ask again before overwriting a file,
    then write the whole log of the job on screen (read in a worker) to that file."""
    job_id = app.job_view.job_id
    if not job_id:
        app.notify("No job selected", severity="warning")
        return
    folder = paths.data_dir() / "logs"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        folder = Path.cwd()
    default = str(folder / f"{job_id}.log")

    def chosen(path: str | None) -> None:
        if not path:
            return
        target = Path(path).expanduser()
        if not target.exists():
            _write_log(app, job_id, target)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                _write_log(app, job_id, target)
            else:
                app.notify(f"Save log: {target} left as it was", timeout=4)

        from console.ui.screens.confirm import ConfirmScreen

        app.push_screen(
            ConfirmScreen(f"Overwrite {target}?", [f"it exists ({_size(target)}); its content is replaced"],
                          yes_label="Overwrite"),
            answered,
        )

    from console.ui.screens.prompt import PromptScreen

    app.push_screen(PromptScreen(f"Save the full log of {job_id} to:", default), chosen)


def _size(path: Path) -> str:
    try:
        return f"{path.stat().st_size:,} bytes"
    except OSError:
        return "size unknown"


def _write_log(app: ConsoleBase, job_id: str, path: Path) -> None:
    def write() -> None:
        lines = list(app.api.fetch_job_logs(job_id=job_id, namespace=app.namespace, follow=False))
        path.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
        app.post_message(ActionDone(f"Saved {len(lines)} lines to {path}", refresh=False))

    app.run_worker(write, thread=True, group="save", exit_on_error=False, description="save the log")
