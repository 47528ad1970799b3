"""A big file's way through the local Hub: a commit of bytes hf_xet stores uncompressed builds its
blob straight from the xorbs (no second download through the CAS), and the blob then holds the
xorbs' bytes (kept once); compressed bytes are rebuilt by hf_xet; either way every download path
gives the same bytes, also for a file that repeats a chunk (hf_xet stores it once and names it
twice) or reuses the chunks of an earlier upload."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import httpx
import pytest
from huggingface_hub import HfApi, hf_hub_download
from jobs_helpers import NAMESPACE

from console.server import paths
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
    # random bytes are kept once, in the blob (the checkout's file); text also as hf_xet's compressed xorb
    xorbs = sum(p.stat().st_size for p in (paths.hub_dir() / "xet" / "xorbs").iterdir())
    assert (xorbs == 0) if not rebuilt_by_hf_xet else (0 < xorbs < len(data) / 2)
    assert (paths.hub_dir() / "models" / REPO / "w.safetensors").read_bytes() == data
    # through Xet (with a token), over HTTP (without one), and a byte range of the HTTP answer
    via_xet = hf_hub_download(REPO, "w.safetensors", endpoint=server.url, token=server.token, cache_dir=tmp_path / "a")
    assert Path(via_xet).read_bytes() == data
    via_http = hf_hub_download(REPO, "w.safetensors", endpoint=server.url, token=False, cache_dir=tmp_path / "b")
    assert Path(via_http).read_bytes() == data
    url = f"{server.url}/{REPO}/resolve/main/w.safetensors"
    part = httpx.get(url, headers={"range": "bytes=1000-1999"})
    assert part.status_code == 206 and part.content == data[1000:2000]


REPEATS = {
    # one chunk (128 KiB of zeros) eight times, then 3 bytes: hf_xet stores the chunk once
    "one-chunk-repeated": [b"\0" * (1 << 20) + b"end"],
    # the second upload repeats some of the first's chunks, then all of them, between its own
    "second-upload-dedups": [os.urandom(2 * 1024 * 1024 + 5), None],
}


@pytest.mark.parametrize("uploads", REPEATS.values(), ids=list(REPEATS))
def test_a_file_that_repeats_chunks_comes_back_whole(server, api: HfApi, tmp_path: Path, uploads: list) -> None:
    api.create_repo(REPO)
    if uploads[-1] is None:  # a file, then one with part of it and all of it: chunks of two uploads' xorbs
        first = uploads[0]
        api.upload_file(path_or_fileobj=first, path_in_repo="a.bin", repo_id=REPO)
        uploads = [os.urandom(300_000) + first[: 1 << 20] + os.urandom(300_000) + first]
    for i, data in enumerate(uploads):
        name = f"f{i}.bin"
        api.upload_file(path_or_fileobj=data, path_in_repo=name, repo_id=REPO)
        via_xet = hf_hub_download(REPO, name, endpoint=server.url, token=server.token, cache_dir=tmp_path / "a")
        assert Path(via_xet).read_bytes() == data
        via_http = hf_hub_download(REPO, name, endpoint=server.url, token=False, cache_dir=tmp_path / "b")
        assert Path(via_http).read_bytes() == data
        url = f"{server.url}/{REPO}/resolve/main/{name}"
        part = httpx.get(url, headers={"range": f"bytes={len(data) - 200_000}-"})
        assert part.status_code == 206 and part.content == data[-200_000:]


def test_a_commit_lands_when_the_xorbs_cannot_become_maps(server, api: HfApi, tmp_path: Path, monkeypatch) -> None:
    """The disk fills between the blob and the maps: the file is committed, its xorbs stay."""
    from console.server.hub import xorbs

    real = xorbs.write_atomic

    def no_room_for_maps(path: Path, data: bytes, durable: bool = False) -> None:
        if path.parent.name == "xorbmaps":
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data, durable)

    monkeypatch.setattr(xorbs, "write_atomic", no_room_for_maps)
    data = os.urandom(1024 * 1024 + 3)
    api.create_repo(REPO)
    api.upload_file(path_or_fileobj=data, path_in_repo="w.bin", repo_id=REPO)
    assert any((paths.hub_dir() / "xet" / "xorbs").iterdir())
    via_xet = hf_hub_download(REPO, "w.bin", endpoint=server.url, token=server.token, cache_dir=tmp_path / "a")
    assert Path(via_xet).read_bytes() == data


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
