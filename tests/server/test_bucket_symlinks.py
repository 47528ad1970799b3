"""A job may leave symlinks in a read-write bucket volume; the server, which runs outside any
sandbox, never follows them out of the bucket (uploads, deletes, downloads and later volumes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from huggingface_hub import HfApi
from huggingface_hub._space_api import Volume
from huggingface_hub.errors import BucketBatchError
from jobs_helpers import NAMESPACE, wait_stage


def test_symlinks_a_job_leaves_in_a_bucket_lead_nowhere(api: HfApi, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("host file")
    bucket = f"{NAMESPACE}/shared"
    api.create_bucket(bucket)
    job = api.run_job(
        image="python:3.12", namespace=NAMESPACE,
        volumes=[Volume(type="bucket", source=bucket, mount_path="/b")],
        command=["sh", "-c", f"ln -s {outside} /b/dir && ln -s {outside}/secret.txt /b/file && echo ok > /b/real"],
    )
    assert wait_stage(api, job.id).status.stage == "COMPLETED"
    assert [f.path for f in api.list_bucket_tree(bucket, recursive=True)] == ["real"]
    with pytest.raises(BucketBatchError):
        api.batch_bucket_files(bucket, add=[(b"planted", "dir/planted.txt")])
    with pytest.raises(BucketBatchError):
        api.batch_bucket_files(bucket, delete=["dir/secret.txt"])
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    reader = api.run_job(
        image="python:3.12", namespace=NAMESPACE, command=["ls", "/in"],
        volumes=[Volume(type="bucket", source=bucket, mount_path="/in", path="dir", read_only=True)],
    )
    info = wait_stage(api, reader.id)
    assert info.status.stage == "ERROR" and "leads out of the bucket" in info.status.message
