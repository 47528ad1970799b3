"""The real training recipe as a job on the embedded server: a LoRA adapter trained on CPU lands in
the artifact store and its metrics in the shared Trackio folder."""

from __future__ import annotations

from huggingface_hub import HfApi
from jobs_helpers import NAMESPACE, wait_stage

from console.paths import training_dir
from console.server import paths


def test_tiny_lora_run_pushes_to_the_local_artifact_store(api: HfApi) -> None:
    script = training_dir() / "sft_lora.py"
    data = training_dir() / "data" / "acme.jsonl"
    job = api.run_job(
        image="ghcr.io/astral-sh/uv:python3.12-bookworm",
        command=["uv", "run", "--with", "trl", str(script), "--base-model", "tiny-random",
                 "--dataset", str(data), "--max-steps", "10", "--learning-rate", "5e-3",
                 "--lora-r", "8", "--run-name", "acme-e2e", "--trackio-project", "tenants"],
        labels={"app": "console", "tenant": "acme", "kind": "sft"},
        timeout="10m",
        namespace=NAMESPACE,
    )
    lines = list(api.fetch_job_logs(job_id=job.id, follow=True, namespace=NAMESPACE))
    done = wait_stage(api, job.id)
    assert done.status.stage == "COMPLETED", (done.status, lines[-20:])
    assert lines[-1].startswith("VERDICT: PASS"), lines[-20:]
    adapter = paths.artifacts_dir() / "acme" / "acme-e2e"  # in its tenant's folder of the store
    assert (adapter / "adapter_model.safetensors").is_file()
    assert (adapter / "adapter_config.json").is_file()
    assert any(paths.trackio_dir().iterdir())  # metrics landed in the shared Trackio store
    assert not paths.job_workdir(job.id).exists()
