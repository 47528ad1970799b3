"""The local Hub refuses what it cannot hold before it stores anything: names it cannot keep or show,
uploads over the configured maximum, uploads that stall, writes onto a full disk. A refused commit
leaves the repo as it was and the next one lands.

Driven through huggingface_hub (and raw HTTP where the client would not send the request)."""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import socket
import subprocess
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from huggingface_hub import HfApi
from huggingface_hub.errors import HfHubHTTPError
from jobs_helpers import NAMESPACE, fill_disk, make_server, mount_tmpfs

from console.server import paths

REPO = f"{NAMESPACE}/refusals"


def _auth(server: Any) -> dict[str, str]:
    return {"authorization": f"Bearer {server.token}"}


def _commit(server, path: str, content: bytes = b"x", repo: str = REPO) -> httpx.Response:
    lines = [{"key": "header", "value": {"summary": f"add {path[:20]}"}},
             {"key": "file", "value": {"path": path, "content": base64.b64encode(content).decode(),
                                       "encoding": "base64"}}]
    body = "\n".join(json.dumps(line) for line in lines)
    return httpx.post(f"{server.url}/api/models/{repo}/commit/main", content=body,
                      headers={**_auth(server), "content-type": "application/x-ndjson"}, timeout=60)


UNSTORABLE = {
    "a 300-byte name": "w" * 300 + ".txt",
    "a 300-byte folder": "d" * 300 + "/f.txt",
    "a newline": "two\nlines.txt",
    "a tab": "a\tb.txt",
    "a delete character": "a\x7fb.txt",
    "a right-to-left override": "report\u202etxt.exe",
    "an isolate": "a\u2066b.txt",
    "a .git file": ".git/config",
    "a nested .git folder": "sub/.GIT/hooks/pre-commit",
    "a blank name": " ",
    "a blank folder": "a/  /b.txt",
}


@pytest.mark.parametrize("path", list(UNSTORABLE.values()), ids=list(UNSTORABLE))
def test_an_unstorable_path_is_a_400_naming_it_and_the_next_commit_lands(server, api: HfApi, path) -> None:
    api.create_repo(REPO)
    before = api.list_repo_files(REPO)
    answer = _commit(server, path)
    assert answer.status_code == 400, answer.text
    assert "line 1: value.path" in answer.json()["error"] and repr(path[:30])[1:-1] in answer.json()["error"]
    if ".git" not in path.split("/"):  # (which huggingface_hub refuses itself)
        # huggingface_hub asks preupload first: refused there too, naming the file
        with pytest.raises(HfHubHTTPError) as refused:
            api.upload_file(path_or_fileobj=b"x", path_in_repo=path, repo_id=REPO)
        assert refused.value.response.status_code == 400 and "files[0].path" in str(refused.value)
    assert api.list_repo_files(REPO) == before  # nothing stored
    assert _commit(server, "ok.txt", b"fine").status_code == 200
    assert sorted(api.list_repo_files(REPO)) == sorted([*before, "ok.txt"])
    assert (paths.hub_dir() / "models" / REPO / "ok.txt").read_bytes() == b"fine"


def test_names_at_the_limits_are_stored(server, api: HfApi) -> None:
    api.create_repo(REPO)
    names = ["n" * 251 + ".txt", "é" * 126 + ".tx", "with space/ inner .txt", ".gitignore", "a.git/b", "日本語.txt"]
    for name in names:
        assert _commit(server, name, name.encode()).status_code == 200, name
    assert set(names) <= set(api.list_repo_files(REPO))


def _big_claim(server, route: str, body: dict) -> httpx.Response:
    return httpx.post(f"{server.url}{route}", json=body, headers=_auth(server), timeout=30)


