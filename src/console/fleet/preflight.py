"""The dataset checks of `console fleet apply`: the validator on local files, the CPU preflight once
per dataset change.

:func:`local_problem` runs the one validator (`training/validate_dataset.py`, the script the
recipes and the preflight job run) on a tenant's local dataset file before anything is sent; a
dataset it fails refuses the tenant. :func:`run_preflights` then runs the CPU preflight job
(`jobspec.preflight_request`, on `jobspec.PREFLIGHT_FLAVOR`) for every tenant whose dataset changed
since its last preflight, all at once, and waits for them. What a dataset was checked as is kept in
``<data dir>/preflight.json`` (its content hash: a local file's SHA-256, a Hub dataset's commit;
the outcome, why it failed as its `VERDICT: FAIL` line says; the job), so an unchanged dataset is
not checked again. A tenant whose preflight failed is held (:func:`held`): `fleet apply` keeps its
schedule suspended, so no GPU minute is billed to refuse data known bad, until a later preflight
(of a changed dataset) passes. A failed preflight is also the fleet row's `preflight` flag
(`console.fleet.derive`, from the tenant's last preflight job), so `fleet show` and the Fleet tab
say which schedules are held, and why (:func:`failure_reason`).

Imports console.jobspec, console.ship and console.paths; the ``HfApi`` comes from the caller. No
Textual, no console.ui or console.server, no training stack (the validator runs as a subprocess).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from console import jobspec, paths
from console.jobspec import TrainingRequest
from console.ship import ship
from console.stages import COMPLETED, TERMINAL_STAGES

STORE_NAME = "preflight.json"
TERMINAL = TERMINAL_STAGES
LOCAL_CHECK_TIMEOUT_S = 120.0


def store_path() -> Path:
    return paths.data_dir() / STORE_NAME


def _is_local(dataset: str) -> bool:
    return Path(jobspec.dataset_key(dataset)).is_absolute()


def data_kind_of(req: TrainingRequest) -> str:
    """The kind of data a training request's dataset is checked as (sft, dpo, kto, embedding...):
    the validator's `--method`."""
    return jobspec.preflight_request(req).validates or "sft"


