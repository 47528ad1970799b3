"""A commit never changes: the local Hub parses its tree once and answers resolve, HEAD, tree and
paths-info from the index it keeps, whatever the repo's size (benchmarks/bench_hub.py measures
the time; this pins the mechanism)."""

from __future__ import annotations

import httpx
from huggingface_hub import CommitOperationAdd, HfApi
from jobs_helpers import NAMESPACE

from console.server.hub import repos

REPO = f"{NAMESPACE}/many-files"


def test_reads_of_a_big_commit_parse_its_tree_once(server, api: HfApi, monkeypatch) -> None:
    api.create_repo(REPO)
    ops = [CommitOperationAdd(path_in_repo=f"d/{i // 100:02d}/f{i}.txt", path_or_fileobj=b"%d" % i)
           for i in range(2000)]
    api.create_commit(REPO, operations=ops, commit_message="2,000 files")
    parsed = []
    real = repos.tree_load
    monkeypatch.setattr(repos, "tree_load", lambda text: parsed.append(len(text)) or real(text))
    auth = {"authorization": f"Bearer {server.token}"}
    with httpx.Client(base_url=server.url, headers=auth, timeout=30) as client:
        for i in range(20):
            assert client.head(f"/{REPO}/resolve/main/d/00/f{i}.txt").status_code == 200
            assert client.get(f"/{REPO}/resolve/main/d/00/f{i}.txt").content == b"%d" % i
            assert len(client.get(f"/api/models/{REPO}/tree/main/d/00").json()) == 100
            assert client.post(f"/api/models/{REPO}/paths-info/main", data={"paths": "d/19"}).json()[0]["type"] \
                == "directory"
    assert len(parsed) <= 1  # at most the first read of the commit (its writer may have kept it already)
