"""Pull requests as huggingface.co has them, through the real huggingface_hub client: a commit with
`create_pr=True` opens `refs/pr/N` and its discussion; the PR lists, reads by revision (resolve,
tree, paths-info, `HfFileSystem`), takes more commits, comments, closes, and merges into main."""

from __future__ import annotations

import os

import httpx
import pytest
from huggingface_hub import HfApi, HfFileSystem, hf_hub_download
from huggingface_hub.errors import HfHubHTTPError
from jobs_helpers import NAMESPACE

REPO = f"{NAMESPACE}/pr-repo"


def test_a_commit_with_create_pr_opens_refs_pr_1_readable_by_revision(server, api: HfApi, tmp_path) -> None:
    api.create_repo(REPO)
    api.upload_file(path_or_fileobj=b"v1", path_in_repo="a.txt", repo_id=REPO)
    weights = os.urandom(200 * 1024)
    info = api.upload_file(path_or_fileobj=weights, path_in_repo="w.bin", repo_id=REPO, create_pr=True,
                           commit_message="Add weights", commit_description="please merge")
    assert info.pr_revision == "refs/pr/1" and info.pr_num == 1
    assert info.pr_url.endswith(f"/{REPO}/discussions/1")
    # main is untouched; the PR has the file, by every read that takes a revision
    assert api.list_repo_files(REPO) == [".gitattributes", "a.txt"]
    assert sorted(api.list_repo_files(REPO, revision="refs/pr/1")) == [".gitattributes", "a.txt", "w.bin"]
    (entry,) = api.get_paths_info(REPO, ["w.bin"], revision="refs/pr/1")
    assert entry.size == len(weights)
    got = hf_hub_download(REPO, "w.bin", revision="refs/pr/1", endpoint=server.url, token=server.token,
                          cache_dir=tmp_path / "cache")
    assert open(got, "rb").read() == weights
    fs = HfFileSystem(endpoint=server.url, token=server.token)
    assert fs.cat(f"{REPO}@refs%2Fpr%2F1/w.bin") == weights
    assert fs.cat(f"{REPO}@refs/pr/1/a.txt") == b"v1"
    refs = api.list_repo_refs(REPO, include_pull_requests=True)
    assert [r.ref for r in refs.pull_requests] == ["refs/pr/1"]
    assert not api.list_repo_refs(REPO).pull_requests
    (pr,) = api.get_repo_discussions(REPO)
    assert (pr.num, pr.title, pr.is_pull_request, pr.status) == (1, "Add weights", True, "open")
    details = api.get_discussion_details(REPO, 1)
    assert details.target_branch == "refs/heads/main" and details.conflicting_files == []
    assert [e.type for e in details.events] == ["comment", "commit"]
    assert details.events[0].content == "please merge" and details.events[1].summary == "Add weights"


def test_a_pr_takes_commits_comments_and_merges_into_main(server, api: HfApi) -> None:
    api.create_repo(REPO)
    api.upload_file(path_or_fileobj=b"old", path_in_repo="keep.txt", repo_id=REPO)
    api.upload_file(path_or_fileobj=b"bye", path_in_repo="gone.txt", repo_id=REPO)
    api.upload_file(path_or_fileobj=b"new", path_in_repo="keep.txt", repo_id=REPO, create_pr=True)
    api.delete_file("gone.txt", REPO, revision="refs/pr/1")
    comment = api.comment_discussion(REPO, 1, "looks good")
    assert comment.content == "looks good"
    assert api.list_repo_files(REPO) == [".gitattributes", "gone.txt", "keep.txt"]
    api.merge_pull_request(REPO, 1, comment="merging")
    assert api.list_repo_files(REPO) == [".gitattributes", "keep.txt"]
    got = httpx.get(f"{server.url}/{REPO}/resolve/main/keep.txt", headers={"Authorization": f"Bearer {server.token}"})
    assert got.content == b"new"
    details = api.get_discussion_details(REPO, 1)
    assert details.status == "merged"
    assert details.merge_commit_oid == api.model_info(REPO).sha
    with pytest.raises(HfHubHTTPError):  # a merged PR does not merge again
        api.merge_pull_request(REPO, 1)


def test_a_pr_that_conflicts_with_main_is_refused_and_can_be_closed(server, api: HfApi) -> None:
    api.create_repo(REPO)
    api.upload_file(path_or_fileobj=b"pr", path_in_repo="x.txt", repo_id=REPO, create_pr=True)
    api.upload_file(path_or_fileobj=b"main", path_in_repo="x.txt", repo_id=REPO)
    assert api.get_discussion_details(REPO, 1).conflicting_files == ["x.txt"]
    with pytest.raises(HfHubHTTPError) as err:
        api.merge_pull_request(REPO, 1)
    assert err.value.response.status_code == 409
    event = api.change_discussion_status(REPO, 1, "closed", comment="superseded")
    assert event.new_status == "closed"
    assert [d.status for d in api.get_repo_discussions(REPO, discussion_status="closed")] == ["closed"]
    second = api.create_pull_request(REPO, "An empty one")
    assert second.num == 2 and second.is_pull_request
    assert api.list_repo_refs(REPO, include_pull_requests=True).pull_requests[1].ref == "refs/pr/2"


def test_a_pr_commit_that_fails_opens_no_pr(server, api: HfApi) -> None:
    api.create_repo(REPO)
    bad = b"\n".join([b'{"key": "header", "value": {"summary": "s"}}',
                       b'{"key": "lfsFile", "value": {"path": "w.bin", "algo": "sha256", "oid": "' + b"9" * 64
                       + b'", "size": 5}}'])
    r = httpx.post(f"{server.url}/api/models/{REPO}/commit/main?create_pr=1", content=bad,
                   headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/x-ndjson"})
    assert r.status_code == 422
    assert list(api.get_repo_discussions(REPO)) == []
    assert api.list_repo_refs(REPO, include_pull_requests=True).pull_requests == []