def local_problem(req: TrainingRequest) -> str | None:
    """Why the one validator fails `req`'s local dataset file (its VERDICT reason), or None: it
    passed, or the dataset is a Hub id (checked by the preflight job)."""
    if not req.dataset or not _is_local(req.dataset):
        return None
    script = paths.training_dir() / jobspec.DATASET_CHECKS
    try:
        proc = subprocess.run(
            [sys.executable, str(script), jobspec.dataset_key(req.dataset), "--method", data_kind_of(req)],
            capture_output=True, text=True, timeout=LOCAL_CHECK_TIMEOUT_S,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"dataset {req.dataset}: the check could not run ({exc})"
    lines = [line for line in proc.stdout.splitlines() if line.startswith("VERDICT: ")]
    if proc.returncode == 0:
        return None
    verdict = lines[-1].removeprefix("VERDICT: ").removeprefix("FAIL ") if lines else proc.stderr.strip()[-200:]
    return f"dataset {req.dataset} fails the dataset check for {data_kind_of(req)}: {verdict}"


def dataset_hash(api: Any, dataset: str) -> str | None:
    """What the dataset's content is, as one string: `sha256:<hex>` of a local file, `rev:<commit>`
    of a Hub dataset; None when it cannot be read (then it is checked every time)."""
    key = jobspec.dataset_key(dataset)
    if Path(key).is_absolute():
        try:
            digest = hashlib.sha256()
            with open(key, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            return f"sha256:{digest.hexdigest()}"
        except OSError:
            return None
    try:
        sha = getattr(api.dataset_info(key), "sha", None)
    except Exception:  # noqa: BLE001 (unreadable: checked every time)
        return None
    return f"rev:{sha}" if sha else None


@dataclass
class PreflightResult:
    tenant: str
    dataset: str
    passed: bool
    job_id: str | None
    stage: str
    cached: bool  # the dataset was unchanged: the stored result, no job run
    reason: str | None = None
    """Why it failed, as the preflight job's `VERDICT: FAIL` line says (None: passed, or unknown)."""

    def line(self) -> str:
        how = "unchanged since its preflight" if self.cached else "preflight"
        job = f" (job {self.job_id})" if self.job_id else ""
        if self.passed:
            return f"  preflight {self.tenant}: PASS, dataset {how}{job}"
        why = f": {self.reason}" if self.reason else " (see the job's log)"
        return (f"  preflight {self.tenant}: FAILED ({self.stage}){job}: dataset {self.dataset} "
                f"does not train{why}; its schedule is suspended until a preflight passes")  # fmt: skip


def failure_reason(api: Any, job_id: str, namespace: str | None = None) -> str | None:
    """What a finished preflight job's `VERDICT: FAIL <code>: <reason>` line says, else its status
    message; None when neither says anything (or its log cannot be read)."""
    from console.fleet.outcome import parse_outcome

    try:
        tail = list(api.fetch_job_logs(job_id=job_id, namespace=namespace, follow=False, tail=50))
    except Exception:  # noqa: BLE001 - the log is gone or unreadable: the status may still say
        tail = []
    reason = parse_outcome(tail).fail_reason
    if reason:
        return " ".join(_plain(reason).split())[:300]
    try:
        message = api.inspect_job(job_id=job_id, namespace=namespace).status.message
    except Exception:  # noqa: BLE001
        return None
    return " ".join(_plain(str(message)).split())[:300] if message else None


def _plain(text: str) -> str:
    """Log text as plain text: no escape sequence or control character reaches a terminal."""
    import re

    return re.sub(r"\x1b\[[0-9;?]*[ -/]*[@-~]|[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]", " ", text)


def held(results: Iterable[PreflightResult]) -> dict[str, str]:
    """tenant -> why, for each tenant whose dataset failed its preflight: its schedule is held
    suspended (`fleet.apply.plan_apply`'s `held`) until a preflight passes."""
    return {r.tenant: f"preflight failed: {r.reason or r.stage}" for r in results if not r.passed}


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def stored_results(api: Any, requests: Iterable[TrainingRequest], *,
                   store: Path | None = None) -> list[PreflightResult]:
    """What `preflight.json` says of each request's dataset whose content is unchanged since its
    last preflight (no job is run): what `fleet apply --dry-run` holds its plan to."""
    data = _load(store or store_path())
    out = []
    for req in requests:
        if not req.dataset:
            continue
        known = data.get(f"{data_kind_of(req)} {jobspec.dataset_key(req.dataset)}")
        if isinstance(known, dict) and known.get("hash") and known.get("hash") == dataset_hash(api, req.dataset):
            out.append(PreflightResult(req.tenant, req.dataset, bool(known.get("passed")), known.get("job"),
                                       str(known.get("stage", "")), cached=True, reason=known.get("reason")))
    return out


def run_preflights(
    api: Any,
    requests: Iterable[TrainingRequest],
    *,
    namespace: str,
    build: dict[str, Any],
    report: Callable[[str], None] = print,
    poll: float = 1.0,
    limit: float = 3600.0,
    store: Path | None = None,
) -> list[PreflightResult]:
    """The CPU preflight of each request's dataset whose content changed since its last one (all
    started, then waited for), and the stored result of the others. `build`: the keyword arguments
    of `jobspec.build_submission` (backend kind, timeout buffer, token, prices)."""
    path = store or store_path()
    data = _load(path)
    results: list[PreflightResult] = []
    started: list[tuple[TrainingRequest, str, str | None, str]] = []  # request, key, hash, job id
    for req in requests:
        if not req.dataset:
            continue
        key = f"{data_kind_of(req)} {jobspec.dataset_key(req.dataset)}"
        content = dataset_hash(api, req.dataset)
        known = data.get(key)
        if content is not None and isinstance(known, dict) and known.get("hash") == content:
            results.append(PreflightResult(req.tenant, req.dataset, bool(known.get("passed")), known.get("job"),
                                           str(known.get("stage", "")), cached=True,
                                           reason=known.get("reason")))  # fmt: skip
            continue
        check = jobspec.build_submission(jobspec.preflight_request(req), **build)
        job = api.run_job(**ship(api, check, namespace).run_kwargs(), namespace=namespace)
        report(f"  preflight {req.tenant}: job {job.id} on {check.flavor} checks {req.dataset}")
        started.append((req, key, content, job.id))
    deadline = time.monotonic() + limit
    waiting = {job_id for *_, job_id in started}
    stages: dict[str, str] = {}
    while waiting and time.monotonic() < deadline:
        for job_id in sorted(waiting):
            stage = api.inspect_job(job_id=job_id, namespace=namespace).status.stage
            if stage in TERMINAL:
                stages[job_id] = stage
                waiting.discard(job_id)
        if waiting:
            time.sleep(poll)
    for req, key, content, job_id in started:
        stage = stages.get(job_id, "UNFINISHED")
        passed = stage == COMPLETED
        reason = None if passed or stage == "UNFINISHED" else failure_reason(api, job_id, namespace)
        results.append(PreflightResult(req.tenant, req.dataset, passed, job_id, stage, cached=False,
                                       reason=reason))
        if content is not None and stage != "UNFINISHED":
            data[key] = {"hash": content, "passed": passed, "stage": stage, "job": job_id, "reason": reason,
                         "at": datetime.now(UTC).isoformat(timespec="seconds")}  # fmt: skip
    if started:
        _save(path, data)
    for result in results:
        report(result.line())
    return results
