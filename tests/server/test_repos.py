"""Model and dataset repos on the embedded server, through huggingface_hub's HfApi, its download
functions and the official `hf` CLI: create, commit (regular and Xet), download by revision, refs,
commits, branches, tags, delete, and the Hub's own exceptions for what is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_download, hf_hub_url, snapshot_download
from huggingface_hub.errors import (
    EntryNotFoundError,
    HfHubHTTPError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from jobs_helpers import NAMESPACE

REPO = f"{NAMESPACE}/tiny-model"
DATA = f"{NAMESPACE}/tiny-data"


@pytest.fixture
def blob() -> bytes:
    return os.urandom(3 * 1024 * 1024)


def _download(server, repo_id: str, filename: str, tmp_path: Path, **kw) -> bytes:
    path = hf_hub_download(repo_id, filename, endpoint=server.url, token=server.token,
                           cache_dir=tmp_path / "cache", **kw)
    return Path(path).read_bytes()


def test_upload_folder_with_a_binary_then_download_each_revision(server, api: HfApi, tmp_path, blob) -> None:
    api.create_repo(REPO)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"hidden": 8}')
    (folder / "weights.safetensors").write_bytes(blob)
    (folder / "sub").mkdir()
    (folder / "sub" / "notes.txt").write_text("first")
    first = api.upload_folder(folder_path=folder, repo_id=REPO, commit_message="first weights")
    api.create_tag(REPO, tag="v1")

    (folder / "sub" / "notes.txt").write_text("second")
    (folder / "weights.safetensors").write_bytes(blob[::-1])
    second = api.upload_folder(folder_path=folder, repo_id=REPO, commit_message="second weights")

    assert sorted(api.list_repo_files(REPO)) == [".gitattributes", "config.json", "sub/notes.txt",
                                                 "weights.safetensors"]
    # the tag, the first commit and main each give their own bytes
    assert _download(server, REPO, "weights.safetensors", tmp_path, revision="v1") == blob
    assert _download(server, REPO, "weights.safetensors", tmp_path, revision=first.oid) == blob
    assert _download(server, REPO, "weights.safetensors", tmp_path) == blob[::-1]
    assert _download(server, REPO, "sub/notes.txt", tmp_path, revision="v1") == b"first"
    assert _download(server, REPO, "sub/notes.txt", tmp_path) == b"second"

    # the Hub's headers: the commit, and for an LFS file its SHA-256 as ETag and its size
    meta = get_hf_file_metadata(hf_hub_url(REPO, "weights.safetensors", revision="v1", endpoint=server.url),
                                token=server.token)
    info = api.model_info(REPO, revision="v1", files_metadata=True)
    lfs = {s.rfilename: s for s in info.siblings}["weights.safetensors"].lfs
    assert meta.commit_hash == first.oid == info.sha
    assert meta.etag == lfs.sha256 and meta.size == len(blob) == lfs.size
    assert meta.xet_file_data is not None  # downloads of LFS files go through Xet, as on the Hub
    assert api.model_info(REPO).sha == second.oid

    commits = api.list_repo_commits(REPO)
    assert [c.title for c in commits] == ["second weights", "first weights", "initial commit"]
    assert commits[0].commit_id == second.oid


def test_branches_and_tags(server, api: HfApi, tmp_path) -> None:
    api.create_repo(REPO)
    api.create_branch(REPO, branch="dev")
    api.upload_file(path_or_fileobj=b"on dev", path_in_repo="x.txt", repo_id=REPO, revision="dev")
    assert "x.txt" not in api.list_repo_files(REPO)
    assert _download(server, REPO, "x.txt", tmp_path, revision="dev") == b"on dev"
    api.create_tag(REPO, tag="release", revision="dev")
    refs = api.list_repo_refs(REPO)
    assert sorted(b.name for b in refs.branches) == ["dev", "main"]
    assert [(t.name, t.target_commit) for t in refs.tags] == [
        ("release", {b.name: b.target_commit for b in refs.branches}["dev"])]

    with pytest.raises(HfHubHTTPError) as exc:
        api.create_branch(REPO, branch="dev")
    assert exc.value.response.status_code == 409
    api.create_branch(REPO, branch="dev", exist_ok=True)
    with pytest.raises(HfHubHTTPError) as exc:
        api.create_tag(REPO, tag="release")
    assert exc.value.response.status_code == 409

    # a branch name with a slash is one URL segment (%2F), as huggingface_hub quotes it
    api.create_branch(REPO, branch="feat/x")
    api.upload_file(path_or_fileobj=b"slash", path_in_repo="s.txt", repo_id=REPO, revision="feat/x")
    assert _download(server, REPO, "s.txt", tmp_path, revision="feat/x") == b"slash"
    assert "s.txt" in api.list_repo_files(REPO, revision="refs/heads/feat/x")
    api.delete_branch(REPO, branch="feat/x")

    api.delete_tag(REPO, tag="release")
    api.delete_branch(REPO, branch="dev")
    refs = api.list_repo_refs(REPO)
    assert [b.name for b in refs.branches] == ["main"] and refs.tags == []
    with pytest.raises(RevisionNotFoundError):
        api.delete_branch(REPO, branch="dev")


def test_missing_things_raise_the_hubs_own_exceptions(server, api: HfApi, tmp_path) -> None:
    with pytest.raises(RepositoryNotFoundError):
        api.model_info(f"{NAMESPACE}/nope")
    with pytest.raises(RepositoryNotFoundError):
        api.dataset_info(f"{NAMESPACE}/nope")
    with pytest.raises(RepositoryNotFoundError):
        api.delete_repo(f"{NAMESPACE}/nope")
    api.delete_repo(f"{NAMESPACE}/nope", missing_ok=True)
    with pytest.raises(RepositoryNotFoundError):
        _download(server, f"{NAMESPACE}/nope", "config.json", tmp_path)

    api.create_repo(REPO)
    with pytest.raises(RevisionNotFoundError):
        api.model_info(REPO, revision="no-such-branch")
    with pytest.raises(RevisionNotFoundError):
        api.list_repo_files(REPO, revision="no-such-branch")
    with pytest.raises(EntryNotFoundError):
        _download(server, REPO, "missing.bin", tmp_path)
    with pytest.raises(EntryNotFoundError):
        list(api.list_repo_tree(REPO, path_in_repo="no/such/folder"))
    # a model repo is not a dataset repo
    with pytest.raises(RepositoryNotFoundError):
        api.dataset_info(REPO)

    api.delete_repo(REPO)
    with pytest.raises(RepositoryNotFoundError):
        api.model_info(REPO)
    assert not api.repo_exists(REPO)


def test_dataset_repo_tree_and_paths_info(server, api: HfApi, tmp_path) -> None:
    url = api.create_repo(DATA, repo_type="dataset", private=True)
    assert url == f"{server.url}/datasets/{DATA}"
    with pytest.raises(HfHubHTTPError) as exc:
        api.create_repo(DATA, repo_type="dataset")
    assert exc.value.response.status_code == 409
    assert api.create_repo(DATA, repo_type="dataset", exist_ok=True) == url
    rows = "".join(json.dumps({"prompt": f"q{i}", "completion": f"a{i}"}) + "\n" for i in range(20))
    api.upload_file(path_or_fileobj=rows.encode(), path_in_repo="data/train.jsonl", repo_id=DATA,
                    repo_type="dataset")
    info = api.dataset_info(DATA)
    assert info.private is True
    assert [s.rfilename for s in info.siblings] == [".gitattributes", "data/train.jsonl"]
    top = {e.path: type(e).__name__ for e in api.list_repo_tree(DATA, repo_type="dataset")}
    assert top == {".gitattributes": "RepoFile", "data": "RepoFolder"}
    deep = [e.path for e in api.list_repo_tree(DATA, repo_type="dataset", recursive=True)]
    assert sorted(deep) == [".gitattributes", "data", "data/train.jsonl"]
    found = api.get_paths_info(DATA, ["data/train.jsonl", "data", "absent"], repo_type="dataset")
    assert [(type(e).__name__, e.path) for e in found] == [("RepoFile", "data/train.jsonl"), ("RepoFolder", "data")]
    assert found[0].size == len(rows)
    local = snapshot_download(DATA, repo_type="dataset", endpoint=server.url, token=server.token,
                              local_dir=tmp_path / "snap")
    assert (Path(local) / "data" / "train.jsonl").read_text() == rows

    api.upload_file(path_or_fileobj=b"x", path_in_repo="extra.txt", repo_id=DATA, repo_type="dataset")
    api.delete_file("extra.txt", repo_id=DATA, repo_type="dataset")
    api.delete_folder("data", repo_id=DATA, repo_type="dataset")
    assert api.list_repo_files(DATA, repo_type="dataset") == [".gitattributes"]


def _commit(server, repo_id: str, lines: list[dict]) -> httpx.Response:
    body = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    return httpx.post(f"{server.url}/api/models/{repo_id}/commit/main", content=body,
                      headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/x-ndjson"})


HEADER = {"key": "header", "value": {"summary": "s", "description": ""}}


@pytest.mark.parametrize(("lines", "field"), [
    ([{"key": "header", "value": {"summary": ""}}], "header.summary"),
    ([HEADER, {"key": "file", "value": {"path": "ok.txt", "content": "aGk="}},
      {"key": "file", "value": {"path": "b.txt", "content": "!!!", "encoding": "base64"}}], "value.content"),
    ([HEADER, {"key": "file", "value": {"path": "../up.txt", "content": "aGk=", "encoding": "base64"}}],
     "value.path"),
    ([HEADER, {"key": "lfsFile", "value": {"path": "w.bin", "algo": "sha256", "oid": "ab" * 32, "size": 3}}],
     "lfsFile"),
    ([HEADER, {"key": "rename", "value": {"path": "x"}}], "key"),
    ([HEADER, {"key": "deletedFile", "value": {"path": "not-there.txt"}}], "not-there.txt"),
])
def test_a_bad_commit_names_the_field_and_changes_nothing(server, api: HfApi, lines, field) -> None:
    api.create_repo(REPO)
    before = api.model_info(REPO).sha
    r = _commit(server, REPO, lines)
    assert 400 <= r.status_code < 500 and field in r.json()["error"], r.text
    assert api.model_info(REPO).sha == before
    assert api.list_repo_files(REPO) == [".gitattributes"]


@pytest.mark.parametrize(("payload", "field"), [
    ({"organization": NAMESPACE, "type": "model"}, "name"),
    ({"name": "x", "type": "space"}, "type"),
    ({"name": "x", "visibility": "secret"}, "visibility"),
    ({"name": "bad name!"}, "invalid model repo id"),
    ({"name": "x", "organization": "someone-else"}, "organization"),
])
def test_a_bad_create_names_the_field_and_creates_nothing(server, api: HfApi, payload, field) -> None:
    r = httpx.post(f"{server.url}/api/repos/create", json=payload,
                   headers={"Authorization": f"Bearer {server.token}"})
    assert 400 <= r.status_code < 500 and field in r.json()["error"], r.text
    assert not api.repo_exists(f"{NAMESPACE}/x")


def test_bad_ref_names_are_refused(server, api: HfApi) -> None:
    api.create_repo(REPO)
    for bad in ("a..b", "has space", "-dash"):
        with pytest.raises(HfHubHTTPError) as exc:
            api.create_tag(REPO, tag=bad)
        assert exc.value.response.status_code == 400 and "tag" in exc.value.response.json()["error"]
    refs = api.list_repo_refs(REPO)
    assert refs.tags == [] and [b.name for b in refs.branches] == ["main"]


def test_without_the_token_a_private_repo_is_not_served(server, api: HfApi) -> None:
    """(A public repo reads without a token, as on the Hub: tests/server/test_repo_fidelity.py.)"""
    api.create_repo(REPO, private=True)
    for method, path in (("GET", f"/api/models/{REPO}"), ("GET", f"/{REPO}/resolve/main/.gitattributes"),
                         ("POST", "/api/repos/create")):
        assert httpx.request(method, server.url + path).status_code == 401
    # the LFS upload URL takes no token but only its own signature
    assert httpx.put(f"{server.url}/api/lfs-upload/{'ab' * 32}/3", content=b"abc").status_code == 403


def test_the_hf_cli(server, hf, tmp_path, blob) -> None:
    hf("repos", "create", "cli-model")
    hf("repos", "create", "cli-data", "--repo-type", "dataset")
    folder = tmp_path / "up"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(blob)
    (folder / "README.md").write_text("# a tiny model\n")
    hf("upload", f"{NAMESPACE}/cli-model", str(folder), ".")
    hf("repos", "tag", "create", f"{NAMESPACE}/cli-model", "v1")
    hf("repos", "branch", "create", f"{NAMESPACE}/cli-model", "exp")
    (folder / "model.safetensors").write_bytes(b"changed")
    hf("upload", f"{NAMESPACE}/cli-model", str(folder / "model.safetensors"), "model.safetensors")
    hf("download", f"{NAMESPACE}/cli-model", "--revision", "v1", "--local-dir", str(tmp_path / "v1"))
    assert (tmp_path / "v1" / "model.safetensors").read_bytes() == blob
    hf("download", f"{NAMESPACE}/cli-model", "model.safetensors", "--local-dir", str(tmp_path / "main"))
    assert (tmp_path / "main" / "model.safetensors").read_bytes() == b"changed"
    assert "v1" in hf("repos", "tag", "list", f"{NAMESPACE}/cli-model").stdout

    info = hf("models", "info", f"{NAMESPACE}/cli-model").stdout
    assert f"{NAMESPACE}/cli-model" in info and "model.safetensors" in info
    hf("upload", f"{NAMESPACE}/cli-data", str(folder / "README.md"), "README.md", "--repo-type", "dataset")
    assert "README.md" in hf("datasets", "info", f"{NAMESPACE}/cli-data").stdout
    missing = hf("models", "info", f"{NAMESPACE}/absent", check=False)
    assert missing.returncode != 0 and "not found" in (missing.stdout + missing.stderr).lower()

    hf("repos", "delete", f"{NAMESPACE}/cli-model", "--yes")
    gone = hf("models", "info", f"{NAMESPACE}/cli-model", check=False)
    assert gone.returncode != 0


def test_transformers_and_datasets_load_by_repo_id_through_hf_endpoint(server, api: HfApi, tmp_path) -> None:
    """What a training job does on the Hub: the base model and the dataset by repo id."""
    api.create_repo(DATA, repo_type="dataset")
    rows = "".join(json.dumps({"prompt": f"q{i}", "completion": f"a{i}"}) + "\n" for i in range(20))
    api.upload_file(path_or_fileobj=rows.encode(), path_in_repo="train.jsonl", repo_id=DATA, repo_type="dataset")
    api.create_repo(REPO)
    build = (
        "import sys\nfrom transformers import GPT2Config, GPT2LMHeadModel\n"
        "GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=50, n_positions=16,"
        " bos_token_id=0, eos_token_id=0)).save_pretrained(sys.argv[1])\n"
    )
    subprocess.run([sys.executable, "-c", build, str(tmp_path / "tiny")], check=True, timeout=300)
    api.upload_folder(folder_path=tmp_path / "tiny", repo_id=REPO)
    load = (
        "import sys, datasets, transformers\n"
        "ds = datasets.load_dataset(sys.argv[1], split='train')\n"
        "print('rows', len(ds), ds[3]['completion'])\n"
        "m = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[2])\n"
        "print('params', sum(p.numel() for p in m.parameters()))\n"
    )
    env = dict(os.environ, HF_ENDPOINT=server.url, HF_TOKEN=server.token, HF_HOME=str(tmp_path / "hf-home"),
               HF_HUB_DISABLE_TELEMETRY="1")
    proc = subprocess.run([sys.executable, "-c", load, DATA, REPO], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rows 20 a3" in proc.stdout and "params 1416" in proc.stdout


def test_a_job_mounts_the_default_branch_of_an_uploaded_repo(server, api: HfApi, hf) -> None:
    api.create_repo(DATA, repo_type="dataset")
    api.upload_file(path_or_fileobj=b'{"a": 1}\n', path_in_repo="train/rows.jsonl", repo_id=DATA,
                    repo_type="dataset")
    api.upload_file(path_or_fileobj=b"old", path_in_repo="gone.txt", repo_id=DATA, repo_type="dataset")
    api.create_branch(DATA, branch="dev", repo_type="dataset")
    api.upload_file(path_or_fileobj=b"dev only", path_in_repo="dev.txt", repo_id=DATA, repo_type="dataset",
                    revision="dev")
    api.delete_file("gone.txt", repo_id=DATA, repo_type="dataset")
    out = hf("jobs", "run", "-v", f"hf://datasets/{DATA}:/data/ds", "python:3.12", "sh", "-c",
             "cd /data/ds && find . -type f | sort; cat train/rows.jsonl")
    assert "./.gitattributes\n./train/rows.jsonl\n{\"a\": 1}\n" in out.stdout, out.stdout
    api.delete_repo(DATA, repo_type="dataset")
    absent = hf("jobs", "run", "-v", f"hf://datasets/{DATA}:/d", "python:3.12", "ls", check=False)
    assert f"dataset {DATA} is not in the local Hub stand-in" in absent.stdout + absent.stderr


def test_a_binary_buffer_goes_through_the_legacy_lfs_upload(server, api: HfApi, tmp_path, blob) -> None:
    """huggingface_hub cannot send an open buffer through Xet: it falls back to the LFS batch API
    and PUTs the bytes to the URL the batch answer signs."""
    import io

    api.create_repo(REPO)
    api.upload_file(path_or_fileobj=io.BytesIO(blob), path_in_repo="w.bin", repo_id=REPO)
    [w] = [s for s in api.model_info(REPO, files_metadata=True).siblings if s.rfilename == "w.bin"]
    assert w.lfs is not None and w.size == len(blob)
    assert _download(server, REPO, "w.bin", tmp_path) == blob

    auth = {"Authorization": f"Bearer {server.token}"}
    oid = "ab" * 32
    r = httpx.post(f"{server.url}/{REPO}.git/info/lfs/objects/batch", headers=auth,
                   json={"operation": "upload", "objects": [{"oid": oid, "size": 3}], "hash_algo": "sha256"})
    href = r.json()["objects"][0]["actions"]["upload"]["href"]
    assert httpx.put(href.replace("sig=", "sig=0"), content=b"abc").status_code == 403
    wrong = httpx.put(href, content=b"abc")  # not the bytes whose SHA-256 is `oid`
    assert wrong.status_code == 400 and "oid" in wrong.json()["error"]
    body = json.dumps(HEADER) + "\n" + json.dumps(
        {"key": "lfsFile", "value": {"path": "x.bin", "algo": "sha256", "oid": oid, "size": 3}}) + "\n"
    r = httpx.post(f"{server.url}/api/models/{REPO}/commit/main", headers=auth, content=body)
    assert r.status_code == 422 and "x.bin" not in api.list_repo_files(REPO)


def test_strict_mode_serves_repos_as_the_hub_does(tmp_path, blob) -> None:
    """Strict mode reshapes only the jobs answers: the repo answers are already the Hub's."""
    from jobs_helpers import make_server

    srv = make_server(strict=True)
    srv.start()
    try:
        api = HfApi(endpoint=srv.url, token=srv.token)
        api.create_repo(REPO)
        api.upload_file(path_or_fileobj=blob, path_in_repo="w.safetensors", repo_id=REPO)
        assert _download(srv, REPO, "w.safetensors", tmp_path) == blob
        assert [s.rfilename for s in api.model_info(REPO).siblings] == [".gitattributes", "w.safetensors"]
        with pytest.raises(RepositoryNotFoundError):
            api.model_info(f"{NAMESPACE}/absent")
    finally:
        srv.stop()


def test_model_info_of_a_base_model_the_server_knows(tmp_path) -> None:
    """A base model a job names (the server's `models`) has its info answered, as on the Hub,
    though no repo of that name is stored; any other id is RepoNotFound."""
    from starlette.testclient import TestClient

    from console.server.app import create_app
    from console.server.core import JobsService, ServiceSettings

    svc = JobsService(ServiceSettings(namespace=NAMESPACE), db_path=tmp_path / "jobs.db")
    try:
        client = TestClient(create_app(svc, "tok", models=["Org/base-0.5B", "gpt2"]))
        auth = {"Authorization": "Bearer tok"}
        for repo_id in ("Org/base-0.5B", "gpt2"):
            r = client.get(f"/api/models/{repo_id}", headers=auth)
            assert r.status_code == 200 and r.json()["id"] == repo_id
        r = client.get("/api/models/Org/other", headers=auth)
        assert r.status_code == 404 and r.headers["x-error-code"] == "RepoNotFound"
    finally:
        svc.store.close()
        svc.hub.close()
