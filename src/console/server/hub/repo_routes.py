"""The model and dataset repo routes huggingface_hub 2.4 uses, over HTTP (storage: :mod:`console.server.hub.repos`).

- ``POST   /api/repos/create`` ``{"name", "organization", "type", "visibility"}`` (409 when it exists)
- ``DELETE /api/repos/delete`` ``{"name", "organization", "type"}``
- ``POST   /api/repos/move`` ``{"fromRepo", "toRepo", "type"}``  rename a repo, or a bucket (``type: bucket``)
- ``GET    /api/{models|datasets}`` ``author``, ``search``, ``limit``  the repos, newest first
- ``GET    /api/{models|datasets}/{repo}[/revision/{rev}]``       info (``siblings``, ``sha``, ...)
- ``PUT    /api/{type}s/{repo}/settings`` ``{"visibility"}`` (or ``{"private"}``)
- ``GET    /api/{type}s/{repo}/auth-check[/write]``
- ``POST   /api/{type}s/{repo}/preupload/{rev}``                 each file's upload mode (regular / lfs, by
  size, content and the branch's ``.gitattributes``) and ``shouldIgnore`` (the commit's ``gitIgnore`` or
  the branch's ``.gitignore``)
- ``GET    /api/{type}s/{repo}/xet-write-token/{rev}`` | ``xet-read-token``  a token for the Xet CAS
- ``POST   /api/{type}s/{repo}/commit/{rev}``                    NDJSON header + file / lfsFile /
  deletedFile / deletedFolder (a deletedFile naming a folder deletes it); a stale ``parentCommit`` is a 412
- ``POST   /api/{type}s/{repo}/lfs-files/duplicate``               ``{"target", "files"}``: LFS files this repo
  lends to a commit of another (``copy_files`` between repos)
- ``GET    /api/{type}s/{repo}/tree/{rev}[/{path}]``              ``recursive=true|false``, ``expand=true``
  (each entry's ``lastCommit``); an LFS file stored in Xet carries its ``xetHash``, as on the Hub
- ``POST   /api/{type}s/{repo}/paths-info/{rev}``                ``paths=...`` (form or JSON), ``expand``
- ``GET    /api/{type}s/{repo}/refs`` | ``/commits/{rev}`` (``expand[]=formatted``)
- ``POST|DELETE /api/{type}s/{repo}/branch/{name}``; ``POST /tag/{rev}`` ``{"tag"}``, ``DELETE /tag/{tag}``
- ``HEAD|GET /{repo}/resolve/{rev}/{path}``, ``/datasets/{repo}/resolve/...``  the file, with ``ETag``,
  ``X-Repo-Commit``, and ``X-Linked-Etag`` / ``X-Linked-Size`` for LFS files
- ``POST   /api/validate-yaml``                                   a README's metadata: a warning when it has
  none, a 400 when it is not a YAML mapping or its ``model-index`` is not a list
- ``POST   /{repo}.git/info/lfs/objects/batch`` (and ``/datasets/...``): the legacy LFS upload of a file
  huggingface_hub cannot send through Xet (an open binary buffer): ``basic`` transfer to a signed
  ``PUT /api/lfs-upload/{sha256}/{size}?sig=...``, checked against its digest and size

A missing repo, revision or file is a 404 with the Hub's ``X-Error-Code`` (``RepoNotFound``,
``RevisionNotFound``, ``EntryNotFound``) and an ``X-Request-Id``, so huggingface_hub raises its own
exception classes with its own text. A revision is a branch, a tag, ``refs/heads/x``, ``refs/tags/x``
or a commit id (full, or a prefix of 7 or more that names one commit). Repo ids are case-insensitive.
Revisions and paths are read from the raw (percent-encoded) URL: a branch ``a/b`` arrives as ``a%2Fb``
and is one segment. A commit with ``create_pr=1`` opens a pull request, ``refs/pr/N``, and its discussion
(see :mod:`console.server.hub.discussions`, which serves ``/api/{type}s/{repo}/discussions``).

Without any Authorization header (``token=False``), the reads of a public repo (info, tree,
paths-info, refs, commits, auth-check, resolve, the listings) are served, as on the Hub; a private or
missing repo is then a 401 ``RepoNotFound`` alike, and every other call the app's 401. Such a caller
gets an LFS file's bytes over HTTP, never a Xet CAS token (those are not scoped to a repo here).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import html
import json
import secrets
from typing import Any
from urllib.parse import parse_qs, unquote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from console.server.hub import xetclient
from console.server.hub.buckets import LocalHub, check_path, check_repo_id
from console.server.hub.discussions import Discussions, pr_number, refs_listing
from console.server.hub.discussions import route as discussion_route
from console.server.hub.repofiles import blob_response
from console.server.hub.repoinfo import add_last_commits, repo_info
from console.server.hub.repoinfo import listing as listing_of
from console.server.hub.repomatch import check_card_metadata
from console.server.hub.repos import (
    HubError,
    RepoStore,
    check_ref_name,
    check_type,
    open_repo_store,
)
from console.server.hub.uploads import DISK_FULL, body_chunks, check_claim, check_room
from console.server.jobs.wire import ApiError, check_unicode, iso, read_json_body
from console.server.reserve import is_disk_full

MAX_COMMIT_BYTES = 512 * 1024 * 1024
"""The largest commit body read (regular files travel in it, base64)."""


ANONYMOUS = "console.anonymous"
"""The request-scope key the app's guard sets on a request that came without any Authorization
header to a route that serves public reads (marked `public_reads`)."""
INVALID_CREDENTIALS = "Invalid credentials in Authorization header"
REPO_NOT_FOUND = "Repository not found"
"""The Hub's words for a repo that is missing or not visible to the caller (huggingface_hub shows
its own longer text and adds this only when it says something more)."""
_READS = {("GET", ""), ("GET", "revision"), ("GET", "tree"), ("GET", "refs"), ("GET", "commits"),
          ("POST", "paths-info"), ("GET", "auth-check"), ("GET", "discussions")}
"""The repo API calls a caller without a token may make, on a public repo."""


def _coded(exc: ApiError) -> Response:
    header = "".join(ch if " " <= ch <= "~" else "?" for ch in exc.message[:500])
    headers = {"X-Error-Message": header, "X-Request-Id": secrets.token_hex(12)}
    if exc.code:
        headers["X-Error-Code"] = exc.code
    return JSONResponse({"error": exc.message}, status_code=exc.status, headers=headers)


def _anonymous(request: Request) -> bool:
    return bool(request.scope.get(ANONYMOUS))


def _public(fn: Any) -> Any:
    fn.public_reads = True
    return fn


def repo_routes(
    hub: LocalHub, namespace: str, known_models: frozenset[str] = frozenset()
) -> tuple[list[tuple[str, Any, list[str]]], list[tuple[str, Any, list[str]]]]:
    """(path, handler, methods) for each route: those the app guards with its bearer token, and
    the signed LFS upload URL, which carries its own credential.

    `known_models` are Hub model ids whose info is answered though they hold no files here (base
    models a job names)."""
    def store() -> RepoStore:
        return open_repo_store(hub, namespace)

    async def call(fn: Any, *args: Any) -> Any:
        return await asyncio.to_thread(fn, *args)

    def base(request: Request) -> str:
        return str(request.base_url).rstrip("/")

    def cas_url(request: Request) -> str:
        return f"{base(request)}/xet/{hub.cas.instance}"

    def repo_url(request: Request, repo_type: str, repo_id: str) -> str:
        return f"{base(request)}/{'datasets/' if repo_type == 'dataset' else ''}{repo_id}"

    def reconstructor(request: Request) -> Any:
        url, token = cas_url(request), hub.cas.issue_token("read")
        return lambda xet_hash, size, dest: xetclient.download_file(url, token, xet_hash, size, dest)

    def segments(request: Request, prefix: str) -> list[str]:
        raw = request.scope.get("raw_path") or request.url.path.encode()
        text = raw.decode("latin-1").split("?", 1)[0]
        return [unquote(s) for s in text[len(prefix):].split("/")]

    def coded(fn: Any) -> Any:
        async def handler(request: Request) -> Response:
            try:
                return await fn(request)
            except ApiError as exc:  # with a request id, as the Hub's errors have
                return _coded(exc)

        if getattr(fn, "public_reads", False):
            _public(handler)
        return handler

    def visible(s: RepoStore, request: Request, repo_type: str, repo_id: str, read: bool = False) -> str:
        """The stored id of the repo `repo_id` names (in any case; for a `read`, also the id a
        renamed repo had), if this caller may see it: any repo with the token, a public one without
        (else 401, as the Hub answers an anonymous caller, for a private repo and a missing one
        alike)."""
        found = s.canonical(repo_type, repo_id, follow_renames=read) if _valid_id(repo_id) else None
        if _anonymous(request):
            if found is None or s.private(repo_type, found):
                raise HubError(401, REPO_NOT_FOUND, "RepoNotFound")
            return found
        if found is None:
            raise HubError(404, REPO_NOT_FOUND, "RepoNotFound")
        return found

    # -- create / delete -------------------------------------------------------------------

    def repo_from_body(payload: Any) -> tuple[str, str]:
        if not isinstance(payload, dict):
            raise ApiError(400, "the body must be a JSON object with name, organization and type")
        name, org = payload.get("name"), payload.get("organization")
        if not isinstance(name, str) or not name:
            raise ApiError(400, "name: expected the repo's name")
        if org is not None and not isinstance(org, str):
            raise ApiError(400, "organization: expected a string")
        repo_type = check_type(payload.get("type"))
        return repo_type, check_repo_id(f"{org or namespace}/{name}", f"{repo_type} repo")

    async def create(request: Request) -> Response:
        payload = await read_json_body(request)
        repo_type, repo_id = repo_from_body(payload)
        visibility, private = payload.get("visibility"), payload.get("private", False)
        if visibility not in (None, "public", "private"):
            raise ApiError(400, f"visibility: expected public or private, got {str(visibility)[:40]!r}")
        if not isinstance(private, bool) and private is not None:
            raise ApiError(400, "private: expected true or false")
        url = repo_url(request, repo_type, repo_id)
        if not await call(store().create, repo_type, repo_id, visibility == "private" or bool(private)):
            message = f"You already created this {repo_type} repo"
            return JSONResponse({"error": message, "url": url}, status_code=409, headers={"X-Error-Message": message})
        return JSONResponse({"url": url, "name": repo_id, "id": repo_id})

    async def delete(request: Request) -> Response:
        repo_type, repo_id = repo_from_body(await read_json_body(request))
        s = store()
        await call(s.delete, repo_type, visible(s, request, repo_type, repo_id))
        return JSONResponse({})

    async def move(request: Request) -> Response:
        """``POST /api/repos/move`` ``{"fromRepo", "toRepo", "type"}``: rename a model or dataset repo,
        or a bucket (``type: bucket``), within the namespaces served here."""
        payload = await read_json_body(request)
        if not isinstance(payload, dict):
            raise ApiError(400, "the body must be a JSON object with fromRepo, toRepo and type")
        src, dst, kind = payload.get("fromRepo"), payload.get("toRepo"), payload.get("type", "model")
        for field, value in (("fromRepo", src), ("toRepo", dst)):
            if not isinstance(value, str) or not value:
                raise ApiError(400, f"{field}: expected namespace/name")
        if kind == "bucket":
            await call(hub.buckets.move, check_repo_id(src), check_repo_id(dst), namespace)
            return JSONResponse({})
        repo_type = check_type(kind)
        s = store()
        await call(s.move, repo_type, visible(s, request, repo_type, src), check_repo_id(dst, f"{repo_type} repo"))
        return JSONResponse({})

    async def validate_yaml(request: Request) -> Response:
        payload = await read_json_body(request)
        content = payload.get("content") if isinstance(payload, dict) else None
        if not isinstance(content, str):
            raise ApiError(400, "content: expected the README's text")
        errors, warnings = check_card_metadata(content)
        return JSONResponse({"errors": errors, "warnings": warnings}, status_code=400 if errors else 200)

    def listing(repo_type: str) -> Any:
        async def handler(request: Request) -> Response:
            """``GET /api/{models|datasets}`` (``author``, ``search``, ``limit``): a caller without a
            token sees the public repos only."""
            params = request.query_params
            limit_text = params.get("limit", "1000")
            if not limit_text.isdigit() or not 1 <= int(limit_text) <= 10_000:
                raise ApiError(400, "limit: expected a whole number from 1 to 10000")
            if params.getlist("filter"):  # tags: the repos here carry none
                return JSONResponse([])
            items = await call(listing_of, store(), repo_type, params.get("author"), params.get("search"),
                               _anonymous(request), int(limit_text))
            return JSONResponse(items)

        return _public(handler)

    # -- /api/{type}s/{repo}/... ---------------------------------------------------------

    def api_dispatch(repo_type: str) -> Any:
        prefix = f"/api/{repo_type}s/"

        async def dispatch(request: Request) -> Response:
            parts = segments(request, prefix)
            method = request.method
            anonymous = _anonymous(request)
            if len(parts) < 2 or not parts[1]:
                if anonymous:
                    raise HubError(401, REPO_NOT_FOUND, "RepoNotFound")
                if repo_type == "model" and method == "GET" and "/".join(parts) in known_models:
                    return known_model("/".join(parts))
                raise HubError(404, REPO_NOT_FOUND, "RepoNotFound")
            repo_id = f"{parts[0]}/{parts[1]}"
            action, rest = (parts[2], parts[3:]) if len(parts) > 2 else ("", [])
            if anonymous and (method, action) not in _READS:
                raise ApiError(401, INVALID_CREDENTIALS)
            s = store()
            if not anonymous and repo_type == "model" and action in ("", "revision") and method == "GET" \
                    and repo_id in known_models and s.canonical(repo_type, repo_id) is None:
                return known_model(repo_id)
            repo_id = visible(s, request, repo_type, repo_id, read=(method, action) in _READS)
            rev = rest[0] if rest else "main"
            if action in ("", "revision") and method == "GET":
                if action == "revision" and (len(rest) != 1 or not rest[0]):
                    raise ApiError(400, "revision: expected /revision/{revision}")
                at = await call(s.resolve, repo_type, repo_id, rev)
                files_metadata = request.query_params.get("blobs", "").lower() == "true"
                return JSONResponse(await call(repo_info, s, repo_type, repo_id, at, files_metadata))
            if action == "preupload" and method == "POST":
                payload = await read_json_body(request)
                files = payload.get("files") if isinstance(payload, dict) else None
                gitignore = payload.get("gitIgnore") if isinstance(payload, dict) else None
                return JSONResponse(await call(s.upload_modes, repo_type, repo_id, rev, files, gitignore))
            if action in ("xet-write-token", "xet-read-token") and method == "GET":
                if action == "xet-write-token":
                    await call(check_room, s.hub_root, 0)
                else:
                    await call(s.resolve, repo_type, repo_id, rev)
                token, exp = hub.cas.issue_token("write" if action == "xet-write-token" else "read")
                url = cas_url(request)
                headers = {"X-Xet-Cas-Url": url, "X-Xet-Access-Token": token, "X-Xet-Token-Expiration": str(exp)}
                return JSONResponse({"accessToken": token, "exp": exp, "casUrl": url}, headers=headers)
            if action == "lfs-files" and method == "POST" and rest == ["duplicate"]:
                return await duplicate(request, s, repo_type, repo_id)
            if action == "commit" and method == "POST":
                return await commit(request, s, repo_type, repo_id, rev)
            if action == "tree" and method == "GET":
                at = await call(s.resolve, repo_type, repo_id, rev)
                path = "/".join(rest[1:])
                recursive = request.query_params.get("recursive", "false").lower() in ("true", "1")
                items = await call(s.tree_listing, at, path, recursive, not anonymous)
                if request.query_params.get("expand", "false").lower() in ("true", "1"):
                    items = await call(add_last_commits, s, repo_type, repo_id, at, items)
                return JSONResponse(items)
            if action == "paths-info" and method == "POST":
                at = await call(s.resolve, repo_type, repo_id, rev)
                wanted, expand = await paths_from_body(request)
                items = await call(s.paths_info, at, wanted, not anonymous)
                if expand:
                    items = await call(add_last_commits, s, repo_type, repo_id, at, items)
                return JSONResponse(items)
            if action == "auth-check" and method == "GET" and rest in ([], ["write"]):
                if anonymous and rest:
                    raise ApiError(401, INVALID_CREDENTIALS)
                return JSONResponse({})
            if action == "settings" and method == "PUT" and not rest:
                return await settings(request, s, repo_type, repo_id)
            if action == "refs" and method == "GET":
                prs = request.query_params.get("include_prs", "") in ("1", "true", "True")
                return JSONResponse(await call(refs_listing, s, repo_type, repo_id, prs))
            if action == "discussions":
                return await discussion_route(request, s, repo_type, repo_id, rest, call, reconstructor(request))
            if action == "commits" and method == "GET":
                history = await call(s.history, repo_type, repo_id, rev)
                author = [{"user": repo_id.split("/")[0]}]
                formatted = "formatted" in request.query_params.getlist("expand[]")
                return JSONResponse([
                    {"id": c.oid, "title": c.title, "message": c.message, "date": iso(c.created_at),
                     "authors": author, **({"formatted": {"title": html.escape(c.title),
                                                          "message": html.escape(c.message)}} if formatted else {})}
                    for c in history
                ])
            if action == "branch" and method in ("POST", "DELETE") and len(rest) == 1:
                name = check_ref_name(rest[0], "branch")
                if method == "DELETE":
                    await call(s.delete_ref, repo_type, repo_id, "branch", name)
                    return JSONResponse({})
                payload = await read_json_body(request) if await request.body() else {}
                start = payload.get("startingPoint", "main") if isinstance(payload, dict) else None
                if not isinstance(start, str) or not start:
                    raise ApiError(400, "startingPoint: expected a revision")
                await call(s.create_ref, repo_type, repo_id, "branch", name, start)
                return JSONResponse({})
            if action == "tag" and method in ("POST", "DELETE") and len(rest) == 1:
                if method == "DELETE":
                    await call(s.delete_ref, repo_type, repo_id, "tag", check_ref_name(rest[0], "tag"))
                    return JSONResponse({})
                payload = await read_json_body(request)
                tag = payload.get("tag") if isinstance(payload, dict) else None
                await call(s.create_ref, repo_type, repo_id, "tag", tag, rev)  # the revision is checked first
                return JSONResponse({})
            raise ApiError(404, f"{method} {request.url.path[:200]} is not a {repo_type} repo call the local "
                           "Hub serves")

        return _public(dispatch)

    async def settings(request: Request, s: RepoStore, repo_type: str, repo_id: str) -> Response:
        """``PUT /api/{type}s/{repo}/settings`` ``{"visibility": "public"|"private"}`` (or ``"private"``);
        gated access is for Hub users other than the owner, whom this server does not have."""
        payload = await read_json_body(request)
        if not isinstance(payload, dict):
            raise ApiError(400, "the body must be a JSON object of settings")
        gated = payload.get("gated")
        if gated not in (None, False):
            raise ApiError(400, "gated: gated repos are not supported by the local Hub (it has one user)")
        visibility, private = payload.get("visibility"), payload.get("private")
        if visibility is not None:
            if visibility not in ("public", "private"):
                raise ApiError(400, f"visibility: expected public or private, got {str(visibility)[:40]!r}")
            private = visibility == "private"
        if private is not None:
            if not isinstance(private, bool):
                raise ApiError(400, "private: expected true or false")
            await call(s.set_private, repo_type, repo_id, private)
        return JSONResponse({})

    async def duplicate(request: Request, s: RepoStore, repo_type: str, repo_id: str) -> Response:
        """``POST /api/{type}s/{repo}/lfs-files/duplicate`` ``{"target": {"type", "name"}, "files": [{"sha256",
        "xetHash", "filename"}]}``: make LFS files of this repo available to a commit of `target` (what
        `copy_files` between repos asks first). Blobs are shared by every repo here, so this checks
        that each is this server's; one that is not is listed in ``failed``."""
        payload = await read_json_body(request)
        target = payload.get("target") if isinstance(payload, dict) else None
        files = payload.get("files") if isinstance(payload, dict) else None
        if not isinstance(target, dict) or not isinstance(target.get("name"), str):
            raise ApiError(400, 'target: expected {"type", "name"} of the repo the files go to')
        if not isinstance(files, list):
            raise ApiError(400, 'files: expected a list of {"sha256", "xetHash", "filename"}')
        target_type = check_type(target.get("type"))
        visible(s, request, target_type, target["name"])
        failed = []
        for i, item in enumerate(files):
            sha = item.get("sha256") if isinstance(item, dict) else None
            if not isinstance(sha, str) or len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
                raise ApiError(400, f"files[{i}].sha256: expected a SHA-256 in hex")
            if not await call(s.has_blob, sha):
                failed.append({"sha256": sha, "error": f"not an LFS file of {repo_id}"})
        return JSONResponse({"duplicated": len(files) - len(failed), "failed": failed})


    def known_model(repo_id: str) -> Response:
        digest = hashlib.sha1(repo_id.encode()).hexdigest()
        return JSONResponse({"_id": digest[:24], "id": repo_id, "modelId": repo_id, "sha": digest,
                             "private": False, "gated": False, "disabled": False,
                             "siblings": [{"rfilename": "config.json"}]})

    async def paths_from_body(request: Request) -> tuple[list[str], bool]:
        """The paths asked for, and whether their last commits are (``expand``)."""
        raw = await request.body()
        if request.headers.get("content-type", "").startswith("application/json"):
            payload = await read_json_body(request)
            wanted = payload.get("paths") if isinstance(payload, dict) else None
            expand = payload.get("expand") if isinstance(payload, dict) else None
        else:
            try:
                form = parse_qs(raw.decode(), keep_blank_values=True, strict_parsing=False)
            except UnicodeDecodeError:
                raise ApiError(400, "paths: the body must be UTF-8") from None
            wanted, expand = form.get("paths"), (form.get("expand") or [None])[-1]
        if not isinstance(wanted, list) or not all(isinstance(p, str) for p in wanted):
            raise ApiError(400, "paths: expected a list of paths")
        return wanted, expand is True or str(expand).lower() in ("true", "1")

    async def commit(request: Request, s: RepoStore, repo_type: str, repo_id: str, branch: str) -> Response:
        parts, size = [], 0
        async for chunk in body_chunks(request):
            parts.append(chunk)
            size += len(chunk)
            if size > MAX_COMMIT_BYTES:
                raise ApiError(413, "the commit is over 512 MiB: upload big files as LFS (through Xet)")
        raw = b"".join(parts)
        lines = []
        for n, line in enumerate(raw.splitlines(), start=1):
            if line.strip():
                try:
                    lines.append(check_unicode(json.loads(line), line))
                except ValueError:
                    raise ApiError(400, f"line {n}: the commit body must be NDJSON (one operation per line)") from None
                except RecursionError:
                    raise ApiError(400, f"line {n}: nested too deeply") from None
        header = lines[0].get("value") if lines and isinstance(lines[0], dict) else None
        summary = header.get("summary") if isinstance(header, dict) else None
        num, d = pr_number(branch), Discussions(s)
        if request.query_params.get("create_pr") not in (None, "", "0", "false") and isinstance(summary, str) \
                and summary.strip():
            if num is not None:
                raise ApiError(400, "create_pr: a pull request opens against a branch, not refs/pr/N")
            num = await call(d.open, repo_type, repo_id, summary[:500], header.get("description") or None, True,
                             branch.removeprefix("refs/heads/"), header.pop("parentCommit", None))
            branch, opened = f"refs/pr/{num}", True
        else:
            opened = False
        try:
            oid = await call(s.apply_commit, repo_type, repo_id, branch, lines, reconstructor(request))
        except BaseException as exc:
            if opened:
                await call(d.drop, repo_type, repo_id, num)
            if isinstance(exc, xetclient.XetUnavailable):
                raise ApiError(501, str(exc)) from None
            raise
        if num is not None:
            await call(d.committed, repo_type, repo_id, num, summary, oid)
        url = f"{repo_url(request, repo_type, repo_id)}/commit/{oid}"
        pr_url = f"{repo_url(request, repo_type, repo_id)}/discussions/{num}" if opened else None
        return JSONResponse({"success": True, "commitOid": oid, "commitUrl": url, "pullRequestUrl": pr_url})

    # -- the legacy LFS upload (a file that huggingface_hub cannot send through Xet) ------

    secret = secrets.token_bytes(32)

    def signature(sha256: str, size: int) -> str:
        return hmac.new(secret, f"{sha256}:{size}".encode(), hashlib.sha256).hexdigest()[:40]

    def lfs_batch(repo_type: str) -> Any:
        async def batch(request: Request) -> Response:
            repo_id = check_repo_id(f"{request.path_params['ns']}/{request.path_params['name']}", f"{repo_type} repo")
            s = store()
            visible(s, request, repo_type, repo_id)
            payload = await read_json_body(request)
            if not isinstance(payload, dict) or payload.get("operation") != "upload":
                raise ApiError(400, 'operation: only "upload" is served (downloads go through resolve)')
            objects = payload.get("objects")
            if not isinstance(objects, list):
                raise ApiError(400, "objects: expected a list of {oid, size}")
            out, need = [], 0
            for i, obj in enumerate(objects):
                oid = obj.get("oid") if isinstance(obj, dict) else None
                size = obj.get("size") if isinstance(obj, dict) else None
                if not isinstance(oid, str) or len(oid) != 64 or any(c not in "0123456789abcdef" for c in oid):
                    raise ApiError(400, f"objects[{i}].oid: expected a SHA-256 in hex")
                if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                    raise ApiError(400, f"objects[{i}].size: expected a whole number of bytes")
                check_claim(size, f"objects[{i}].size")
                item: dict[str, Any] = {"oid": oid, "size": size, "authenticated": True}
                if not await call(s.has_blob, oid):
                    need += size
                    href = f"{base(request)}/api/lfs-upload/{oid}/{size}?sig={signature(oid, size)}"
                    item["actions"] = {"upload": {"href": href, "header": {}}}
                out.append(item)
            await call(check_room, s.hub_root, need)
            return JSONResponse({"transfer": "basic", "objects": out},
                                headers={"Content-Type": "application/vnd.git-lfs+json"})

        return batch

    async def lfs_put(request: Request) -> Response:
        """The upload URL a batch answer hands out: signed, as the Hub's presigned URLs are, so it
        needs no token (huggingface_hub sends none there)."""
        oid, size_text = request.path_params["oid"], request.path_params["size"]
        size = int(size_text) if size_text.isdigit() and len(size_text) < 19 else -1
        if size < 0 or not hmac.compare_digest(request.query_params.get("sig", ""), signature(oid, size)):
            return JSONResponse({"error": "sig: invalid or missing upload signature"}, status_code=403)
        s = store()
        tmp = s.blobs / f".upload-{secrets.token_hex(8)}"
        got = 0
        try:
            check_claim(size, "size")
            with tmp.open("wb") as fh:
                async for chunk in body_chunks(request):
                    got += len(chunk)
                    if got > size:
                        return JSONResponse({"error": f"the upload is over its {size} bytes"}, status_code=413)
                    fh.write(chunk)
            await call(s.put_lfs_blob, oid, size, tmp)
        except ApiError as exc:
            return JSONResponse({"error": exc.message}, status_code=exc.status)
        except OSError as exc:
            if is_disk_full(exc):
                return JSONResponse({"error": DISK_FULL}, status_code=507)
            raise
        finally:
            tmp.unlink(missing_ok=True)
        return Response(b"", status_code=200)

    # -- downloads -----------------------------------------------------------------------

    def resolver(repo_type: str) -> Any:
        prefix = "/datasets/" if repo_type == "dataset" else "/"

        async def resolve(request: Request) -> Response:
            parts = segments(request, prefix)
            if len(parts) < 5 or parts[2] != "resolve":
                raise ApiError(404, f"{request.url.path[:200]}: expected /{{repo}}/resolve/{{revision}}/{{path}}")
            repo_id, rev, path = f"{parts[0]}/{parts[1]}", parts[3], "/".join(parts[4:])
            s = store()
            repo_id = visible(s, request, repo_type, repo_id, read=True)
            try:
                check_path(path)
            except ApiError:
                raise HubError(404, f"{path[:200]!r} not found", "EntryNotFound") from None
            at = s.kept(repo_type, repo_id, rev) or await call(s.resolve, repo_type, repo_id, rev)
            entry = at.tree.get(path)
            if entry is None:
                raise HubError(404, f"{path[:200]!r} not found in {repo_id!r} at {rev[:100]!r}", "EntryNotFound")
            headers = {"X-Repo-Commit": at.oid, "Accept-Ranges": "bytes"}
            if entry.lfs:
                headers.update({"ETag": f'"{entry.sha256}"', "X-Linked-Etag": f'"{entry.sha256}"',
                                "X-Linked-Size": str(entry.size)})
                # as the Hub does for Xet files: the client reads it from the CAS (a caller without a
                # token is sent the bytes over HTTP instead: the CAS tokens here are not per repo)
                xet_hash = None if _anonymous(request) else await call(hub.cas.file_for_sha256, entry.sha256)
                if xet_hash is not None:
                    kind = "datasets" if repo_type == "dataset" else "models"
                    headers.update({"X-Xet-Hash": xet_hash, "X-Xet-Refresh-Route":
                                    f"{base(request)}/api/{kind}/{repo_id}/xet-read-token/{at.oid}"})
            else:
                headers["ETag"] = f'"{entry.oid}"'
            if request.method == "HEAD":
                return Response(b"", headers={**headers, "Content-Length": str(entry.size)})
            return blob_response(request, s.blob_path(entry.sha256), entry.size, headers)

        return _public(resolve)

    async def resolve_one_segment(request: Request) -> Response:
        """``/{name}/resolve/...``: a repo id without its namespace names no repo here."""
        raise HubError(401 if _anonymous(request) else 404, REPO_NOT_FOUND, "RepoNotFound")

    routes = [
        ("/datasets/{ns}/{name}.git/info/lfs/objects/batch", lfs_batch("dataset"), ["POST"]),
        ("/{ns}/{name}.git/info/lfs/objects/batch", lfs_batch("model"), ["POST"]),
        ("/api/repos/create", create, ["POST"]),
        ("/api/repos/delete", delete, ["DELETE"]),
        ("/api/repos/move", move, ["POST"]),
        ("/api/validate-yaml", validate_yaml, ["POST"]),
        ("/api/models", listing("model"), ["GET"]),
        ("/api/datasets", listing("dataset"), ["GET"]),
        ("/api/models/{rest:path}", api_dispatch("model"), ["GET", "POST", "PUT", "DELETE"]),
        ("/api/datasets/{rest:path}", api_dispatch("dataset"), ["GET", "POST", "PUT", "DELETE"]),
        ("/datasets/{ns}/{name}/resolve/{rest:path}", resolver("dataset"), ["GET", "HEAD"]),
        ("/{ns}/{name}/resolve/{rest:path}", resolver("model"), ["GET", "HEAD"]),
        ("/datasets/{name}/resolve/{rest:path}", _public(resolve_one_segment), ["GET", "HEAD"]),
        ("/{name}/resolve/{rest:path}", _public(resolve_one_segment), ["GET", "HEAD"]),
    ]
    guarded = [(path, coded(fn), methods) for path, fn, methods in routes]
    return guarded, [("/api/lfs-upload/{oid}/{size}", lfs_put, ["PUT"])]


def _valid_id(repo_id: str) -> bool:
    try:
        check_repo_id(repo_id)
    except ApiError:
        return False
    return True