def test_an_upload_claim_over_the_configured_maximum_is_a_413_naming_it(server, api: HfApi, monkeypatch) -> None:
    monkeypatch.setenv("CONSOLE_HUB_MAX_FILE_BYTES", str(1024 * 1024))
    api.create_repo(REPO)
    oid = "a" * 64
    for size in (2 * 1024**3, 10**18):
        batch = _big_claim(server, f"/{REPO}.git/info/lfs/objects/batch",
                           {"operation": "upload", "transfers": ["basic"], "objects": [{"oid": oid, "size": size}]})
        assert batch.status_code == 413 and "objects[0].size" in batch.json()["error"], batch.text
        pre = _big_claim(server, f"/api/models/{REPO}/preupload/main",
                         {"files": [{"path": "big.bin", "size": size, "sample": ""}]})
        assert pre.status_code == 413 and "files[0].size" in pre.json()["error"], pre.text
    lines = [{"key": "header", "value": {"summary": "big"}},
             {"key": "lfsFile", "value": {"path": "big.bin", "algo": "sha256", "oid": oid, "size": 2 * 1024**3}}]
    answer = httpx.post(f"{server.url}/api/models/{REPO}/commit/main", headers=_auth(server), timeout=30,
                        content="\n".join(json.dumps(line) for line in lines))
    assert answer.status_code == 413 and "line 1: value.size" in answer.json()["error"], answer.text
    # through the client: a 2 MiB Xet upload is refused before any byte is sent
    with pytest.raises(HfHubHTTPError) as refused:
        api.upload_file(path_or_fileobj=os.urandom(2 * 1024 * 1024), path_in_repo="w.safetensors", repo_id=REPO)
    assert refused.value.response.status_code == 413
    api.upload_file(path_or_fileobj=os.urandom(512 * 1024), path_in_repo="w.safetensors", repo_id=REPO)


