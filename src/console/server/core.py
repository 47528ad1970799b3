"""The embedded Jobs server's service layer: store + runner + scheduler behind plain methods.

:class:`JobsService` is what the HTTP app calls; it knows nothing about HTTP except that its errors
are :class:`~console.server.jobs.wire.ApiError` with a status code. It serves one namespace (the
config's), like an HF account with no organisations.
"""

from __future__ import annotations

import json
import secrets as _secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from console.server import paths
from console.server.access.gateway import Gateway
from console.server.host.runner import Runner
from console.server.host.volumes import check_volumes
from console.server.hub.buckets import LocalHub
from console.server.jobs.answers import Job, job_json, scheduled_job_json, stable_id
from console.server.jobs.joblog import LOG_CAP_BYTES
from console.server.jobs.scheduler import Scheduler, is_valid_schedule, next_run_after
from console.server.jobs.schema import Expose, JobSpec, LabelsBody, ScheduleBody, ScheduledJobRequest, decode
from console.server.jobs.store import (
    JobRecord,
    ScheduledJobRecord,
    Store,
)
from console.server.jobs.wire import ApiError, dumps_bytes
from console.stages import ACTIVE_STAGES, TERMINAL_STAGES

STAGES = (*ACTIVE_STAGES, *TERMINAL_STAGES)
_LABELS_BODY = 'the body ({"labels": {...}})'
_EXPOSE_BODY = 'the body ({"ports": [...], "portsPublic": [...]})'
RENDER_CACHE_BYTES = 64 * 1024 * 1024
"""The rendered JSON of finished jobs kept for listing, at most this many bytes (oldest first out)."""


def new_id() -> str:
    """A 24-hex-digit id like HF's (time-ordered prefix, random tail)."""
    return f"{int(time.time()):08x}{_secrets.token_hex(8)}"


@dataclass
class ServiceSettings:
    namespace: str
    max_running_jobs: int = 2
    python_mode: str = "self"
    log_cap_bytes: int = LOG_CAP_BYTES


