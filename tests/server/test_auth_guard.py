"""The guard every route of the embedded Jobs server goes through, seen by an API user: without the
exact `Authorization: Bearer <token>` header every route answers 401, but for the reads of public
model and dataset repos, which a request with no Authorization header at all may make (a private
or missing repo is then a 401 RepoNotFound alike; an empty or wrong header is refused); a
namespace other than the server's is a 403; a job id is checked as sent (`%2F` included);
whatever a route raises becomes an answer (its own 4xx with the Hub's X-Error-Code, 507 for a full
disk, a logged JSON 500 naming the exception class) and never a dropped connection.

The app is called in-process (Starlette's TestClient: no uvicorn, no port) over a real, unstarted
`JobsService` in a tmp folder; the raising cases wrap handlers of their own with `guard`."""

from __future__ import annotations

import errno
import logging
import sqlite3
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from console.server.app import create_app, guard
from console.server.core import JobsService, ServiceSettings
from console.server.jobs.wire import ApiError

NAMESPACE = "tester"
TOKEN = "hf_local_0123456789abcdef"
GOOD = {"Authorization": f"Bearer {TOKEN}"}
INVALID = "Invalid credentials in Authorization header"
DISK_FULL = "disk full: the Jobs server cannot write its state; free space in its data folder"
JOB_SPEC = {"dockerImage": "python:3.12", "command": ["python", "-c", "print(1)"]}
SCHEDULED_SPEC = {"schedule": "@daily", "jobSpec": JOB_SPEC}


def internal(name: str) -> str:
    return f"internal error in the local Jobs server ({name}); see `console server logs`"


@pytest.fixture
def service(tmp_path) -> Iterator[JobsService]:
    svc = JobsService(ServiceSettings(namespace=NAMESPACE), db_path=tmp_path / "jobs.db")
    try:
        yield svc
    finally:
        svc.store.close()
        svc.hub.close()


@pytest.fixture
def client(service: JobsService) -> TestClient:
    return TestClient(create_app(service, TOKEN))


def refused(response) -> None:
    """The 401 of a request without the right token, as the API user sees it."""
    assert response.status_code == 401
    assert response.json() == {"error": INVALID}
    assert response.headers["x-error-message"] == INVALID


# -- the bearer token ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param(None, id="no-header"),
        pytest.param("", id="empty-header"),
        pytest.param(TOKEN, id="bare-token"),
        pytest.param(f"bearer {TOKEN}", id="lowercase-bearer"),
        pytest.param(f"BEARER {TOKEN}", id="uppercase-bearer"),
        pytest.param(f"Bearer {TOKEN} ", id="trailing-space"),
        pytest.param(f" Bearer {TOKEN}", id="leading-space"),
        pytest.param(f"Bearer  {TOKEN}", id="two-spaces"),
        pytest.param(f"Bearer {TOKEN[:-1]}g", id="last-character-changed"),
        pytest.param(f"Bearer X{TOKEN[1:]}", id="first-character-changed"),
        pytest.param(f"Bearer {TOKEN[:-1]}", id="token-cut-short"),
        pytest.param(f"Bearer {TOKEN}0", id="token-with-one-more-character"),
        pytest.param("Bearer " + "a" * len(TOKEN), id="other-token-same-length"),
        pytest.param("Bearer ", id="bearer-without-token"),
        pytest.param("Bearer", id="bearer-alone"),
        pytest.param(f"Basic {TOKEN}", id="basic-scheme"),
    ],
)
def test_anything_but_the_exact_bearer_header_is_refused_with_401(client, authorization):
    headers = {} if authorization is None else {"Authorization": authorization}
    refused(client.get("/api/whoami-v2", headers=headers))


def test_the_exact_bearer_header_is_let_through(client):
    response = client.get("/api/whoami-v2", headers=GOOD)
    assert response.status_code == 200
    assert response.json()["name"] == NAMESPACE
    assert "x-error-message" not in response.headers


def test_a_server_with_another_token_refuses_this_one(service):
    other = TestClient(create_app(service, "hf_local_other"))
    refused(other.get("/api/whoami-v2", headers=GOOD))
    assert other.get("/api/whoami-v2", headers={"Authorization": "Bearer hf_local_other"}).status_code == 200


