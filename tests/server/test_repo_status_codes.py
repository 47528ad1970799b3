"""Every model and dataset repo route's status codes, one request each, in order on one server: the
success, and each refusal it has (a 403 answered as a 400, or a 404 as a 401, fails here by name).

huggingface_hub turns these codes into its own exceptions (RepositoryNotFoundError on a 401/404
with RepoNotFound, a 412 into "the branch was updated", 409 into "already exists"), so the code
itself is the contract, not only the message."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import httpx
from jobs_helpers import NAMESPACE

R = f"{NAMESPACE}/codes"
D = f"{NAMESPACE}/codes-data"


def _ndjson(*lines: dict[str, Any]) -> str:
    return "\n".join(json.dumps(line) for line in lines)


def _file(path: str, data: bytes = b"x") -> dict[str, Any]:
    return {"key": "file", "value": {"path": path, "content": base64.b64encode(data).decode(), "encoding": "base64"}}


HEADER = {"key": "header", "value": {"summary": "a commit"}}
BLOB = b"large file stand-in"
SHA = hashlib.sha256(BLOB).hexdigest()

# (name, method, path, body, token?, expected status, expected X-Error-Code or None)
STEPS: list[tuple[str, str, str, Any, bool, int, str | None]] = [
    ("create", "POST", "/api/repos/create", {"name": "codes"}, True, 200, None),
    ("create a dataset", "POST", "/api/repos/create", {"name": "codes-data", "type": "dataset"}, True, 200, None),
    ("create again", "POST", "/api/repos/create", {"name": "codes"}, True, 409, None),
    ("create in another org", "POST", "/api/repos/create", {"name": "x", "organization": "someone-else"}, True,
     403, None),
    ("create with a bad type", "POST", "/api/repos/create", {"name": "x", "type": "space"}, True, 400, None),
    ("create without a name", "POST", "/api/repos/create", {"type": "model"}, True, 400, None),
    ("create without the token", "POST", "/api/repos/create", {"name": "y"}, False, 401, None),
    ("info", "GET", f"/api/models/{R}", None, True, 200, None),
    ("info of a dataset", "GET", f"/api/datasets/{D}", None, True, 200, None),
    ("info of a missing repo", "GET", f"/api/models/{NAMESPACE}/nothing", None, True, 404, "RepoNotFound"),
    ("info at a revision", "GET", f"/api/models/{R}/revision/main", None, True, 200, None),
    ("info at a missing revision", "GET", f"/api/models/{R}/revision/nope", None, True, 404, "RevisionNotFound"),
    ("listing", "GET", "/api/models?author=" + NAMESPACE, None, True, 200, None),
    ("listing with a bad limit", "GET", "/api/models?limit=0", None, True, 400, None),
    ("dataset listing", "GET", "/api/datasets", None, True, 200, None),
    ("auth-check", "GET", f"/api/models/{R}/auth-check", None, True, 200, None),
    ("auth-check/write", "GET", f"/api/models/{R}/auth-check/write", None, True, 200, None),
    ("auth-check/write without the token", "GET", f"/api/models/{R}/auth-check/write", None, False, 401, None),
    ("preupload", "POST", f"/api/models/{R}/preupload/main", {"files": [{"path": "a.txt", "size": 1}]}, True,
     200, None),
    ("preupload of a bad list", "POST", f"/api/models/{R}/preupload/main", {"files": "a.txt"}, True, 400, None),
    ("preupload of a pull request", "POST", f"/api/models/{R}/preupload/main?create_pr=1",
     {"files": [{"path": "a.txt", "size": 1}]}, True, 200, None),
    ("xet write token", "GET", f"/api/models/{R}/xet-write-token/main", None, True, 200, None),
    ("xet read token", "GET", f"/api/models/{R}/xet-read-token/main", None, True, 200, None),
    ("xet read token at a missing revision", "GET", f"/api/models/{R}/xet-read-token/nope", None, True, 404,
     "RevisionNotFound"),
    ("commit", "POST", f"/api/models/{R}/commit/main", _ndjson(HEADER, _file("dir/a.txt")), True, 200, None),
    ("commit without a header", "POST", f"/api/models/{R}/commit/main", _ndjson(_file("b.txt")), True, 400, None),
    ("commit with a stale parent", "POST", f"/api/models/{R}/commit/main",
     _ndjson({"key": "header", "value": {"summary": "s", "parentCommit": "0" * 40}}, _file("c.txt")), True,
     412, None),
    ("commit to a missing branch", "POST", f"/api/models/{R}/commit/nope", _ndjson(HEADER, _file("c.txt")), True,
     404, "RevisionNotFound"),
    ("commit of a file where a folder is", "POST", f"/api/models/{R}/commit/main", _ndjson(HEADER, _file("dir")),
     True, 409, None),
    ("commit of a path leading up", "POST", f"/api/models/{R}/commit/main", _ndjson(HEADER, _file("../up.txt")),
     True, 422, None),
    ("commit of an unstorable path", "POST", f"/api/models/{R}/commit/main",
     _ndjson(HEADER, _file("x" * 256)), True, 400, None),
    ("commit deleting a missing file", "POST", f"/api/models/{R}/commit/main",
     _ndjson(HEADER, {"key": "deletedFile", "value": {"path": "gone.txt"}}), True, 404, "EntryNotFound"),
    ("commit of an unknown LFS file", "POST", f"/api/models/{R}/commit/main",
     _ndjson(HEADER, {"key": "lfsFile", "value": {"path": "w.bin", "algo": "sha256", "oid": "9" * 64,
                                                  "size": 5}}), True, 422, None),
    ("commit as a pull request", "POST", f"/api/models/{R}/commit/main?create_pr=1",
     _ndjson(HEADER, _file("pr.txt")), True, 200, None),
    ("commit to a missing pull request", "POST", f"/api/models/{R}/commit/refs%2Fpr%2F99",
     _ndjson(HEADER, _file("pr.txt")), True, 404, "RevisionNotFound"),
    ("a missing discussion", "GET", f"/api/models/{R}/discussions/99", None, True, 404, None),
    ("a discussion with no title", "POST", f"/api/models/{R}/discussions", {"title": ""}, True, 400, None),
    ("commit without the token", "POST", f"/api/models/{R}/commit/main", _ndjson(HEADER, _file("t.txt")), False,
     401, None),
    ("tree", "GET", f"/api/models/{R}/tree/main", None, True, 200, None),
    ("tree of a folder", "GET", f"/api/models/{R}/tree/main/dir", None, True, 200, None),
    ("tree of a missing folder", "GET", f"/api/models/{R}/tree/main/nothing", None, True, 404, "EntryNotFound"),
    ("tree at a missing revision", "GET", f"/api/models/{R}/tree/nope", None, True, 404, "RevisionNotFound"),
    ("paths-info", "POST", f"/api/models/{R}/paths-info/main", {"paths": ["dir/a.txt"]}, True, 200, None),
    ("paths-info of a bad list", "POST", f"/api/models/{R}/paths-info/main", {"paths": "dir"}, True, 400, None),
    ("refs", "GET", f"/api/models/{R}/refs", None, True, 200, None),
    ("commits", "GET", f"/api/models/{R}/commits/main", None, True, 200, None),
    ("commits of a missing revision", "GET", f"/api/models/{R}/commits/nope", None, True, 404, "RevisionNotFound"),
    ("create a branch", "POST", f"/api/models/{R}/branch/dev", None, True, 200, None),
    ("create it again", "POST", f"/api/models/{R}/branch/dev", None, True, 409, None),
    ("create a badly named branch", "POST", f"/api/models/{R}/branch/a..b", None, True, 400, None),
    ("create a branch from a missing revision", "POST", f"/api/models/{R}/branch/x", {"startingPoint": "nope"},
     True, 404, "RevisionNotFound"),
    ("delete the default branch", "DELETE", f"/api/models/{R}/branch/main", None, True, 403, None),
    ("delete a missing branch", "DELETE", f"/api/models/{R}/branch/nope", None, True, 404, "RevisionNotFound"),
    ("delete a branch", "DELETE", f"/api/models/{R}/branch/dev", None, True, 200, None),
    ("tag", "POST", f"/api/models/{R}/tag/main", {"tag": "v1"}, True, 200, None),
    ("tag again", "POST", f"/api/models/{R}/tag/main", {"tag": "v1"}, True, 409, None),
    ("tag a missing revision", "POST", f"/api/models/{R}/tag/nope", {"tag": "v2"}, True, 404, "RevisionNotFound"),
    ("delete a missing tag", "DELETE", f"/api/models/{R}/tag/v9", None, True, 404, "RevisionNotFound"),
    ("delete a tag", "DELETE", f"/api/models/{R}/tag/v1", None, True, 200, None),
    ("settings", "PUT", f"/api/models/{R}/settings", {"private": True}, True, 200, None),
    ("settings: gated", "PUT", f"/api/models/{R}/settings", {"gated": "auto"}, True, 400, None),
    ("settings: a bad visibility", "PUT", f"/api/models/{R}/settings", {"visibility": "secret"}, True, 400, None),
    ("a private repo without the token", "GET", f"/api/models/{R}", None, False, 401, "RepoNotFound"),
    ("settings: public again", "PUT", f"/api/models/{R}/settings", {"visibility": "public"}, True, 200, None),
    ("a public repo without the token", "GET", f"/api/models/{R}", None, False, 200, None),
    ("resolve", "GET", f"/{R}/resolve/main/dir/a.txt", None, True, 200, None),
    ("resolve HEAD", "HEAD", f"/{R}/resolve/main/dir/a.txt", None, True, 200, None),
    ("resolve of a dataset file", "GET", f"/datasets/{D}/resolve/main/.gitattributes", None, True, 200, None),
    ("resolve of a missing file", "GET", f"/{R}/resolve/main/nothing.txt", None, True, 404, "EntryNotFound"),
    ("resolve at a missing revision", "GET", f"/{R}/resolve/nope/dir/a.txt", None, True, 404, "RevisionNotFound"),
    ("resolve in a missing repo", "GET", f"/{NAMESPACE}/nothing/resolve/main/a.txt", None, True, 404,
     "RepoNotFound"),
    ("resolve of a repo without namespace", "GET", "/codes/resolve/main/a.txt", None, True, 404, "RepoNotFound"),
    ("validate-yaml", "POST", "/api/validate-yaml", {"content": "---\nlicense: mit\n---\n"}, True, 200, None),
    ("validate-yaml of a list", "POST", "/api/validate-yaml", {"content": "---\n- a\n---\n"}, True, 400, None),
    ("LFS batch", "POST", f"/{R}.git/info/lfs/objects/batch",
     {"operation": "upload", "objects": [{"oid": SHA, "size": len(BLOB)}]}, True, 200, None),
    ("LFS batch of a download", "POST", f"/{R}.git/info/lfs/objects/batch",
     {"operation": "download", "objects": []}, True, 400, None),
    ("LFS batch of a bad oid", "POST", f"/{R}.git/info/lfs/objects/batch",
     {"operation": "upload", "objects": [{"oid": "xyz", "size": 1}]}, True, 400, None),
    ("LFS batch of a claim over the maximum", "POST", f"/{R}.git/info/lfs/objects/batch",
     {"operation": "upload", "objects": [{"oid": SHA, "size": 10**18}]}, True, 413, None),
    ("duplicate LFS files", "POST", f"/api/models/{R}/lfs-files/duplicate",
     {"target": {"type": "dataset", "name": D}, "files": []}, True, 200, None),
    ("duplicate into a missing repo", "POST", f"/api/models/{R}/lfs-files/duplicate",
     {"target": {"type": "model", "name": f"{NAMESPACE}/nothing"}, "files": []}, True, 404, "RepoNotFound"),
    ("an unknown repo call", "GET", f"/api/models/{R}/nonsense", None, True, 404, None),
    ("move", "POST", "/api/repos/move", {"fromRepo": R, "toRepo": f"{R}-2"}, True, 200, None),
    ("create another", "POST", "/api/repos/create", {"name": "codes-3"}, True, 200, None),
    ("move onto a taken name", "POST", "/api/repos/move", {"fromRepo": f"{R}-2", "toRepo": f"{R}-3"}, True,
     409, None),
    ("move a missing repo", "POST", "/api/repos/move", {"fromRepo": f"{R}-9", "toRepo": f"{R}-8"}, True,
     404, "RepoNotFound"),
    ("move into another org", "POST", "/api/repos/move", {"fromRepo": f"{R}-2", "toRepo": "someone/x"}, True,
     403, None),
    ("move without a target", "POST", "/api/repos/move", {"fromRepo": f"{R}-2"}, True, 400, None),
    ("delete", "DELETE", "/api/repos/delete", {"name": "codes-2"}, True, 200, None),
    ("delete a missing repo", "DELETE", "/api/repos/delete", {"name": "codes-2"}, True, 404, "RepoNotFound"),
    ("delete without a name", "DELETE", "/api/repos/delete", {}, True, 400, None),
]


def test_every_repo_route_answers_its_status_codes(server) -> None:
    wrong = []
    with httpx.Client(base_url=server.url, timeout=60) as client:
        for name, method, path, body, token, status, code in STEPS:
            headers = {"authorization": f"Bearer {server.token}"} if token else {}
            if isinstance(body, str):
                answer = client.request(method, path, content=body, headers=headers)
            else:
                answer = client.request(method, path, json=body, headers=headers)
            got_code = answer.headers.get("x-error-code")
            if answer.status_code != status or (code is not None and got_code != code):
                wrong.append(f"{name}: {method} {path} answered {answer.status_code} {got_code or ''}, expected "
                             f"{status} {code or ''}: {answer.text[:200]}")
    assert not wrong, "\n".join(wrong)


def test_the_signed_lfs_upload_answers_its_status_codes(server) -> None:
    auth = {"authorization": f"Bearer {server.token}"}
    httpx.post(f"{server.url}/api/repos/create", json={"name": "codes"}, headers=auth).raise_for_status()
    batch = httpx.post(f"{server.url}/{R}.git/info/lfs/objects/batch", headers=auth,
                       json={"operation": "upload", "objects": [{"oid": SHA, "size": len(BLOB)}]}).json()
    href = batch["objects"][0]["actions"]["upload"]["href"]
    assert httpx.put(href.split("?")[0] + "?sig=forged", content=BLOB).status_code == 403
    assert httpx.put(href, content=BLOB + b"more").status_code == 413
    assert httpx.put(href, content=BLOB[::-1]).status_code == 400
    assert httpx.put(href, content=BLOB).status_code == 200
