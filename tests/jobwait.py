"""Waiting for a job's stage in tests, through huggingface_hub's own `HfApi.wait_for_job`."""

from __future__ import annotations

TERMINAL = ("COMPLETED", "ERROR", "CANCELED")


def wait_stage(backend, job_id: str, stages: tuple[str, ...] = TERMINAL, timeout: float = 30.0) -> str:
    """The stage the job reached among `stages`; fails if it ends (or times out) in another."""
    info = backend.api.wait_for_job(
        job_id, timeout=timeout, poll_interval=0.05, stages=list(stages), namespace=backend.namespace
    )
    stage = info.status.stage
    assert stage in stages, f"job {job_id} reached {stage}, not one of {stages}"
    return stage