# Every route family behind the guard: (method, path, what the right token gets instead of 401).
JOB = f"/api/jobs/{NAMESPACE}/0123456789abcdef01234567"  # no such job
SCHEDULED = f"/api/scheduled-jobs/{NAMESPACE}/0123456789abcdef01234567"
ROUTES = [
    ("GET", "/api/whoami-v2", 200),
    ("GET", "/api/jobs/hardware", 200),
    ("GET", f"/api/jobs/{NAMESPACE}", 200),
    ("POST", f"/api/jobs/{NAMESPACE}", 400),  # no body
    ("GET", JOB, 404),
    ("GET", f"{JOB}/logs", 404),
    ("GET", f"{JOB}/metrics", 404),
    ("POST", f"{JOB}/cancel", 404),
    ("POST", f"{JOB}/duplicate", 404),
    ("PUT", f"{JOB}/labels", 404),
    ("PUT", f"{JOB}/expose", 404),
    ("GET", f"/api/scheduled-jobs/{NAMESPACE}", 200),
    ("POST", f"/api/scheduled-jobs/{NAMESPACE}", 400),
    ("GET", SCHEDULED, 404),
    ("DELETE", SCHEDULED, 404),
    ("POST", f"{SCHEDULED}/suspend", 404),
    ("POST", "/api/settings/webhooks", 501),
    ("GET", "/api/settings/webhooks/abc", 501),
    ("GET", f"/api/buckets/{NAMESPACE}", 200),
    ("GET", "/api/spaces/someone/space", 404),
    ("GET", "/some/unknown/path", 404),
]


@pytest.mark.parametrize(("method", "path", "status"), ROUTES, ids=[f"{m} {p}" for m, p, _ in ROUTES])
def test_every_route_family_answers_401_without_the_token(client, method, path, status):
    refused(client.request(method, path))
    refused(client.request(method, path, headers={"Authorization": "Bearer wrong"}))
    # the same request with the token reaches the route (its own answer, not the guard's 401)
    assert client.request(method, path, headers=GOOD).status_code == status


def test_the_openapi_description_needs_no_token(client):
    assert client.get("/openapi.json").status_code == 200


def test_every_described_operation_is_a_route_of_the_app(client):
    """The description's operations table and the app's routes agree: each operation reaches a
    route of its own (never the catch-all that answers "not supported")."""
    doc = client.get("/openapi.json").json()
    ids = {"{namespace}": NAMESPACE, "{job_id}": "0" * 24, "{sj_id}": "0" * 24}
    seen = 0
    for path, item in doc["paths"].items():
        for method in item:
            concrete = path
            for name, value in ids.items():
                concrete = concrete.replace(name, value)
            body = {} if method in ("post", "put") else None
            resp = client.request(method.upper(), concrete, headers=GOOD, json=body)
            assert resp.status_code != 405, (method, path)
            assert "is not supported" not in resp.text, (method, path, resp.text)
            seen += 1
    assert seen >= 20


def test_a_refused_request_runs_and_schedules_nothing(client):
    refused(client.post(f"/api/jobs/{NAMESPACE}", json=JOB_SPEC, headers={"Authorization": TOKEN}))
    refused(client.post(f"/api/scheduled-jobs/{NAMESPACE}", json=SCHEDULED_SPEC))
    assert client.get(f"/api/jobs/{NAMESPACE}", headers=GOOD).json() == []
    assert client.get(f"/api/scheduled-jobs/{NAMESPACE}", headers=GOOD).json() == []


# -- without any token: public repos read, nothing else ------------------------------------------

OPEN = f"{NAMESPACE}/open-model"
CLOSED = f"{NAMESPACE}/closed-data"
NOT_FOUND = {"error": "Repository not found"}


@pytest.fixture
def repos(client: TestClient) -> TestClient:
    """The client, with a public model repo and a private dataset repo made with the token."""
    for body in ({"name": "open-model"}, {"name": "closed-data", "type": "dataset", "private": True}):
        assert client.post("/api/repos/create", json=body, headers=GOOD).status_code == 200
    return client


