"""A big file's way through the local Hub: a commit of bytes hf_xet stores uncompressed builds its
blob straight from the xorbs (no second download through the CAS); compressed bytes are rebuilt
by hf_xet; either way every download path gives the same bytes."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest
from huggingface_hub import HfApi, hf_hub_download
from jobs_helpers import NAMESPACE

from console.server.hub import xetclient
from console.server.hub.repofiles import SMALL_BLOB

REPO = f"{NAMESPACE}/transfers"


@pytest.mark.parametrize(("data", "rebuilt_by_hf_xet"), [
    (os.urandom(3 * 1024 * 1024 + 17), 0),  # random bytes do not compress: kept as they are
    ("".join(f"line {i}\n" for i in range(150_000)).encode(), 1),  # text compresses: hf_xet rebuilds it
], ids=["random", "text"])
def test_a_committed_xet_file_comes_back_whole_on_every_path(server, api: HfApi, tmp_path: Path, monkeypatch,
                                                             data: bytes, rebuilt_by_hf_xet: int) -> None:
    calls = []
    real = xetclient.download_file
    monkeypatch.setattr(xetclient, "download_file", lambda *a: calls.append(a) or real(*a))
    api.create_repo(REPO)
    api.upload_file(path_or_fileobj=data, path_in_repo="w.safetensors", repo_id=REPO)
    assert len(calls) == rebuilt_by_hf_xet
    # through Xet (with a token), over HTTP (without one), and a byte range of the HTTP answer
    via_xet = hf_hub_download(REPO, "w.safetensors", endpoint=server.url, token=server.token, cache_dir=tmp_path / "a")
    assert Path(via_xet).read_bytes() == data
    via_http = hf_hub_download(REPO, "w.safetensors", endpoint=server.url, token=False, cache_dir=tmp_path / "b")
    assert Path(via_http).read_bytes() == data
    url = f"{server.url}/{REPO}/resolve/main/w.safetensors"
    part = httpx.get(url, headers={"range": "bytes=1000-1999"})
    assert part.status_code == 206 and part.content == data[1000:2000]


@pytest.mark.parametrize("size", [0, 5, SMALL_BLOB, SMALL_BLOB + 1], ids=["empty", "tiny", "small", "streamed"])
def test_a_plain_file_comes_back_the_same_whole_by_range_and_by_head(server, api: HfApi, size: int) -> None:
    """A small file is answered from one read, a bigger one streamed: the bytes and the headers a
    client reads (length, ETag, commit, a 206 for a range) are the same either way."""
    data = bytes(i % 251 for i in range(size))
    api.create_repo(REPO, exist_ok=True)
    commit = api.upload_file(path_or_fileobj=data, path_in_repo=f"p/{size}.txt", repo_id=REPO)
    url = f"{server.url}/{REPO}/resolve/main/p/{size}.txt"
    auth = {"authorization": f"Bearer {server.token}"}
    whole, head = httpx.get(url, headers=auth), httpx.head(url, headers=auth)
    assert whole.status_code == head.status_code == 200 and whole.content == data
    for answer in (whole, head):
        assert answer.headers["content-length"] == str(size)
        assert answer.headers["x-repo-commit"] == commit.oid
        assert answer.headers["etag"] == head.headers["etag"] and answer.headers["accept-ranges"] == "bytes"
    if size:
        part = httpx.get(url, headers={**auth, "range": f"bytes=1-{size // 2}"})
        assert part.status_code == 206 and part.content == data[1:size // 2 + 1]
