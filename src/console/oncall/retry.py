"""Retry with resume: a run that ends on its timeout or on an infrastructure failure is resumed
from its last pushed checkpoint, with a timeout for what is left, by the console that watches.

HF Jobs runs nothing on the console's behalf, so a watcher acts: the TUI's on-call watch and
`console watch` (each pass, :meth:`Retrier.check`). The policy travels in the job's own labels
(`retry=N`, `retry_max_usd`, from the fleet file or the submit form), so any console that watches
the namespace acts the same way on the same run.

A run is retried when all of these hold:

- it is a console training run with a destination repo and `retry` > 0;
- it ended ERROR on its timeout, or because the server stopped or its process was killed by a
  signal (exit code 137 or 143 from a wrapper; :func:`infrastructure_cause`); a run that
  exited with a code of its own, printed a FAIL
  verdict or failed its dataset check is the run's own doing, not retried;
- it pushed a checkpoint, and its manifest does not call it `not_resumable` (a NaN loss);
- the retry is attempt N or less of its chain (the retry carries `retry_of=<job id>` and
  `attempt=N`);
- what the retries of the chain were billed plus this retry's estimate stays within
  `retry_max_usd`.

Two consoles never both keep a retry of the same run: before submitting, a console looks for a
job labelled `retry_of=<job id>` (newest first, down to the failed job); after submitting, it
looks again and, when another retry of the same run was created before its own (ties broken by
job id), cancels its own within seconds. What remains: both retries start, and one runs for the
seconds between its start and that second look (a minute billed at most).

Each decision is an event (`retry`, or `retry_refused` with why), once per failed job.

Blocking (HTTP): call it from a thread. No Textual, no console.ui, console.server or
console.backend.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from typing import Any

from console import jobspec
from console.costs import estimate_run, resumed_timeout
from console.fleet.outcome import parse_outcome
from console.jobs import job_row
from console.kinds import TRAINING_KINDS
from console.ledger.entries import timed_out
from console.oncall.notify import Event
from console.prices import PriceBook
from console.stages import ERROR

SERVER_STOPPED_RE = re.compile(r"server stopped", re.IGNORECASE)
"""The Jobs API's message for a job whose server went away under it (the embedded server's
`SERVER_STOPPED_MESSAGE`)."""
KILLED_RE = re.compile(r"killed by signal|exit code:? (?:137|143)\b", re.IGNORECASE)
"""A process killed from outside: by a signal, or a wrapper's exit code for SIGKILL / SIGTERM
(128 + 9, 128 + 15: how a sandboxed or containerised process reports it)."""
LOG_TAIL = 200


def infrastructure_cause(job: Any) -> str | None:
    """Why a finished job ended for reasons outside the run, in words, or None when it did not
    (it completed, was canceled, or exited with a code of its own)."""
    status = getattr(job, "status", None)
    if getattr(status, "stage", None) != ERROR:
        return None
    if timed_out(job):
        return "killed by its timeout"
    message = str(getattr(status, "message", None) or "")
    if SERVER_STOPPED_RE.search(message):
        return "the server stopped"
    if KILLED_RE.search(message):
        return "its process was killed"
    return None


def resume_request(request: jobspec.TrainingRequest, info: Any, checkpoint: Any, prices: PriceBook | None,
                   *, timeout_buffer: float, timeout_overhead_s: float) -> tuple[jobspec.TrainingRequest, str]:
    """The request that resumes `info`'s run from `checkpoint`, with its timeout for what is left
    (never the one that killed it), and that timeout's rule in words. The `R` key and the retries
    both use it."""
    resumed = replace(request, resume_from=checkpoint.run, resume_done=checkpoint.done_fraction)
    est = estimate_run(resumed.run_spec(), prices, timeout_buffer=timeout_buffer,
                       timeout_overhead_s=timeout_overhead_s)
    timeout, rule = resumed_timeout(est, timeout_buffer, steps_done=checkpoint.step,
                                    steps_total=checkpoint.steps_total,
                                    ran_seconds=jobspec.run_limit_seconds(info))
    return replace(resumed, timeout_seconds=timeout), rule


class Retrier:
    """The retry step of a watcher's pass over one namespace (see the module docstring)."""

    def __init__(self, api: Any, cfg: Any, namespace: str | None, backend_kind: str | None) -> None:
        self.api = api
        self.cfg = cfg
        self.namespace = namespace
        self.backend_kind = backend_kind or "local"
        self._decided: set[str] = set()

    def check(self, jobs: list[Any], since: float, prices: PriceBook, already_sent: Any,
              problems: list[str]) -> list[Event]:
        """The events of this pass: one per failed job with a retry policy, decided once (a job
        whose decision fails to be read or made is noted in `problems` and tried next pass)."""
        candidates = {}
        for job in jobs:
            labels = jobspec.labels_of(job)
            if job.id in self._decided or not jobspec.label_number(labels.get("retry")):
                continue
            if job.status.stage != ERROR or labels.get("kind") not in TRAINING_KINDS:
                continue
            ended = job.finished_at or job.created_at
            if ended is not None and ended.timestamp() < since:
                continue
            candidates[job.id] = job
        keys = {f"{kind}:{jid}": jid for jid in candidates for kind in ("retry", "retry_refused")}
        done = {keys[k] for k in already_sent(keys)}
        events = []
        for job_id, job in candidates.items():
            if job_id not in done:
                try:
                    event = self.consider(job, prices)
                except Exception as exc:  # noqa: BLE001 - the Hub or the Jobs API: next pass
                    first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
                    problems.append(f"retry of {job_id}: {first}")
                    continue
                if event is not None:
                    events.append(event)
            self._decided.add(job_id)
        return events

    def consider(self, job: Any, prices: PriceBook) -> Event | None:
        """Retry `job` when its policy says so (see the module docstring); the event says what
        was done or why not, None when the run is not one to retry at all."""
        request = jobspec.read_request(job)
        labels = jobspec.labels_of(job)
        if request is None or request.retry <= 0 or not request.hub_model_id:
            return None
        tenant = request.tenant
        cause = infrastructure_cause(job)
        if cause is None:
            return None  # its own failure (exit code, FAIL verdict, bad data): not retried
        try:
            tail = list(self.api.fetch_job_logs(job_id=job.id, namespace=self.namespace, follow=False,
                                                tail=LOG_TAIL))
        except Exception:  # noqa: BLE001 - the status already says it was not the run's doing
            tail = []
        if parse_outcome(tail).fail_reason:
            return None
        attempt = request.attempt + 1

        def refused(why: str) -> Event:
            return Event(key=f"retry_refused:{job.id}", kind="retry_refused", level="WARN",
                         title=f"{tenant}'s run {job.id} is not retried", text=why, at=time.time(), job_id=job.id,
                         tenant=tenant, data={"cause": cause, "attempt": attempt, "retry": request.retry})

        if attempt > request.retry:
            return refused(f"{cause}; its {request.retry} retr{'y' if request.retry == 1 else 'ies'} are used up")
        existing = self._retries_of(job)
        if existing:
            first = existing[0]
            return self._event(job, request, attempt, None, first.id, cause, by_other=True)
        run_name = jobspec.trackio_run_name(job.id, labels)
        from console.adapters import last_checkpoint

        checkpoint = last_checkpoint(self.api, request.hub_model_id, run_name) if run_name else None
        if checkpoint is None:
            return refused(f"{cause}; it pushed no checkpoint to resume from")
        if not checkpoint.resumable:
            return refused(f"{cause}; not resumable: {checkpoint.refused}")
        base = replace(request, run_name=None, scheduled=False, timeout_seconds=None,
                       retry_of=job.id, attempt=attempt)
        defaults = self.cfg.defaults
        try:
            resumed, _ = resume_request(base, job, checkpoint, prices, timeout_buffer=defaults.timeout_buffer,
                                        timeout_overhead_s=defaults.timeout_overhead_s)
            sub = jobspec.build_submission(resumed, backend_kind=self.backend_kind,
                                           timeout_buffer=defaults.timeout_buffer,
                                           timeout_overhead_s=defaults.timeout_overhead_s,
                                           token=self._token(), prices=prices)
        except (jobspec.SubmissionError, ValueError) as exc:
            return refused(f"{cause}; the resume is refused: {exc}")
        if request.retry_max_usd is not None:
            spent = self._chain_cost(job, prices)
            if spent + sub.estimate_usd > request.retry_max_usd + 1e-9:
                return refused(
                    f"{cause}; retry {attempt} would cost ${sub.estimate_usd:.2f} after ${spent:.2f} of retries, "
                    f"over retry_max_usd ${request.retry_max_usd:.2f}")
        from console.ship import ship

        new = self.api.run_job(**ship(self.api, sub, self.namespace).run_kwargs(), namespace=self.namespace)
        winner = self._retries_of(job)
        if winner and winner[0].id != new.id:  # another console retried it first: keep theirs
            self.api.cancel_job(job_id=new.id, namespace=self.namespace)
            return self._event(job, request, attempt, checkpoint, winner[0].id, cause, by_other=True)
        return self._event(job, request, attempt, checkpoint, new.id, cause, by_other=False)

    def _event(self, job: Any, request: jobspec.TrainingRequest, attempt: int, checkpoint: Any, new_id: str,
               cause: str, *, by_other: bool) -> Event:
        step = f", from step {checkpoint.step}" if checkpoint is not None else ""
        title = f"retry {attempt} of {request.retry} of {request.tenant}'s run{step}"
        who = "another console submitted it" if by_other else "submitted"
        return Event(key=f"retry:{job.id}", kind="retry", level="WARN", title=title, at=time.time(),
                     text=f"{job.id} {cause}; {new_id} resumes it ({who})", job_id=new_id, tenant=request.tenant,
                     data={"retry_of": job.id, "attempt": attempt, "retry": request.retry,
                           "step": checkpoint.step if checkpoint is not None else None, "cause": cause})

    def _retries_of(self, job: Any) -> list[Any]:
        """The jobs labelled `retry_of=<job>`, the first created first (newest-first list, read
        down to the failed job's creation)."""
        found = []
        for other in self.api.list_jobs(namespace=self.namespace):
            if job.created_at is not None and other.created_at is not None and other.created_at < job.created_at:
                break
            if jobspec.labels_of(other).get("retry_of") == job.id:
                found.append(other)
        return sorted(found, key=lambda j: (j.created_at.timestamp() if j.created_at else 0.0, j.id))

    def _chain_cost(self, job: Any, prices: PriceBook) -> float:
        """What the retries that led to `job` (itself included when it is one) were billed."""
        total, seen = 0.0, set()
        while job is not None and job.id not in seen:
            seen.add(job.id)
            labels = jobspec.labels_of(job)
            parent = labels.get("retry_of")
            if not parent:
                break
            total += job_row(job, prices=prices).cost_usd or 0.0
            try:
                job = self.api.inspect_job(job_id=parent, namespace=self.namespace)
            except Exception:  # noqa: BLE001 - a deleted parent: its cost is not known here
                break
        return total

    def _token(self) -> str | None:
        token = getattr(self.api, "token", None)
        if isinstance(token, str) and token:
            return token
        from huggingface_hub import get_token

        return get_token()