def header_refused(response) -> None:
    """The guard's 401 where there is no body to read (HEAD)."""
    assert response.status_code == 401
    assert response.headers["x-error-message"] == INVALID


def test_a_public_repo_reads_without_any_authorization_header(repos):
    info = repos.get(f"/api/models/{OPEN}")
    assert info.status_code == 200
    assert info.json()["id"] == OPEN and info.json()["private"] is False
    assert info.json()["sha"] == repos.get(f"/api/models/{OPEN}", headers=GOOD).json()["sha"]
    assert [f["path"] for f in repos.get(f"/api/models/{OPEN}/tree/main").json()] == [".gitattributes"]
    assert [b["name"] for b in repos.get(f"/api/models/{OPEN}/refs").json()["branches"]] == ["main"]
    assert [c["title"] for c in repos.get(f"/api/models/{OPEN}/commits/main").json()] == ["initial commit"]
    assert repos.get(f"/api/models/{OPEN}/auth-check").status_code == 200
    # paths-info is a POST, and a read
    paths = repos.post(f"/api/models/{OPEN}/paths-info/main", data={"paths": ".gitattributes"})
    assert [p["path"] for p in paths.json()] == [".gitattributes"]
    download = repos.get(f"/{OPEN}/resolve/main/.gitattributes")
    assert download.status_code == 200 and download.content
    head = repos.head(f"/{OPEN}/resolve/main/.gitattributes")
    assert head.status_code == 200 and "x-error-message" not in head.headers


def test_the_listing_without_a_token_shows_the_public_repos_only(repos):
    assert [m["id"] for m in repos.get("/api/models", params={"author": NAMESPACE}).json()] == [OPEN]
    assert repos.get("/api/datasets", params={"author": NAMESPACE}).json() == []
    assert [d["id"] for d in repos.get("/api/datasets", params={"author": NAMESPACE}, headers=GOOD).json()] \
        == [CLOSED]


@pytest.mark.parametrize("repo_id", [CLOSED, f"{NAMESPACE}/absent"], ids=["private", "missing"])
def test_a_private_or_missing_repo_without_a_token_is_a_401_repo_not_found_alike(repos, repo_id):
    for method, path in (("GET", f"/api/datasets/{repo_id}"), ("GET", f"/api/datasets/{repo_id}/tree/main"),
                         ("GET", f"/api/datasets/{repo_id}/refs"), ("GET", f"/api/datasets/{repo_id}/auth-check"),
                         ("GET", f"/datasets/{repo_id}/resolve/main/.gitattributes")):
        response = repos.request(method, path)
        assert (response.status_code, response.json()) == (401, NOT_FOUND), path
        assert response.headers["x-error-code"] == "RepoNotFound"
    head = repos.head(f"/datasets/{repo_id}/resolve/main/.gitattributes")
    assert (head.status_code, head.headers["x-error-code"]) == (401, "RepoNotFound")
    # with the token the private one reads and the missing one is a 404
    expected = 200 if repo_id == CLOSED else 404
    assert repos.get(f"/api/datasets/{repo_id}", headers=GOOD).status_code == expected


@pytest.mark.parametrize(("method", "path"), [
    ("POST", f"/api/models/{OPEN}/commit/main"),
    ("POST", f"/api/models/{OPEN}/preupload/main"),
    ("POST", f"/api/models/{OPEN}/branch/dev"),
    ("DELETE", f"/api/models/{OPEN}/branch/main"),
    ("PUT", f"/api/models/{OPEN}/settings"),
    ("GET", f"/api/models/{OPEN}/xet-read-token/main"),
    ("GET", f"/api/models/{OPEN}/auth-check/write"),
    ("POST", "/api/repos/create"),
    ("DELETE", "/api/repos/delete"),
    ("POST", "/api/repos/move"),
])
def test_without_a_token_a_write_or_a_token_route_of_a_public_repo_is_refused(repos, method, path):
    body = {"name": "open-model", "fromRepo": OPEN, "toRepo": f"{NAMESPACE}/moved", "visibility": "private"}
    refused(repos.request(method, path, json=body))
    # nothing changed: the repo is still there, public, with its one branch and one commit
    info = repos.get(f"/api/models/{OPEN}", headers=GOOD).json()
    assert info["private"] is False
    assert [b["name"] for b in repos.get(f"/api/models/{OPEN}/refs").json()["branches"]] == ["main"]
    assert len(repos.get(f"/api/models/{OPEN}/commits/main").json()) == 1


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH"])
def test_a_method_other_than_a_read_without_a_token_is_refused_on_a_public_repo(repos, method):
    for path in (f"/api/models/{OPEN}", f"/api/models/{OPEN}/tree/main"):
        refused(repos.request(method, path))
    assert repos.get(f"/api/models/{OPEN}").status_code == 200