class JobsService:
    """Jobs and scheduled jobs for one namespace, run on this machine."""

    def __init__(self, settings: ServiceSettings, db_path: Path | None = None) -> None:
        self.settings = settings
        self.namespace = settings.namespace
        self.store = Store(db_path or paths.db_path())
        self.runner = Runner(
            self.store, max_running=settings.max_running_jobs, python_mode=settings.python_mode,
            log_cap_bytes=settings.log_cap_bytes,
            bucket_exists=lambda bucket_id: self.hub.buckets.exists(bucket_id),
        )
        self.scheduler = Scheduler(self.store, self._fire_scheduled)
        self.hub = LocalHub()
        """The local Hub stand-in: buckets (and the Xet store behind them) that volumes mount."""
        self.gateway = Gateway(self._ssh_target)
        """Exposed ports and ssh into running jobs."""
        self.runner.on_start.append(self._job_started)
        self.runner.on_finish.append(lambda job: self.gateway.close(job.id))
        self._started = False
        self._rendered: dict[str, bytes] = {}
        self._rendered_bytes = 0

    def start(self) -> None:
        if self._started:
            return
        self.gateway.start()
        self.runner.start()
        self.scheduler.start()
        self._started = True

    def stop(self) -> None:
        if not self._started:
            return
        self.scheduler.stop()
        self.runner.stop()
        self.gateway.stop()
        self.store.close()
        self.hub.close()
        self._started = False

    # -- helpers ---------------------------------------------------------------------------

    def check_namespace(self, namespace: str) -> None:
        if namespace != self.namespace:
            raise ApiError(
                403,
                f"namespace {namespace!r} is not served here: this local Jobs server runs jobs "
                f"for {self.namespace!r}",
            )

    def _job(self, job_id: str) -> JobRecord:
        job = self.store.get_job(job_id)
        if job is None or job.namespace != self.namespace:
            raise ApiError(404, f"job {job_id!r} not found")
        return job

    def _scheduled(self, sj_id: str) -> ScheduledJobRecord:
        sj = self.store.get_scheduled(sj_id)
        if sj is None or sj.namespace != self.namespace:
            raise ApiError(404, f"scheduled job {sj_id!r} not found")
        return sj

    def ssh_url(self, job: JobRecord) -> str | None:
        """For ssh jobs while they run: `ssh://<job_id>@127.0.0.1:<port>` (the gateway's ssh server);
        `file://<working folder>` where that server could not start (see gateway.ssh_problem)."""
        if not job.spec.get("ssh") or job.stage != "RUNNING":
            return None
        return self.gateway.ssh_url(job.id) or f"file://{paths.job_workdir(job.id)}"

    def _ssh_target(self, job_id: str) -> tuple[int, Path] | str:
        """For the ssh server: (process group leader, working folder) of a running ssh job."""
        job = self.store.get_job(job_id)
        if job is None or job.namespace != self.namespace:
            return f"no job {job_id!r} on this server"
        if not job.spec.get("ssh"):
            return f"job {job_id} was started without ssh (hf jobs run --ssh ...)"
        pid = self.runner.pid_of(job_id)
        workdir = self.runner.workdir_of(job_id)
        if job.stage != "RUNNING" or pid is None or workdir is None:
            return f"job {job_id} is not running ({job.stage})"
        return pid, workdir

    def _job_started(self, job: JobRecord) -> None:
        ports = (job.spec.get("expose") or {}).get("ports") or []
        if ports:
            self.gateway.expose(job.id, ports)

    def update_job_expose(self, job_id: str, body: Any) -> JobRecord:
        """Replace a job's exposed ports (all of them: ports in neither list close)."""
        job = self._job(job_id)
        if job.stage in TERMINAL_STAGES:
            raise ApiError(400, f"job {job_id} has finished ({job.stage}): nothing to expose")
        expose = decode({} if body is None else body, Expose, _EXPOSE_BODY, "expose").stored()
        spec = {k: v for k, v in job.spec.items() if k != "expose"}
        if expose:
            spec["expose"] = expose
        self.store.update_job(job_id, spec=json.dumps(spec))
        if self.runner.is_running(job_id):
            self.gateway.expose(job_id, (expose or {}).get("ports") or [])
        return self._job(job_id)

    def present(self, job: JobRecord) -> Job:
        """The API answer for a job (a queued job says why it waits)."""
        if job.stage == "SCHEDULING" and job.message is None:
            job.message = self.runner.preparing(job.id)
        if job.stage == "SCHEDULING" and job.message is None:
            running, limit = self.runner.running_count(), self.runner.max_running
            if running >= limit:
                job.message = (
                    f"Waiting for a free slot: {running} of {limit} local jobs running "
                    "(server.max_running_jobs)"
                )
        urls = self.gateway.urls(job.id) if job.stage == "RUNNING" else None
        return job_json(job, ssh_url=self.ssh_url(job), expose_urls=urls)

    # -- jobs ------------------------------------------------------------------------------

    def create_job(
        self,
        spec: dict[str, Any],
        secrets: dict[str, str],
        *,
        initiator: dict[str, Any] | None = None,
        scheduled_job_id: str | None = None,
    ) -> JobRecord:
        job = JobRecord(
            id=new_id(),
            namespace=self.namespace,
            created_at=time.time(),
            stage="SCHEDULING",
            spec=spec,
            secrets=dict(secrets),
            labels=dict(spec.get("labels") or {}),
            initiator=initiator
            or {"type": "user", "id": _owner_id(self.namespace), "name": self.namespace},
            scheduled_job_id=scheduled_job_id,
        )
        self.store.insert_job(job)
        self.runner.wake()
        return job

    def run_job(self, body: Any) -> JobRecord:
        spec, secrets = _job_spec(body)
        return self.create_job(spec, secrets)

    def get_job(self, job_id: str) -> JobRecord:
        return self._job(job_id)

    def list_jobs(
        self, *, stages: list[str], labels: dict[str, str], before_seq: int | None, limit: int
    ) -> list[JobRecord]:
        bad = [s for s in stages if s not in STAGES]
        if bad:
            raise ApiError(400, f"unknown stage {bad[0]!r}; stages: {', '.join(STAGES)}")
        return self.store.list_jobs(
            self.namespace, stages=stages, labels=labels, before_seq=before_seq, limit=limit
        )

    def list_jobs_page(
        self, *, stages: list[str], labels: dict[str, str], before_seq: int | None, limit: int
    ) -> tuple[bytes, int | None]:
        """One page of the job list as a JSON array, and the cursor of the next page (if any).

        Finished jobs never change except by a label update, so their JSON is rendered once and
        kept: a 10,000-job history lists without re-encoding it on every call.
        """
        bad = [s for s in stages if s not in STAGES]
        if bad:
            raise ApiError(400, f"unknown stage {bad[0]!r}; stages: {', '.join(STAGES)}")
        keys = self.store.list_job_keys(
            self.namespace, stages=stages, labels=labels, before_seq=before_seq, limit=limit + 1
        )
        next_cursor = None
        if len(keys) > limit:
            keys = keys[:limit]
            next_cursor = keys[-1][0]
        cache = self._rendered
        # what this page finds in the cache, taken before rendering the rest: remembering a newly
        # rendered job may evict one of these, which must still be listed
        cached = {job_id: cache[job_id] for _, job_id, _ in keys if job_id in cache}
        missing = [job_id for _, job_id, _ in keys if job_id not in cached]
        fresh = self.store.get_jobs(missing) if missing else {}
        parts: list[bytes] = []
        for _, job_id, _ in keys:
            doc = cached.get(job_id)
            if doc is None:
                job = fresh.get(job_id)
                if job is None:  # deleted meanwhile
                    continue
                doc = dumps_bytes(self.present(job))
                if job.stage in TERMINAL_STAGES:
                    self._remember(job_id, doc)
            parts.append(doc)
        return b"[" + b",".join(parts) + b"]", next_cursor

    def _remember(self, job_id: str, doc: bytes) -> None:
        """Keep a finished job's JSON, dropping the oldest kept ones past RENDER_CACHE_BYTES."""
        cache = self._rendered
        self._forget(job_id)
        cache[job_id] = doc
        self._rendered_bytes += len(doc)
        while self._rendered_bytes > RENDER_CACHE_BYTES and cache:
            oldest = next(iter(cache))
            self._forget(oldest)

    def _forget(self, job_id: str) -> None:
        doc = self._rendered.pop(job_id, None)
        if doc is not None:
            self._rendered_bytes -= len(doc)

    def cancel_job(self, job_id: str) -> None:
        self._job(job_id)
        self.runner.cancel(job_id)

    def duplicate_job(self, job_id: str) -> JobRecord:
        old = self._job(job_id)
        return self.create_job(
            dict(old.spec),
            dict(old.secrets),
            initiator={"type": "duplicated-job", "id": old.id},
            scheduled_job_id=None,
        )

    def update_job_labels(self, job_id: str, body: Any) -> JobRecord:
        self._job(job_id)
        labels = decode(body, LabelsBody, _LABELS_BODY).labels or {}
        self.store.set_job_labels(job_id, labels)
        self._forget(job_id)
        return self._job(job_id)

    # -- scheduled jobs --------------------------------------------------------------------

    def create_scheduled(self, body: Any) -> ScheduledJobRecord:
        request = decode(body, ScheduledJobRequest)
        schedule = request.schedule
        self._check_schedule(schedule)
        spec, secrets = _job_spec(request.job_spec, "jobSpec")
        suspend, concurrency = bool(request.suspend), bool(request.concurrency)
        now = time.time()
        sj = ScheduledJobRecord(
            id=new_id(),
            namespace=self.namespace,
            created_at=now,
            schedule=schedule,
            spec=spec,
            secrets=secrets,
            suspend=suspend,
            concurrency=concurrency,
            next_run_at=None if suspend else next_run_after(schedule, now),
        )
        self.store.insert_scheduled(sj)
        self.scheduler.wake()
        return sj

    @staticmethod
    def _check_schedule(schedule: str) -> None:
        """What no type can say of a cron (the scheduler's parser): that it parses, and fires."""
        if not is_valid_schedule(schedule):
            raise ApiError(
                400,
                f"schedule: invalid schedule {schedule!r:.120}: use @hourly/@daily/@weekly/@monthly/"
                "@yearly, a 5-field cron expression, or 6 fields with seconds first",
            )
        try:
            next_run_after(schedule, time.time())
        except Exception:  # croniter: "failed to find next date" (30 February, 31 April, ...)
            raise ApiError(
                400, f"schedule: {schedule!r} never fires (no such date, e.g. 30 February)"
            ) from None

    def list_scheduled(self, labels: dict[str, str]) -> list[ScheduledJobRecord]:
        return list(self._scheduled_matching(labels))

    def _scheduled_matching(self, labels: dict[str, str]) -> Iterator[ScheduledJobRecord]:
        for sj in self.store.iter_scheduled(self.namespace):
            sj_labels = sj.spec.get("labels") or {}
            if all(sj_labels.get(k) == v for k, v in labels.items()):
                yield sj

    def scheduled_listing(self, labels: dict[str, str]) -> Iterator[bytes]:
        """The scheduled job list as a JSON array, in pieces: the API answers it in one response
        (no pages), and 10,000 schedules with their specs would be hundreds of MB held at once;
        this holds one batch of records and one rendered schedule at a time."""
        yield b"["
        first = True
        for sj in self._scheduled_matching(labels):
            doc = dumps_bytes(scheduled_job_json(sj))
            yield doc if first else b"," + doc
            first = False
        yield b"]"

    def get_scheduled(self, sj_id: str) -> ScheduledJobRecord:
        return self._scheduled(sj_id)

    def delete_scheduled(self, sj_id: str) -> None:
        self._scheduled(sj_id)
        self.store.delete_scheduled(sj_id)

    def suspend_scheduled(self, sj_id: str) -> ScheduledJobRecord:
        self._scheduled(sj_id)
        self.store.update_scheduled(sj_id, suspend=True, next_run_at=None)
        return self._scheduled(sj_id)

    def resume_scheduled(self, sj_id: str) -> ScheduledJobRecord:
        sj = self._scheduled(sj_id)
        # a suspended schedule stored before never-firing crons were refused may be one
        self._check_schedule(sj.schedule)
        self.store.update_scheduled(
            sj_id, suspend=False, next_run_at=next_run_after(sj.schedule, time.time())
        )
        self.scheduler.wake()
        return self._scheduled(sj_id)

    def reschedule(self, sj_id: str, body: Any) -> ScheduledJobRecord:
        sj = self._scheduled(sj_id)
        schedule = decode(body, ScheduleBody, 'the body ({"schedule": "..."})').schedule
        self._check_schedule(schedule)
        next_run = None if sj.suspend else next_run_after(schedule, time.time())
        self.store.update_scheduled(sj_id, schedule=schedule, next_run_at=next_run)
        self.scheduler.wake()
        return self._scheduled(sj_id)

    def trigger_scheduled(self, sj_id: str) -> JobRecord:
        sj = self._scheduled(sj_id)
        if not sj.concurrency and self.store.count_active_for_schedule(sj.id) > 0:
            raise ApiError(
                409,
                f"scheduled job {sj_id} already has a run in progress and does not allow "
                "concurrency",
            )
        return self._fire_scheduled(sj)

    def update_scheduled_labels(self, sj_id: str, body: Any) -> ScheduledJobRecord:
        sj = self._scheduled(sj_id)
        labels = decode(body, LabelsBody, _LABELS_BODY).labels or {}
        spec = dict(sj.spec)
        spec["labels"] = labels
        self.store.update_scheduled(sj_id, spec=spec)
        return self._scheduled(sj_id)

    def _fire_scheduled(self, sj: ScheduledJobRecord) -> JobRecord:
        job = self.create_job(
            dict(sj.spec),
            dict(sj.secrets),
            initiator={"type": "scheduled-job", "id": sj.id},
            scheduled_job_id=sj.id,
        )
        self.store.update_scheduled(sj.id, last_job_id=job.id, last_job_at=job.created_at)
        return job


def _owner_id(namespace: str) -> str:
    return stable_id(namespace)


def _job_spec(body: Any, where: str = "") -> tuple[dict[str, Any], dict[str, str]]:
    """A submitted job spec (a body, or a scheduled job's decoded `jobSpec`) as the server keeps
    it, and its secrets; a 400 naming the field if the spec or a volume's source is bad."""
    spec = body if isinstance(body, JobSpec) else decode(body, JobSpec, "the job spec")
    stored, secrets = spec.stored()
    try:
        check_volumes(stored.get("volumes") or [])
    except ApiError as exc:
        raise ApiError(400, f"{where}.{exc.message}" if where else exc.message) from None
    return stored, secrets
