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


STALLED_TIMEOUT_S = 90
"""The timeout of a run stalled after its first checkpoint (`stalled_after_checkpoint`): its
set-up (Python, torch, the model, the dataset) and first checkpoint must fit in it, which on a
loaded machine takes far longer than the run's few seconds of steps."""


def stalled_after_checkpoint(tenant: str, name: str):
    """(extra_env, hold): a training run given `extra_env` stops after the step that follows its
    first saved checkpoint for as long as `hold` exists, as on a GPU that stalled; its timeout then
    kills it mid-way however long its set-up took. Removing `hold` lets the next run (a resume)
    go at full speed. `hold` lies in the tenant's artifact folder, the one path the job sees."""
    from console.server import paths as server_paths

    hold = server_paths.tenant_artifacts_dir(tenant) / f"hold-{name}"
    hold.parent.mkdir(parents=True, exist_ok=True)
    hold.touch()
    return {"CONSOLE_STEP_HOLD_FILE": str(hold)}, hold