@pytest.mark.parametrize("path", ["/api/whoami-v2", "/api/jobs/hardware", f"/api/jobs/{NAMESPACE}", JOB,
                                  f"{JOB}/logs", f"/api/scheduled-jobs/{NAMESPACE}", f"/api/buckets/{NAMESPACE}",
                                  f"/api/buckets/{NAMESPACE}/some-bucket"])
def test_without_a_token_jobs_buckets_and_whoami_are_refused_on_get_and_head(repos, path):
    refused(repos.get(path))
    header_refused(repos.head(path))


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param("", id="empty-header"),
        pytest.param("Bearer ", id="bearer-without-token"),
        pytest.param("Bearer wrong", id="wrong-token"),
        pytest.param(f"Bearer {TOKEN}x", id="token-with-one-more-character"),
        pytest.param(TOKEN, id="bare-token"),
    ],
)
def test_an_empty_or_wrong_header_is_refused_on_a_public_repo_too(repos, authorization):
    headers = {"Authorization": authorization}
    refused(repos.get(f"/api/models/{OPEN}", headers=headers))
    refused(repos.get(f"/{OPEN}/resolve/main/.gitattributes", headers=headers))
    refused(repos.post(f"/api/models/{OPEN}/paths-info/main", data={"paths": ".gitattributes"}, headers=headers))
    header_refused(repos.head(f"/{OPEN}/resolve/main/.gitattributes", headers=headers))
    refused(repos.get("/api/models", headers=headers))


# -- the namespace -------------------------------------------------------------------------------


def wrong_namespace(name: str) -> str:
    return (f"namespace {name!r} is not served here: this local Jobs server runs jobs for "
            f"{NAMESPACE!r}")


@pytest.mark.parametrize("path", ["/api/jobs/someone-else", "/api/scheduled-jobs/someone-else",
                                  "/api/jobs/someone-else/0123456789abcdef01234567"])
def test_another_namespace_is_a_403_naming_both(client, path):
    response = client.get(path, headers=GOOD)
    assert response.status_code == 403
    assert response.json() == {"error": wrong_namespace("someone-else")}
    assert response.headers["x-error-message"] == wrong_namespace("someone-else")


def test_another_namespace_without_the_token_is_a_401_not_a_403(client):
    refused(client.get("/api/jobs/someone-else"))


# -- the id in a job path, as sent ----------------------------------------------------------------


@pytest.mark.parametrize(("path", "field", "value"), [
    (f"/api/jobs/{NAMESPACE}/a%2Fb", "job_id", "a/b"),
    (f"/api/jobs/{NAMESPACE}/a%2Fb/logs", "job_id", "a/b"),
    (f"/api/jobs/{NAMESPACE}/%2E%2E%2Fx/cancel", "job_id", "../x"),
    (f"/api/scheduled-jobs/{NAMESPACE}/a%2F..", "sj_id", "a/.."),
])
def test_an_encoded_slash_in_a_job_id_is_a_400_naming_the_field(client, path, field, value):
    """The id is read from the path as sent: `%2F` would otherwise become a separator and the
    request reach another route (or none) with part of the id."""
    response = client.request("POST" if path.endswith("cancel") else "GET", path, headers=GOOD)
    what = "job" if field == "job_id" else "scheduled job"
    message = f"{field} {value!r} is not a {what} id: letters and digits only"
    assert (response.status_code, response.json()) == (400, {"error": message})


