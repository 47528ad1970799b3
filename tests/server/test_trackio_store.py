"""Where local jobs' Trackio metrics are: `console server status` names the store and the Trackio
CLI line that reads it, and that line lists what a job logged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from huggingface_hub import HfApi

from console.server import paths

NAMESPACE = "acme-org"

TRACKIO_JOB = textwrap.dedent(
    """
    import trackio
    trackio.init(project="gate-acme", name="acme-run-1")
    trackio.log({"loss": 1.25})
    trackio.finish()
    print("logged")
    """
)


def _console(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True, timeout=120)


def test_server_status_names_the_trackio_store_a_local_job_logs_to(tmp_path):
    config = Path(os.environ["CONSOLE_CONFIG"])
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'namespace = "{NAMESPACE}"\n')
    started = _console("server", "start")
    assert started.returncode == 0, started.stderr
    status = _console("server", "status")
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    [store_line] = [x for x in lines if x.startswith("  Trackio store (local jobs' metrics): ")]
    store = Path(store_line.split(": ", 1)[1])
    assert store == paths.trackio_dir() == Path(os.environ["CONSOLE_DATA_DIR"]) / "trackio"
    [cli_line] = [x for x in lines if x.startswith("  trackio CLI: ")]
    command = cli_line.removeprefix("  trackio CLI: ")
    assert command == f"TRACKIO_DIR={store} trackio list projects --json"

    info = json.loads(paths.server_info_path().read_text())
    api = HfApi(endpoint=info["url"], token=paths.read_token())
    job = api.run_job(image="python:3.12", command=[sys.executable, "-c", TRACKIO_JOB],
                      labels={"tenant": "acme"}, namespace=NAMESPACE)
    done = api.wait_for_job(job.id, stages=["COMPLETED", "ERROR"], timeout=120, poll_interval=0.2,
                            namespace=NAMESPACE)
    logs = "\n".join(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE))
    assert done.status.stage == "COMPLETED", logs

    # The line status printed, pasted into a shell, lists the project the job logged to.
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("TRACKIO_DIR", None)
    listed = subprocess.run(command, shell=True, capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "gate-acme" in json.loads(listed.stdout)["projects"]
