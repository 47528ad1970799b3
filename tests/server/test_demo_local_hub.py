"""`console demo` trains from the local Hub and pushes to it, as the fleet would on HF Jobs: the
base model and each tenant's dataset are repos of the embedded server, a tenant's triggered run
loads both by repo id, pushes its every_save checkpoints to its own branch and lands its adapter on
`main`, where `hf download` gets it. `fleet apply` of the unchanged example then plans nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from huggingface_hub import HfApi
from jobs_helpers import HF_BIN

from console import paths
from console.backend.server_info import find_running_server

EXAMPLE = Path(__file__).resolve().parents[2] / "training" / "fleet.example.toml"


def _console(*argv: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "console", *argv], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ))


def test_the_demo_trains_from_the_local_hub_and_fleet_apply_then_plans_nothing(tmp_path):
    demo = _console("demo", "--no-tui", "--trigger", "1", timeout=600)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "Uploaded data/acme.jsonl to the dataset repo console/acme" in demo.stdout, demo.stdout
    assert "Building the base model console/tiny-causal-lm" in demo.stdout, demo.stdout
    job_id = next(line.split()[-1] for line in demo.stdout.splitlines() if line.startswith("Triggered acme"))

    plan = _console("fleet", "apply", str(EXAMPLE), "--dry-run", timeout=120)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "Nothing to do: the scheduled jobs match the fleet file." in plan.stdout, plan.stdout

    url, token = find_running_server()
    api = HfApi(endpoint=url, token=token)
    ns = api.whoami()["name"]
    deadline = time.monotonic() + 300
    while api.inspect_job(job_id=job_id, namespace=ns).status.stage in ("SCHEDULING", "RUNNING"):
        assert time.monotonic() < deadline, "the demo's run did not end in 300 s"
        time.sleep(1)
    logs = "\n".join(api.fetch_job_logs(job_id=job_id, namespace=ns))
    assert api.inspect_job(job_id=job_id, namespace=ns).status.stage == "COMPLETED", logs[-3000:]
    assert "loading base model console/tiny-causal-lm" in logs, logs[-3000:]
    assert "dataset=console/acme" in logs, logs[-3000:]
    verdict = [line for line in logs.splitlines() if line.startswith("VERDICT:")][-1]
    assert verdict.startswith("VERDICT: PASS ") and "adapter=hf://console/adapter-acme" in verdict, verdict
    assert str(paths.training_dir()) not in " ".join(api.inspect_job(job_id=job_id, namespace=ns).arguments or [])

    # the run's branch holds the every_save checkpoint commits and the final one; main the adapter
    branch = f"runs/acme-{job_id}"
    titles = [c.title for c in api.list_repo_commits("console/adapter-acme", revision=branch)]
    assert sum("final adapter" in t for t in titles) == 1, titles
    assert len(titles) >= 4, titles  # checkpoints at each tenth of the run, the final, the branch's start
    env = {**os.environ, "HF_ENDPOINT": url, "HF_TOKEN": token, "HF_HUB_DISABLE_TELEMETRY": "1"}
    got = subprocess.run([str(HF_BIN), "download", "console/adapter-acme", "adapter_model.safetensors",
                          "--local-dir", str(tmp_path / "dl")], capture_output=True, text=True, env=env, timeout=120)
    assert got.returncode == 0, got.stdout + got.stderr
    assert (tmp_path / "dl" / "adapter_model.safetensors").stat().st_size > 1000

    again = _console("demo", "--no-tui", "--trigger", "0", timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Uploaded" not in again.stdout and "Building the base model" not in again.stdout, again.stdout