def test_a_server_that_sends_no_raw_path_gets_the_id_checked_on_the_decoded_path(service):
    """ASGI makes `raw_path` optional: without it the path Starlette decoded is checked."""
    app = create_app(service, TOKEN)

    async def without_raw_path(scope, receive, send):
        scope.pop("raw_path", None)
        await app(scope, receive, send)

    client = TestClient(without_raw_path)
    response = client.get(f"/api/jobs/{NAMESPACE}/a%20b", headers=GOOD)
    assert (response.status_code, response.json()) == (
        400, {"error": "job_id 'a b' is not a job id: letters and digits only"})
    assert client.get(f"/api/jobs/{NAMESPACE}", headers=GOOD).status_code == 200


def test_nothing_is_run_or_scheduled_in_another_namespace(client):
    assert client.post("/api/jobs/someone-else", json=JOB_SPEC, headers=GOOD).status_code == 403
    assert client.post("/api/scheduled-jobs/someone-else", json=SCHEDULED_SPEC, headers=GOOD).status_code == 403
    assert client.get(f"/api/jobs/{NAMESPACE}", headers=GOOD).json() == []
    assert client.get(f"/api/scheduled-jobs/{NAMESPACE}", headers=GOOD).json() == []


# -- what a route raises ---------------------------------------------------------------------------


def raising(service: JobsService, exc: BaseException) -> TestClient:
    """An app whose one route (with and without a namespace in its path) raises `exc`."""
    calls: list[str] = []

    async def handler(request: Request) -> Response:
        calls.append(request.url.path)
        raise exc

    guarded = guard(service, TOKEN)
    app = Starlette(routes=[Route("/boom", guarded(handler), methods=["GET", "POST"]),
                            Route("/ns/{namespace}/boom", guarded(handler), methods=["GET"])])
    client = TestClient(app)
    client.calls = calls  # type: ignore[attr-defined]
    return client


def test_a_route_that_raises_an_api_error_answers_its_status_and_message(service):
    client = raising(service, ApiError(409, "job abc is already finished"))
    response = client.get("/boom", headers=GOOD)
    assert response.status_code == 409
    assert response.json() == {"error": "job abc is already finished"}
    assert response.headers["x-error-message"] == "job abc is already finished"


def test_an_api_error_with_the_hubs_error_code_carries_it_in_x_error_code(service):
    response = raising(service, ApiError(404, "bucket 'x' not found", "RepoNotFound")).get("/boom", headers=GOOD)
    assert (response.status_code, response.json()) == (404, {"error": "bucket 'x' not found"})
    assert response.headers["x-error-code"] == "RepoNotFound"
    # without a code there is no X-Error-Code header
    assert "x-error-code" not in raising(service, ApiError(409, "taken")).get("/boom", headers=GOOD).headers


def test_a_missing_bucket_is_a_404_with_the_hubs_repo_not_found_code(client):
    response = client.get(f"/api/buckets/{NAMESPACE}/absent", headers=GOOD)
    assert response.status_code == 404
    assert response.headers["x-error-code"] == "RepoNotFound"


def test_a_route_that_returns_is_answered_as_it_returned(service):
    async def handler(request: Request) -> Response:
        return JSONResponse({"ok": request.path_params.get("namespace")}, status_code=202)

    client = TestClient(Starlette(routes=[Route("/ns/{namespace}/ok", guard(service, TOKEN)(handler))]))
    response = client.get(f"/ns/{NAMESPACE}/ok", headers=GOOD)
    assert (response.status_code, response.json()) == (202, {"ok": NAMESPACE})


def test_the_guard_checks_the_token_and_namespace_before_the_route_runs(service):
    client = raising(service, ValueError("must not run"))
    refused(client.get("/boom"))
    refused(client.get(f"/ns/{NAMESPACE}/boom"))
    response = client.get("/ns/someone-else/boom", headers=GOOD)
    assert response.status_code == 403
    assert response.json() == {"error": wrong_namespace("someone-else")}
    assert client.calls == []
    # the right namespace reaches the route
    assert client.get(f"/ns/{NAMESPACE}/boom", headers=GOOD).status_code == 500
    assert client.calls == [f"/ns/{NAMESPACE}/boom"]


