"""How a job's command is turned into what runs on the host (`uv run` under each python mode)."""

from __future__ import annotations

import sys

import pytest
from huggingface_hub import HfApi, Volume
from jobs_helpers import NAMESPACE, make_server, wait_stage

from console.server.host.commands import find_uv, plan_command, split_uv_run


def test_uv_run_split_and_self_mode() -> None:
    argv = ["uv", "run", "--with", "trl", "--python=3.12", "-q", "train.py", "--epochs", "2"]
    assert split_uv_run(argv) == (
        ["--with", "trl", "--python=3.12", "-q"], ["train.py", "--epochs", "2"]
    )
    plan = plan_command(argv, "self")
    assert plan.argv == [sys.executable, "train.py", "--epochs", "2"]
    assert "uv flags ignored" in (plan.note or "")
    assert plan_command(["uv", "run", "python", "-c", "x"], "self").argv == [
        sys.executable, "-c", "x"
    ]
    url = plan_command(["uv", "run", "https://example.com/s/sft.py?raw=1", "a"], "self")
    assert url.argv == [sys.executable, "sft.py", "a"]
    assert url.download == "https://example.com/s/sft.py?raw=1"
    assert plan_command(["bash", "-c", "echo hi"], "self").argv == ["bash", "-c", "echo hi"]
    assert split_uv_run(["python", "run"]) is None


def test_uv_mode_runs_real_uv(tmp_path) -> None:
    if find_uv() is None:
        pytest.skip("uv is not installed")
    script = tmp_path / "hello.py"
    script.write_text("import sys\nprint('via real uv', sys.argv[1:])\n")
    assert plan_command(["uv", "run", str(script)], "auto").argv == ["uv", "run", str(script)]
    with make_server(python_mode="uv") as srv:
        api = HfApi(endpoint=srv.url, token=srv.token)
        bucket = f"{NAMESPACE}/scripts"  # a job reads a script of this machine from a volume, as on HF
        api.create_bucket(bucket, exist_ok=True)
        api.batch_bucket_files(bucket, add=[(script, "hello.py")])
        job = api.run_job(
            image="ghcr.io/astral-sh/uv:python3.12-bookworm",
            command=["uv", "run", "--no-project", "--python", sys.executable, "/scripts/hello.py", "1"],
            env={"UV_OFFLINE": "1"},
            volumes=[Volume(type="bucket", source=bucket, mount_path="/scripts", read_only=True)],
            namespace=NAMESPACE,
        )
        done = wait_stage(api, job.id)
        logs = list(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE))
        assert done.status.stage == "COMPLETED", (done.status, logs)
        assert logs[-1:] == ["via real uv ['1']"]
