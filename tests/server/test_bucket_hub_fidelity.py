"""Buckets answer as huggingface.co does where huggingface_hub 2.4 (its client and its `hf buckets`
CLI) tells the answers apart: the error class of a missing bucket, the tree's default depth, the
listing's search, a bucket id without namespace, and what a batch copy checks."""

from __future__ import annotations

import json

import httpx
import pytest
from huggingface_hub import HfApi
from huggingface_hub.errors import BucketBatchError, BucketNotFoundError, HfHubHTTPError
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


def test_tree_lists_every_file_unless_told_not_to(api: HfApi, hf) -> None:
    """`list_bucket_tree(bucket)` (no `recursive` sent) lists every file below, as the Hub does;
    `recursive=False` and `hf buckets list` (which sends it) show the top level with its folders."""
    bucket = f"{NAMESPACE}/tree-depth"
    api.create_bucket(bucket)
    api.batch_bucket_files(bucket, add=[(b"a", "top.txt"), (b"b", "sub/deep/b.txt"), (b"c", "sub/c.txt")])
    assert sorted((e.type, e.path) for e in api.list_bucket_tree(bucket)) == [
        ("file", "sub/c.txt"), ("file", "sub/deep/b.txt"), ("file", "top.txt")]
    assert sorted(e.path for e in api.list_bucket_tree(bucket, prefix="sub")) == ["sub/c.txt", "sub/deep/b.txt"]
    assert sorted((e.type, e.path) for e in api.list_bucket_tree(bucket, recursive=False)) == [
        ("directory", "sub"), ("file", "top.txt")]
    top = hf("buckets", "list", bucket).stdout
    assert "top.txt" in top and "sub/" in top and "c.txt" not in top
    deep = hf("buckets", "list", bucket, "--recursive").stdout
    assert "sub/deep/b.txt" in deep and "sub/c.txt" in deep


def test_tree_rejects_an_unreadable_recursive_flag(api: HfApi) -> None:
    bucket = f"{NAMESPACE}/tree-flag"
    api.create_bucket(bucket)
    answer = httpx.get(f"{api.endpoint}/api/buckets/{bucket}/tree", params={"recursive": "maybe"},
                       headers=api._build_hf_headers())
    assert answer.status_code == 400 and "recursive" in answer.json()["error"]


def test_buckets_list_search_keeps_matching_names(api: HfApi, hf) -> None:
    for name in ("alpha-logs", "beta-logs", "Alpha-Models"):
        api.create_bucket(f"{NAMESPACE}/{name}")
    assert sorted(b.id for b in api.list_buckets(search="alpha")) == [
        f"{NAMESPACE}/Alpha-Models", f"{NAMESPACE}/alpha-logs"]
    out = hf("buckets", "list", NAMESPACE, "--search", "logs", "--quiet").stdout.split()
    assert sorted(out) == [f"{NAMESPACE}/alpha-logs", f"{NAMESPACE}/beta-logs"]
    assert "No results found." in hf("buckets", "list", "--search", "nothing-like-it").stdout


def test_bucket_id_without_namespace_is_not_found(api: HfApi) -> None:
    """`bucket_info("name")` asks for the namespace `name`'s listing: a 404, not an empty list
    the client cannot read as a bucket."""
    api.create_bucket(f"{NAMESPACE}/named")
    with pytest.raises(HfHubHTTPError) as err:
        api.bucket_info("named")
    assert err.value.response.status_code == 404
    assert "namespace/name" in err.value.response.json()["error"]
    with pytest.raises(HfHubHTTPError) as err:
        list(api.list_buckets(namespace="someone-else"))
    assert err.value.response.status_code == 404
    assert [b.id for b in api.list_buckets()] == [f"{NAMESPACE}/named"]


def _batch(api: HfApi, bucket: str, *ops: dict) -> httpx.Response:
    body = "".join(json.dumps(op) + "\n" for op in ops)
    return httpx.post(f"{api.endpoint}/api/buckets/{bucket}/batch", content=body,
                      headers={**api._build_hf_headers(), "Content-Type": "application/x-ndjson"})


def test_batch_copy_checks_its_source(api: HfApi, tmp_path) -> None:
    """A copyFile whose source bucket does not hold that Xet hash, or whose source is missing or
    not named, fails with a message naming the field, and writes nothing; the good copies of the
    same batch land (the client raises BucketBatchError listing only the bad one)."""
    src, dst = f"{NAMESPACE}/copy-src", f"{NAMESPACE}/copy-dst"
    api.create_bucket(src)
    api.create_bucket(dst)
    api.batch_bucket_files(src, add=[(b"content", "file.txt")])
    good = next(iter(api.list_bucket_tree(src))).xet_hash
    elsewhere = f"{NAMESPACE}/holds-other"
    api.create_bucket(elsewhere)
    with pytest.raises(BucketBatchError) as err:
        api.batch_bucket_files(dst, copy=[("bucket", src, good, "copy.txt"), ("bucket", elsewhere, good, "bogus.txt")])
    assert err.value.response.status_code == 200
    [failure] = err.value.failures
    assert failure["path"] == "bogus.txt" and "xetHash" in failure["error"]
    assert {f.path for f in api.list_bucket_tree(dst)} == {"copy.txt"}

    cases = {
        "no-type.txt": ({"sourceRepoId": src}, "sourceRepoType"),
        "no-id.txt": ({"sourceRepoType": "bucket"}, "sourceRepoId"),
        "gone-bucket.txt": ({"sourceRepoType": "bucket", "sourceRepoId": f"{NAMESPACE}/gone"}, "sourceRepoId"),
        "gone-model.txt": ({"sourceRepoType": "model", "sourceRepoId": f"{NAMESPACE}/gone"}, "sourceRepoId"),
        "bad-id.txt": ({"sourceRepoType": "bucket", "sourceRepoId": "../etc"}, "sourceRepoId"),
    }
    answer = _batch(api, dst, *({"type": "copyFile", "path": p, "xetHash": good, **src_fields}
                                for p, (src_fields, _) in cases.items()))
    assert answer.status_code == 422
    errors = {f["path"]: f["error"] for f in answer.json()["failed"]}
    assert {p: field in errors[p] for p, (_, field) in cases.items()} == dict.fromkeys(cases, True)
    assert {f.path for f in api.list_bucket_tree(dst)} == {"copy.txt"}
    api.download_bucket_files(dst, [("copy.txt", tmp_path / "copy.txt")])
    assert (tmp_path / "copy.txt").read_bytes() == b"content"
