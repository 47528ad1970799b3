"""Buckets answer as huggingface.co does where huggingface_hub 2.4 (its client and its `hf buckets`
CLI) tells the answers apart: the error class of a missing bucket, the tree's default depth, the
listing's search, a bucket id without namespace, and what a batch copy checks."""

from __future__ import annotations

import pytest
from huggingface_hub import HfApi
from huggingface_hub.errors import BucketNotFoundError
from jobs_helpers import NAMESPACE


def test_missing_bucket_is_bucket_not_found(api: HfApi, hf) -> None:
    """A missing bucket's 404 names it as the Hub does (X-Error-Code: RepoNotFound): the client
    raises BucketNotFoundError, and `delete_bucket(missing_ok=True)` passes."""
    missing = f"{NAMESPACE}/no-such-bucket"
    with pytest.raises(BucketNotFoundError):
        api.bucket_info(missing)
    with pytest.raises(BucketNotFoundError):
        api.delete_bucket(missing)
    api.delete_bucket(missing, missing_ok=True)
    api.create_bucket(f"{NAMESPACE}/short-lived")
    api.delete_bucket(f"{NAMESPACE}/short-lived")
    with pytest.raises(BucketNotFoundError):
        api.list_bucket_tree(f"{NAMESPACE}/short-lived").__iter__().__next__()
    out = hf("buckets", "info", missing, check=False)
    assert out.returncode == 1 and f"Bucket {missing!r} not found" in out.stderr
    assert "hf buckets create" in out.stderr