def _stall(url: str, method: str, path: str, headers: dict[str, str], deadline: float) -> str:
    """Send a request whose body stops after 10 of its 1,000 bytes; the status line answered."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=deadline) as sock:
        head = f"{method} {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Length: 1000\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        sock.sendall(head.encode() + b"\r\n" + b"0123456789")
        answer = sock.recv(4096).decode("latin-1")
    return answer.split("\r\n", 1)[0]


def test_a_stalled_upload_is_dropped_with_a_408(server, api: HfApi, monkeypatch) -> None:
    monkeypatch.setenv("CONSOLE_HUB_UPLOAD_IDLE_SECONDS", "0.5")
    api.create_repo(REPO)
    batch = _big_claim(server, f"/{REPO}.git/info/lfs/objects/batch",
                       {"operation": "upload", "objects": [{"oid": "b" * 64, "size": 1000}]})
    href = urlsplit(batch.json()["objects"][0]["actions"]["upload"]["href"])
    token = httpx.get(f"{server.url}/api/models/{REPO}/xet-write-token/main", headers=_auth(server)).json()
    cas = urlsplit(token["casUrl"]).path
    stalls = {
        "commit": ("POST", f"/api/models/{REPO}/commit/main", _auth(server)),
        "lfs upload": ("PUT", f"{href.path}?{href.query}", {}),
        "xorb": ("POST", f"{cas}/v1/xorbs/default/{'c' * 64}", {"authorization": f"Bearer {token['accessToken']}"}),
        "shard": ("POST", f"{cas}/v1/shards", {"authorization": f"Bearer {token['accessToken']}"}),
    }
    for what, (method, path, headers) in stalls.items():
        started = time.monotonic()
        status = _stall(server.url, method, path, headers, deadline=20)
        assert status.split(" ")[1] == "408", (what, status)
        assert time.monotonic() - started < 10, what
    assert api.list_repo_files(REPO) == [".gitattributes"]


@pytest.fixture
def small_disk(tmp_path, monkeypatch):
    """The data folder on a real 3 MB tmpfs (skipped where the machine does not allow the mount)."""
    data = tmp_path / "small"
    if not mount_tmpfs(data):
        pytest.skip("mounting a tmpfs needs privileges this machine does not give")
    try:
        monkeypatch.setenv("CONSOLE_DATA_DIR", str(data))
        yield data
    finally:
        subprocess.run(["umount", "-l", str(data)], capture_output=True)


def test_a_full_disk_is_a_507_on_every_write_path_and_the_repo_stays_as_it_was(small_disk) -> None:
    with make_server() as srv:
        api = HfApi(endpoint=srv.url, token=srv.token)
        api.create_repo(REPO)
        api.upload_file(path_or_fileobj=b"kept", path_in_repo="kept.txt", repo_id=REPO)
        api.create_branch(REPO, branch="dev")
        api.upload_file(path_or_fileobj=b"on dev", path_in_repo="dev.txt", repo_id=REPO, revision="dev")
        before = sorted(api.list_repo_files(REPO))
        filler = small_disk / "filler"
        token = httpx.get(f"{srv.url}/api/models/{REPO}/xet-write-token/main", headers=_auth(srv)).json()
        fill_disk(filler)
        # the Xet store's own writes: a xorb (one chunk) onto the full disk
        chunk = b"x" * 1000
        xorb = bytes([0]) + len(chunk).to_bytes(3, "little") + bytes([0]) + len(chunk).to_bytes(3, "little") + chunk
        answer = httpx.post(f"{token['casUrl']}/v1/xorbs/default/{'d' * 64}", content=xorb * 200,
                            headers={"authorization": f"Bearer {token['accessToken']}"}, timeout=30)
        assert answer.status_code == 507 and "disk full" in answer.json()["error"], answer.text
        refusals = {
            "a regular file": lambda: api.upload_file(
                path_or_fileobj=b"t" * 64 * 1024, path_in_repo="new.txt", repo_id=REPO),
            "a file through Xet": lambda: api.upload_file(
                path_or_fileobj=os.urandom(400 * 1024), path_in_repo="w.safetensors", repo_id=REPO),
            "a file through the legacy LFS upload": lambda: api.upload_file(
                path_or_fileobj=io.BytesIO(os.urandom(400 * 1024)), path_in_repo="buf.bin", repo_id=REPO),
            "a new repo": lambda: api.create_repo(f"{NAMESPACE}/another"),
        }
        for what, write in refusals.items():
            started = time.monotonic()
            with pytest.raises(HfHubHTTPError) as refused:
                write()
            assert refused.value.response.status_code == 507, (what, str(refused.value))
            assert "disk full" in str(refused.value), what
            assert time.monotonic() - started < 30, what  # answered, not retried for minutes
            assert sorted(api.list_repo_files(REPO)) == before, what
        # a commit that asks no preupload and names a blob already stored: its checkout and its row
        # are what meet the full disk
        deep = "/".join(f"deep{i}" for i in range(40)) + "/dev.txt"
        answer = _commit(srv, deep, b"on dev")
        assert answer.status_code == 507 and "disk full" in answer.json()["error"], answer.text
        assert sorted(api.list_repo_files(REPO)) == before
        assert not (paths.hub_dir() / "models" / REPO / "deep0").exists()
        filler.unlink()
        api.upload_file(path_or_fileobj=b"after", path_in_repo="after.txt", repo_id=REPO)
        assert sorted(api.list_repo_files(REPO)) == sorted([*before, "after.txt"])
        checkout = paths.hub_dir() / "models" / REPO
        assert sorted(p.relative_to(checkout).as_posix() for p in checkout.rglob("*") if p.is_file()) \
            == sorted([*before, "after.txt"])


def test_a_dropped_upload_is_one_log_line_not_a_traceback(server, api: HfApi, caplog) -> None:
    api.create_repo(REPO)
    parts = urlsplit(server.url)
    caplog.set_level(logging.INFO)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(f"POST /api/models/{REPO}/commit/main HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                     f"Authorization: Bearer {server.token}\r\nContent-Length: 100000\r\n\r\n".encode()
                     + b'{"key": "header"')
        time.sleep(0.2)  # the server is reading the body when the client goes
    deadline = time.monotonic() + 20
    while not any("closed the connection" in r.getMessage() for r in caplog.records):
        assert time.monotonic() < deadline, [r.getMessage() for r in caplog.records]
        time.sleep(0.05)
    lines = [r for r in caplog.records if REPO in r.getMessage() or r.exc_info]
    assert len(lines) == 1 and lines[0].exc_info is None and lines[0].levelno == logging.INFO
    assert "after 16 bytes" in lines[0].getMessage()
    assert api.list_repo_files(REPO) == [".gitattributes"]
