"""The real training recipe as a job on the embedded server: a LoRA adapter trained on CPU lands in
the artifact store and its metrics in the shared Trackio folder. The recipe and the dataset file
travel as the console ships them (the jobs-artifacts bucket, mounted read-only): the sandbox shows a
job no file of this machine that its command names."""

from __future__ import annotations

from huggingface_hub import HfApi
from jobs_helpers import NAMESPACE, wait_stage

from console import jobspec
from console.paths import training_dir
from console.server import paths
from console.ship import ship


def test_tiny_lora_run_pushes_to_the_local_artifact_store(api: HfApi) -> None:
    data = training_dir() / "data" / "acme.jsonl"
    req = jobspec.TrainingRequest(tenant="acme", dataset=str(data), max_steps=10, learning_rate=5e-3, lora_r=8,
                                  run_name="acme-e2e", trackio_project="tenants")
    sub = ship(api, jobspec.build_submission(req, backend_kind="local"), NAMESPACE)
    assert str(data) in sub.command and any(v["mount_path"] == str(data.parent) for v in sub.volumes)
    job = api.run_job(**sub.run_kwargs(), namespace=NAMESPACE)
    lines = list(api.fetch_job_logs(job_id=job.id, follow=True, namespace=NAMESPACE))
    done = wait_stage(api, job.id)
    assert done.status.stage == "COMPLETED", (done.status, lines[-20:])
    assert lines[-1].startswith("VERDICT: PASS"), lines[-20:]
    adapter = paths.artifacts_dir() / "acme" / "acme-e2e"  # in its tenant's folder of the store
    assert (adapter / "adapter_model.safetensors").is_file()
    assert (adapter / "adapter_config.json").is_file()
    assert any(paths.trackio_dir().iterdir())  # metrics landed in the shared Trackio store
    assert not paths.job_workdir(job.id).exists()
