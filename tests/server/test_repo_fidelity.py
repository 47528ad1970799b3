"""Model and dataset repos answer as the Hub does where huggingface_hub relies on it: public repos
read without a token (and nothing else does), the Hub's words for refused branch, tag and commit
calls, short commit ids, case-insensitive repo ids, folder deletes, `.gitignore` and
`.gitattributes` at upload, last commits, settings and moves (of repos and buckets). Every case
goes through the real `HfApi` (or plain HTTP where the header itself is the point) against a real
embedded server."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationDelete,
    HfApi,
    hf_hub_download,
)
from huggingface_hub.errors import (
    EntryNotFoundError,
    HfHubHTTPError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from jobs_helpers import NAMESPACE

REPO = f"{NAMESPACE}/open-model"
PRIVATE = f"{NAMESPACE}/closed-data"
INVALID = "Invalid credentials in Authorization header"


@pytest.fixture
def anon(server) -> HfApi:
    return HfApi(endpoint=server.url, token=False)


def _download(server, repo_id: str, filename: str, tmp_path: Path, token, **kw) -> bytes:
    path = hf_hub_download(repo_id, filename, endpoint=server.url, token=token, cache_dir=tmp_path / "cache", **kw)
    return Path(path).read_bytes()


def _public_and_private(api: HfApi) -> bytes:
    blob = bytes(range(256)) * 4096  # 1 MiB, binary: an LFS file (through Xet)
    api.create_repo(REPO)
    api.create_commit(REPO, commit_message="files", operations=[
        CommitOperationAdd("config.json", b'{"a": 1}'), CommitOperationAdd("weights.bin", blob)])
    api.create_repo(PRIVATE, repo_type="dataset", private=True)
    api.upload_file(path_or_fileobj=b"secret", path_in_repo="rows.txt", repo_id=PRIVATE, repo_type="dataset")
    return blob


def test_a_public_repo_reads_without_a_token(server, api: HfApi, anon: HfApi, tmp_path) -> None:
    blob = _public_and_private(api)
    assert anon.model_info(REPO).sha == api.model_info(REPO).sha
    assert anon.repo_exists(REPO) and anon.file_exists(REPO, "config.json")
    assert sorted(anon.list_repo_files(REPO)) == [".gitattributes", "config.json", "weights.bin"]
    assert [b.name for b in anon.list_repo_refs(REPO).branches] == ["main"]
    assert [c.title for c in anon.list_repo_commits(REPO)] == ["files", "initial commit"]
    assert [p.path for p in anon.get_paths_info(REPO, ["config.json"])] == ["config.json"]
    assert _download(server, REPO, "config.json", tmp_path, token=False) == b'{"a": 1}'
    assert _download(server, REPO, "weights.bin", tmp_path, token=False) == blob
    # without a token an LFS file comes over HTTP: no Xet hash, so no CAS token is asked for
    head = httpx.head(f"{server.url}/{REPO}/resolve/main/weights.bin")
    assert head.status_code == 200 and "x-xet-hash" not in head.headers
    with_token = httpx.head(f"{server.url}/{REPO}/resolve/main/weights.bin",
                            headers={"Authorization": f"Bearer {server.token}"})
    assert "x-xet-hash" in with_token.headers


def test_a_private_or_missing_repo_is_not_found_without_a_token(server, api: HfApi, anon: HfApi, tmp_path) -> None:
    _public_and_private(api)
    for repo_id in (PRIVATE, f"{NAMESPACE}/absent"):
        with pytest.raises(RepositoryNotFoundError, match="Repository Not Found"):
            anon.dataset_info(repo_id)
        assert not anon.repo_exists(repo_id, repo_type="dataset")
        assert not anon.file_exists(repo_id, "rows.txt", repo_type="dataset")
        with pytest.raises(RepositoryNotFoundError):
            _download(server, repo_id, "rows.txt", tmp_path, token=False, repo_type="dataset")
        with pytest.raises(RepositoryNotFoundError):
            anon.list_repo_files(repo_id, repo_type="dataset")
        # a private repo and a missing one get the same answer: nothing tells them apart
        r = httpx.get(f"{server.url}/api/datasets/{repo_id}")
        assert (r.status_code, r.headers["x-error-code"], r.json()) == (401, "RepoNotFound",
                                                                        {"error": "Repository not found"})
    # made public, it reads; made private again, it does not
    api.update_repo_settings(PRIVATE, repo_type="dataset", visibility="public")
    assert _download(server, PRIVATE, "rows.txt", tmp_path, token=False, repo_type="dataset") == b"secret"
    api.update_repo_settings(PRIVATE, repo_type="dataset", private=True)
    with pytest.raises(RepositoryNotFoundError):
        anon.dataset_info(PRIVATE)
    assert api.dataset_info(PRIVATE).private is True


def test_without_a_token_nothing_is_written_and_nothing_else_is_read(server, api: HfApi, anon: HfApi) -> None:
    _public_and_private(api)
    before = api.model_info(REPO).sha
    with pytest.raises(HfHubHTTPError) as exc:
        anon.upload_file(path_or_fileobj=b"x", path_in_repo="x.txt", repo_id=REPO)
    assert exc.value.response.status_code == 401
    for call in (lambda: anon.create_branch(REPO, branch="b"), lambda: anon.create_tag(REPO, tag="t"),
                 lambda: anon.delete_file("config.json", REPO), lambda: anon.delete_repo(REPO),
                 lambda: anon.create_repo(f"{NAMESPACE}/new"),
                 lambda: anon.update_repo_settings(REPO, private=True)):
        with pytest.raises(HfHubHTTPError) as exc:
            call()
        assert exc.value.response.status_code == 401
    model = f"/api/models/{REPO}"
    for method, path in (
        ("GET", f"{model}/xet-read-token/main"), ("GET", f"{model}/xet-write-token/main"),
        ("POST", f"{model}/preupload/main"), ("POST", f"{model}/commit/main"), ("DELETE", f"{model}/branch/x"),
        ("POST", f"/{REPO}.git/info/lfs/objects/batch"), ("GET", "/api/whoami-v2"),
        ("GET", f"/api/jobs/{NAMESPACE}"), ("GET", f"/api/scheduled-jobs/{NAMESPACE}"),
        ("GET", f"/api/buckets/{NAMESPACE}"), ("GET", f"{model}/auth-check/write"), ("GET", "/api/jobs/hardware"),
        ("PUT", f"{model}/settings"),
    ):
        r = httpx.request(method, server.url + path)
        assert (r.status_code, r.json()["error"]) == (401, INVALID), (method, path)
    api.create_bucket(f"{NAMESPACE}/open-bucket")  # a public bucket still needs the token
    assert httpx.get(f"{server.url}/api/buckets/{NAMESPACE}/open-bucket").status_code == 401
    # a wrong or empty token is refused on a public repo too: only the absent header reads
    for header in ("Bearer wrong", "", f"Bearer {server.token}x"):
        r = httpx.get(f"{server.url}{model}", headers={"Authorization": header})
        assert (r.status_code, r.json()["error"]) == (401, INVALID)
    assert api.model_info(REPO).sha == before and api.list_repo_refs(REPO).tags == []
    assert api.repo_exists(REPO) and not api.repo_exists(f"{NAMESPACE}/new")


def test_listing_and_auth_check_show_a_caller_without_a_token_the_public_repos(server, api: HfApi,
                                                                            anon: HfApi) -> None:
    _public_and_private(api)
    api.create_repo(f"{NAMESPACE}/hidden-model", private=True)
    assert {m.id for m in api.list_models(author=NAMESPACE)} == {REPO, f"{NAMESPACE}/hidden-model"}
    assert [m.id for m in anon.list_models(author=NAMESPACE)] == [REPO]
    assert [m.id for m in api.list_models(search="HIDDEN")] == [f"{NAMESPACE}/hidden-model"]
    assert [d.id for d in api.list_datasets(author=NAMESPACE)] == [PRIVATE]
    assert list(anon.list_datasets(author=NAMESPACE)) == []
    assert list(api.list_models(author="someone-else")) == []
    api.auth_check(PRIVATE, repo_type="dataset")
    api.auth_check(REPO, write=True)
    anon.auth_check(REPO)
    with pytest.raises(RepositoryNotFoundError):
        anon.auth_check(PRIVATE, repo_type="dataset")
    with pytest.raises(RepositoryNotFoundError):
        api.auth_check(f"{NAMESPACE}/absent")


def test_readme_metadata_is_validated_before_a_commit(server, api: HfApi) -> None:
    api.create_repo(REPO)
    with pytest.raises(ValueError, match="Invalid metadata in README.md"):
        api.create_commit(REPO, commit_message="bad card", operations=[
            CommitOperationAdd("README.md", b"\n---\nmodel-index: foo\n---\n\ntext\n")])
    with pytest.warns(UserWarning, match="empty or missing yaml metadata"):
        api.create_commit(REPO, commit_message="bare card", operations=[CommitOperationAdd("README.md", b"# x\n")])
    api.create_commit(REPO, commit_message="card", operations=[
        CommitOperationAdd("README.md", b"---\nlicense: mit\ntags: [a]\n---\n# x\n")])
    assert [c.title for c in api.list_repo_commits(REPO)] == ["card", "bare card", "initial commit"]


def test_branch_and_tag_refusals_speak_as_the_hub(server, api: HfApi) -> None:
    api.create_repo(REPO)
    api.create_branch(REPO, branch="dev")
    with pytest.raises(HfHubHTTPError, match="Reference refs/heads/dev already exists"):
        api.create_branch(REPO, branch="dev")
    with pytest.raises(HfHubHTTPError, match="Reference refs/heads/main already exists"):
        api.create_branch(REPO, branch="main")
    with pytest.raises(HfHubHTTPError, match="Cannot delete refs/heads/main"):
        api.delete_branch(REPO, branch="main")
    api.create_tag(REPO, tag="v1")
    for missing in ("nope", "v1"):  # a tag is not a branch
        with pytest.raises(RevisionNotFoundError, match="Invalid rev id"):
            api.delete_branch(REPO, branch=missing)
    # the revision is looked up before the tag's name is judged
    with pytest.raises(RevisionNotFoundError):
        api.create_tag(REPO, tag="bad name", revision="no-such-revision")


def test_a_commit_id_full_or_short_names_a_revision(server, api: HfApi) -> None:
    api.create_repo(REPO, repo_type="dataset")
    first = api.upload_file(path_or_fileobj=b"1", path_in_repo="a.txt", repo_id=REPO, repo_type="dataset")
    second = api.upload_file(path_or_fileobj=b"2", path_in_repo="b.txt", repo_id=REPO, repo_type="dataset")
    api.create_tag(REPO, tag="full", revision=first.oid, repo_type="dataset")
    api.create_tag(REPO, tag="short", revision=second.oid[:7], repo_type="dataset")
    assert api.dataset_info(REPO, revision="full").sha == first.oid
    assert api.dataset_info(REPO, revision="short").sha == second.oid
    assert api.list_repo_files(REPO, revision=first.oid[:10], repo_type="dataset") == [".gitattributes", "a.txt"]
    with pytest.raises(RevisionNotFoundError):
        api.dataset_info(REPO, revision="0000000")


def test_commit_errors_name_what_the_client_matches(server, api: HfApi) -> None:
    api.create_repo(REPO)
    parent = api.model_info(REPO).sha
    api.upload_file(path_or_fileobj=b"x", path_in_repo="x.txt", repo_id=REPO)
    with pytest.raises(HfHubHTTPError) as exc:
        api.create_commit(REPO, operations=[CommitOperationAdd("y.txt", b"y")], commit_message="late",
                          parent_commit=parent)
    assert exc.value.response.status_code == 412
    assert "The branch was updated since you opened this page. Please refresh and try again." in str(exc.value)

    # a repo that does not exist: the client's own text, with the request id and nothing more
    with pytest.raises(RepositoryNotFoundError) as missing:
        api.create_commit(f"{NAMESPACE}/absent", operations=[CommitOperationAdd("c.json", b"{}")],
                          commit_message="m")
    request_id = missing.value.response.headers["X-Request-Id"]
    assert str(missing.value).startswith(f"404 Client Error. (Request ID: {request_id})\n\nRepository Not Found")
    assert str(missing.value).endswith("Please use `create_repo` if it's not the case.")
    with pytest.raises(HfHubHTTPError, match=re.compile(r"404 Client Error.+\(Request ID: .+\).*Repository Not Found",
                                                        re.DOTALL)):
        api.delete_repo(f"{NAMESPACE}/absent")

    # a path that leads up is refused as the Hub does, with a 422
    with pytest.raises(HfHubHTTPError) as bad:
        api.upload_file(path_or_fileobj=b"c", path_in_repo="..\\up.txt", repo_id=REPO)
    assert bad.value.response.status_code == 422
    assert sorted(api.list_repo_files(REPO)) == [".gitattributes", "x.txt"]


def test_a_repo_id_without_namespace_is_not_found(server, api: HfApi) -> None:
    assert not api.file_exists("no-namespace", "file.txt")
    for path in ("/no-namespace/resolve/main/file.txt", "/datasets/no-namespace/resolve/main/file.txt"):
        r = httpx.head(server.url + path, headers={"Authorization": f"Bearer {server.token}"})
        assert (r.status_code, r.headers["x-error-code"]) == (404, "RepoNotFound")


def test_a_commit_deletes_a_folder_named_with_or_without_its_slash(server, api: HfApi, tmp_path) -> None:
    api.create_repo(REPO)
    api.create_commit(REPO, commit_message="init", operations=[
        CommitOperationAdd("1/a.md", b"a"), CommitOperationAdd("1/b.md", b"b"), CommitOperationAdd("2/c.md", b"c"),
        CommitOperationAdd("3/d.md", b"d")])
    api.create_commit(REPO, commit_message="drop 1/", operations=[CommitOperationDelete("1/")])
    with pytest.raises(EntryNotFoundError):
        _download(server, REPO, "1/a.md", tmp_path, token=server.token)
    api.create_commit(REPO, commit_message="drop 2", operations=[CommitOperationDelete("2")])
    assert sorted(api.list_repo_files(REPO)) == [".gitattributes", "3/d.md"]


def test_upload_honours_gitignore_and_gitattributes(server, api: HfApi, tmp_path) -> None:
    api.create_repo(REPO)
    folder = tmp_path / "up"
    (folder / "nested").mkdir(parents=True)
    (folder / "keep.txt").write_text("keep")
    (folder / "nested" / "file.txt").write_text("ignored")
    (folder / ".gitignore").write_text("nested/*\n")
    api.upload_folder(folder_path=folder, repo_id=REPO)  # the .gitignore the commit brings
    assert sorted(api.list_repo_files(REPO)) == [".gitattributes", ".gitignore", "keep.txt"]

    api.upload_file(path_or_fileobj=b"*.log\n", path_in_repo=".gitignore", repo_id=REPO)
    (folder / ".gitignore").unlink()
    (folder / "run.log").write_text("log")
    api.upload_folder(folder_path=folder, repo_id=REPO)  # the .gitignore the branch has
    files = api.list_repo_files(REPO)
    assert "nested/file.txt" in files and "run.log" not in files

    # the branch's .gitattributes decides which small text files are LFS
    api.upload_file(path_or_fileobj=b"*.png filter=lfs diff=lfs merge=lfs -text\n", path_in_repo=".gitattributes",
                    repo_id=REPO)
    api.upload_file(path_or_fileobj=b"image data", path_in_repo="image.png", repo_id=REPO)
    api.upload_file(path_or_fileobj=b"text", path_in_repo="notes.md", repo_id=REPO)
    siblings = {s.rfilename: s for s in api.model_info(REPO, files_metadata=True).siblings}
    assert siblings["image.png"].lfs is not None and siblings["notes.md"].lfs is None


def test_repo_ids_are_case_insensitive(server, api: HfApi) -> None:
    repo_id = f"{NAMESPACE}/CaSe-Model"
    api.create_repo(repo_id)
    api.create_commit(repo_id.lower(), commit_message="lower", operations=[CommitOperationAdd("f.txt", b"f")])
    assert "f.txt" in api.list_repo_files(repo_id)
    assert api.model_info(repo_id.upper().replace(NAMESPACE.upper(), NAMESPACE)).id == repo_id
    with pytest.raises(HfHubHTTPError) as exc:
        api.create_repo(repo_id.lower())
    assert exc.value.response.status_code == 409


def test_last_commits_and_formatted_commits(server, api: HfApi) -> None:
    api.create_repo(REPO)
    api.create_commit(REPO, commit_message="first", operations=[
        CommitOperationAdd("a.txt", b"a"), CommitOperationAdd("d/b.txt", b"b")])
    api.create_commit(REPO, commit_message="second <b>", operations=[CommitOperationAdd("a.txt", b"a2")])
    found = {e.path: e.last_commit.title for e in api.get_paths_info(REPO, ["a.txt", "d/b.txt", "d"], expand=True)}
    assert found == {"a.txt": "second <b>", "d/b.txt": "first", "d": "first"}
    tree = {e.path: e.last_commit.title for e in api.list_repo_tree(REPO, expand=True)}
    assert tree == {".gitattributes": "initial commit", "a.txt": "second <b>", "d": "first"}
    [newest, *_] = api.list_repo_commits(REPO, formatted=True)
    assert newest.formatted_title == "second &lt;b&gt;" and newest.formatted_message is not None
    assert api.list_repo_commits(REPO)[0].formatted_title is None


def test_settings_and_moves_of_repos(server, api: HfApi, tmp_path) -> None:
    api.create_repo(REPO)
    api.update_repo_settings(REPO, visibility="private")
    assert api.model_info(REPO).private is True
    api.update_repo_settings(REPO, private=False)
    assert api.model_info(REPO).private is False
    with pytest.raises(HfHubHTTPError, match="gated"):
        api.update_repo_settings(REPO, gated="manual")

    api.upload_file(path_or_fileobj=b"x", path_in_repo="x.txt", repo_id=REPO)
    api.update_repo_settings(REPO, private=True)
    moved = f"{NAMESPACE}/moved-model"
    api.move_repo(REPO, moved)
    assert "x.txt" in api.list_repo_files(moved)
    # reads of the old id lead to the renamed repo, as the Hub redirects them; writes do not
    assert api.model_info(REPO).id == moved
    assert _download(server, REPO, "x.txt", tmp_path, token=server.token) == b"x"
    with pytest.raises(RepositoryNotFoundError):
        HfApi(endpoint=server.url, token=False).model_info(REPO)  # still private
    with pytest.raises(RepositoryNotFoundError):
        api.upload_file(path_or_fileobj=b"y", path_in_repo="y.txt", repo_id=REPO)
    with pytest.raises(RepositoryNotFoundError):
        api.delete_repo(REPO)
    api.create_repo(REPO)  # the old id, taken again, is a repo of its own
    assert api.list_repo_files(REPO) == [".gitattributes"] and "x.txt" in api.list_repo_files(moved)
    with pytest.raises(HfHubHTTPError, match="A model repository called .* already exists"):
        api.move_repo(moved, REPO)
    with pytest.raises(HfHubHTTPError) as exc:
        api.move_repo(moved, "someone-else/model")
    assert exc.value.response.status_code == 403


def test_the_hf_cli_moves_repos_and_buckets_and_sets_privacy(server, api: HfApi, hf) -> None:
    hf("repos", "create", "cli-repo", "--repo-type", "dataset")
    hf("repos", "settings", f"{NAMESPACE}/cli-repo", "--repo-type", "dataset", "--private")
    assert api.dataset_info(f"{NAMESPACE}/cli-repo").private is True
    hf("repos", "move", f"{NAMESPACE}/cli-repo", f"{NAMESPACE}/cli-moved", "--repo-type", "dataset")
    assert api.dataset_info(f"{NAMESPACE}/cli-moved").private is True
    assert {d.id for d in api.list_datasets()} == {f"{NAMESPACE}/cli-moved"}
    hf("buckets", "create", f"{NAMESPACE}/cli-bucket")
    hf("buckets", "move", f"{NAMESPACE}/cli-bucket", f"{NAMESPACE}/cli-bucket-2")
    assert api.bucket_info(f"{NAMESPACE}/cli-bucket-2").id == f"{NAMESPACE}/cli-bucket-2"


def test_settings_and_moves_of_buckets(server, api: HfApi, hf) -> None:
    bucket = f"{NAMESPACE}/bkt"
    api.create_bucket(bucket)
    api.update_bucket_settings(bucket, private=True)
    assert api.bucket_info(bucket).private is True
    api.update_bucket_settings(bucket, private=False)
    assert api.bucket_info(bucket).private is False

    api.batch_bucket_files(bucket, add=[(b"hello", "a/b.txt")])
    api.move_bucket(bucket, f"{NAMESPACE}/renamed")
    assert [f.path for f in api.list_bucket_tree(f"{NAMESPACE}/renamed")] == ["a/b.txt"]
    assert bucket not in {b.id for b in api.list_buckets()}
    api.create_bucket(bucket)
    with pytest.raises(HfHubHTTPError) as exc:
        api.move_bucket(f"{NAMESPACE}/renamed", bucket)
    assert exc.value.response.status_code == 409
    hf("buckets", "settings", f"{NAMESPACE}/renamed", "--private")
    assert api.bucket_info(f"{NAMESPACE}/renamed").private is True