@pytest.mark.parametrize(
    "exc",
    [
        pytest.param(OSError(errno.ENOSPC, "No space left on device"), id="ENOSPC"),
        pytest.param(OSError(errno.EDQUOT, "Disk quota exceeded"), id="EDQUOT"),
        pytest.param(sqlite3.OperationalError("database or disk is full"), id="sqlite-full"),
    ],
)
def test_a_full_disk_is_a_507_saying_so(service, exc, caplog):
    response = raising(service, exc).post("/boom", headers=GOOD)
    assert response.status_code == 507
    assert response.json() == {"error": DISK_FULL}
    assert response.headers["x-error-message"] == DISK_FULL


@pytest.mark.parametrize(
    ("exc", "name"),
    [
        pytest.param(OSError(errno.EIO, "Input/output error"), "OSError", id="other-OSError"),
        pytest.param(PermissionError(errno.EACCES, "Permission denied"), "PermissionError", id="EACCES"),
        pytest.param(sqlite3.OperationalError("database is locked"), "OperationalError", id="sqlite-locked"),
        pytest.param(sqlite3.IntegrityError("UNIQUE constraint failed"), "IntegrityError", id="sqlite-integrity"),
        pytest.param(KeyError("job_id"), "KeyError", id="KeyError"),
        pytest.param(RuntimeError("bug"), "RuntimeError", id="RuntimeError"),
    ],
)
def test_any_other_error_is_a_json_500_naming_the_exception_class_and_logged(service, caplog, exc, name):
    caplog.set_level(logging.ERROR, logger="console.server.app")
    response = raising(service, exc).post("/boom", headers=GOOD)
    assert response.status_code == 500
    assert response.json() == {"error": internal(name)}
    assert response.headers["x-error-message"] == internal(name)
    [record] = [r for r in caplog.records if r.name == "console.server.app"]
    assert record.levelno == logging.ERROR
    assert record.getMessage() == "POST /boom failed"
    assert record.exc_info is not None and record.exc_info[1] is exc


def test_a_500_does_not_leak_the_exception_text(service):
    response = raising(service, RuntimeError("secret path /home/me/.token")).get("/boom", headers=GOOD)
    assert "secret" not in response.text
    assert "secret" not in response.headers["x-error-message"]


def test_an_api_error_or_full_disk_is_not_logged_as_a_server_bug(service, caplog):
    caplog.set_level(logging.DEBUG, logger="console.server.app")
    raising(service, ApiError(404, "job x not found")).get("/boom", headers=GOOD)
    raising(service, OSError(errno.ENOSPC, "No space left on device")).get("/boom", headers=GOOD)
    assert [r for r in caplog.records if r.name == "console.server.app"] == []


# -- the error answer's body and header ---------------------------------------------------------------


def answer(service: JobsService, message: str):
    return raising(service, ApiError(400, message)).get("/boom", headers=GOOD)


def test_a_message_of_2000_characters_is_answered_whole(service):
    message = "x" * 2000
    response = answer(service, message)
    assert response.json() == {"error": message}


def test_a_longer_message_is_cut_at_2000_characters_with_an_ellipsis(service):
    message = "".join(chr(ord("a") + i % 26) for i in range(2001))
    response = answer(service, message)
    assert response.json() == {"error": message[:2000] + "..."}


def test_the_header_carries_the_first_500_characters(service):
    message = "".join(chr(ord("a") + i % 26) for i in range(600))
    response = answer(service, message)
    assert response.headers["x-error-message"] == message[:500]
    assert response.json() == {"error": message}


def test_the_header_keeps_printable_ascii_from_space_to_tilde(service):
    message = "".join(chr(c) for c in range(0x20, 0x7F))
    response = answer(service, message)
    assert response.headers["x-error-message"] == message


def test_the_header_replaces_control_and_non_ascii_characters_but_the_body_keeps_them(service):
    message = "key\r\nX: 1\x00\x1f\x7f é ✓ \U0001f600 end"
    response = answer(service, message)
    assert response.status_code == 400
    assert response.headers["x-error-message"] == "key??X: 1??? ? ? ? end"
    assert response.json() == {"error": message}
