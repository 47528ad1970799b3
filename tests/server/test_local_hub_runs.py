"""A local run that names a Hub repo pushes to the embedded server's Hub, as a run on HF Jobs
pushes to huggingface.co: the job gets the server as $HF_ENDPOINT and the token as its HF_TOKEN
secret, trains for real, pushes its checkpoints to its own branch and lands on `main` when it
passes, and `hf download` gets the adapter. Without a repo nothing changes: the run is offline and
gets no token.
"""

from __future__ import annotations

import json
from pathlib import Path

from huggingface_hub import HfApi, hf_hub_download
from jobs_helpers import NAMESPACE

from console import jobspec
from console.jobspec import TrainingRequest
from console.ship import ship

DATA = Path(__file__).resolve().parents[2] / "training" / "data"
REPO = f"{NAMESPACE}/adapter-acme"


def _request(**kw) -> TrainingRequest:
    return TrainingRequest(tenant="acme", dataset=str(DATA / "acme.jsonl"), max_steps=20, learning_rate=5e-3,
                           lora_r=8, lora_alpha=16, **kw)


def test_a_local_run_with_a_repo_pushes_to_the_local_hub(server, api: HfApi, tmp_path):
    sub = jobspec.build_submission(_request(hub_model_id=REPO, run_name="acme-hub"), backend_kind="local",
                                   token=server.token)
    assert sub.secrets == {"HF_TOKEN": server.token}
    job = api.run_job(**ship(api, sub, NAMESPACE).run_kwargs(), namespace=NAMESPACE)
    done = api.wait_for_job(job.id, timeout=240, poll_interval=0.5, namespace=NAMESPACE)
    logs = "\n".join(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE))
    assert done.status.stage == "COMPLETED", logs[-3000:]
    verdict = [line for line in logs.splitlines() if line.startswith("VERDICT:")]
    assert verdict and verdict[-1].startswith("VERDICT: PASS ") and f"adapter=hf://{REPO}" in verdict[-1], logs[-2000:]
    assert server.token not in logs  # the secret is never echoed

    assert {"main", "runs/acme-hub"} <= {b.name for b in api.list_repo_refs(REPO).branches}
    path = hf_hub_download(REPO, "adapter_model.safetensors", endpoint=server.url, token=server.token,
                           cache_dir=tmp_path / "dl")
    assert Path(path).stat().st_size > 1000
    manifest = json.loads(Path(hf_hub_download(REPO, "manifest.json", endpoint=server.url, token=server.token,
                                               cache_dir=tmp_path / "dl")).read_text())
    assert manifest["run_name"] == "acme-hub" and manifest["verdict"] == "PASS"


def test_a_run_without_a_repo_stays_offline_and_gets_no_token(server):
    sub = jobspec.build_submission(_request(run_name="acme-local"), backend_kind="local", token=server.token)
    assert sub.secrets == {} and "HF_HUB_OFFLINE" not in sub.env


def test_the_preflight_of_a_dataset_repo_checks_it_line_by_line_as_a_file(server, api: HfApi):
    from console import ship

    ship.upload_dataset(api, f"{NAMESPACE}/wayne", DATA / "wayne.jsonl")
    check = jobspec.preflight_request(TrainingRequest(tenant="wayne", dataset=f"{NAMESPACE}/wayne"))
    sub = jobspec.build_submission(check, backend_kind="local", token=server.token)
    assert sub.secrets == {"HF_TOKEN": server.token} and sub.env["HF_HUB_OFFLINE"] == "0"  # it reads the Hub
    job = api.run_job(**ship.ship(api, sub, NAMESPACE).run_kwargs(), namespace=NAMESPACE)
    done = api.wait_for_job(job.id, timeout=120, poll_interval=0.5, namespace=NAMESPACE)
    logs = "\n".join(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE))
    assert done.status.stage == "ERROR", logs[-2000:]
    assert "line 44: wrong_type: row is a JSON list, not an object" in logs, logs[-2000:]
    assert "VERDICT: FAIL invalid_rows: 10 of 51 rows do not fit sft" in logs, logs[-2000:]


def test_a_run_with_a_datasets_cache_keeps_its_hub_dataset_in_the_bucket(server, api: HfApi):
    """defaults.datasets_cache: the bucket is created, mounted read-write at /data with
    HF_DATASETS_CACHE=/data/datasets, and the dataset the job downloads is there after it ends (the
    next run finds it instead of downloading it again); the job read back names the same cache."""
    from console import ship

    bucket = f"{NAMESPACE}/datasets-cache"
    ship.upload_dataset(api, f"{NAMESPACE}/acme", DATA / "acme.jsonl")
    check = jobspec.preflight_request(TrainingRequest(tenant="acme", dataset=f"{NAMESPACE}/acme",
                                                      datasets_cache=bucket))
    sub = jobspec.build_submission(check, backend_kind="local", token=server.token)
    assert sub.env["HF_DATASETS_CACHE"] == "/data/datasets"
    job = api.run_job(**ship.ship(api, sub, NAMESPACE).run_kwargs(), namespace=NAMESPACE)
    done = api.wait_for_job(job.id, timeout=120, poll_interval=0.5, namespace=NAMESPACE)
    logs = "\n".join(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE))
    assert done.status.stage == "COMPLETED", logs[-2000:]
    assert "volume /data: read-write" in logs
    kept = [f.path for f in api.list_bucket_tree(bucket) if getattr(f, "type", "file") == "file"]
    repo_cache = f"datasets/hub/datasets--{NAMESPACE}--acme"
    assert f"{repo_cache}/refs/main" in kept and any(p.startswith(f"{repo_cache}/blobs/") for p in kept), kept
    again = jobspec.read_request(api.inspect_job(job_id=job.id, namespace=NAMESPACE))
    assert again.datasets_cache == bucket and "HF_DATASETS_CACHE" not in again.extra_env
