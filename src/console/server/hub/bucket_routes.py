"""The bucket routes huggingface_hub 2.4 uses for Jobs artifacts and volumes, over HTTP.

- ``POST   /api/buckets/{ns}/{name}``            create (409 when it exists: `exist_ok` relies on it)
- ``GET    /api/buckets/{ns}/{name}``            info; ``DELETE`` deletes; ``GET /api/buckets/{ns}`` lists
  (``search=`` keeps the names that contain it, any case; a namespace not served here is a 404)
- ``GET    /api/buckets/{ns}/{name}/xet-write-token`` | ``xet-read-token``  a CAS token:
  ``{"accessToken", "exp", "casUrl"}`` (and the same as ``X-Xet-*`` headers)
- ``POST   /api/buckets/{ns}/{name}/batch``      NDJSON addFile / copyFile / deleteFile; failures are
  listed in ``{"failed": [...]}`` (200 when some worked, 422 when none did); a copyFile's source
  (``sourceRepoType``, ``sourceRepoId``) must exist and, for a bucket, hold its ``xetHash``
- ``GET    /api/buckets/{ns}/{name}/tree[/{prefix}]``  every file below, as the Hub lists; with
  ``recursive=false`` the top level only (files and folders)
- ``POST   /api/buckets/{ns}/{name}/paths-info``  ``{"paths": [...]}``
- ``PUT    /api/buckets/{ns}/{name}/settings``    ``{"private": bool}``; a bucket is renamed by
  ``POST /api/repos/move`` ``{"fromRepo", "toRepo", "type": "bucket"}`` (:mod:`console.server.hub.repo_routes`)
- ``HEAD|GET /buckets/{ns}/{name}/resolve/{path}``  the file, with ``X-Xet-Hash`` and the refresh route

The namespace ``me`` means the server's own, as on the Hub. Every call first brings the bucket's
index up to date with its folder (:meth:`BucketStore.reconcile`), so what a job wrote into a
read-write volume lists and downloads like an upload.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response

from console.server.hub import xetclient
from console.server.hub.buckets import LocalHub, check_path, check_repo_id, within
from console.server.hub.repos import open_repo_store
from console.server.hub.uploads import body_chunks, check_room
from console.server.jobs.wire import ApiError, check_unicode, read_json_body

MAX_BATCH_BYTES = 32 * 1024 * 1024


def bucket_routes(hub: LocalHub, namespace: str) -> list[tuple[str, Any, list[str]]]:
    """(path, handler, methods) for each route; the app guards them with its bearer token."""

    def bucket_id(request: Request) -> str:
        ns = request.path_params["bns"]
        if ns == "me":
            ns = namespace
        if ns != namespace:
            raise ApiError(403, f"namespace {ns!r} is not served here: this local server holds {namespace!r}'s buckets")
        return check_repo_id(f"{ns}/{request.path_params['name']}")

    def base(request: Request) -> str:
        return str(request.base_url).rstrip("/")

    def cas_url(request: Request) -> str:
        return f"{base(request)}/xet/{hub.cas.instance}"

    def uploader(request: Request) -> Any:
        url, token = cas_url(request), hub.cas.issue_token("write")
        return lambda path: xetclient.upload_file(url, token, path)

    def downloader(request: Request) -> Any:
        url, token = cas_url(request), hub.cas.issue_token("read")
        return lambda xet_hash, size, dest: xetclient.download_file(url, token, xet_hash, size, dest)

    async def ready(request: Request) -> str:
        """The bucket id, once its index matches its folder."""
        bid = bucket_id(request)
        await asyncio.to_thread(hub.buckets.require, bid)
        try:
            await asyncio.to_thread(hub.buckets.reconcile, bid, uploader(request))
        except xetclient.XetUnavailable as exc:
            raise ApiError(501, str(exc)) from None
        return bid

    async def create(request: Request) -> Response:
        payload = await read_json_body(request)
        bid = bucket_id(request)
        private = isinstance(payload, dict) and payload.get("visibility") == "private"
        url = f"{base(request)}/buckets/{bid}"
        if not await asyncio.to_thread(hub.buckets.create, bid, private):
            # `create_bucket(exist_ok=True)` reads the url from the 409 too
            message = f"You already created this bucket: {bid}"
            return JSONResponse({"error": message, "url": url}, status_code=409, headers={"X-Error-Message": message})
        return JSONResponse({"url": url, "id": bid, "name": bid})

    async def item(request: Request) -> Response:
        if request.method == "POST":
            return await create(request)
        if request.method == "DELETE":
            await asyncio.to_thread(hub.buckets.delete, bucket_id(request))
            return JSONResponse({})
        bid = await ready(request)
        return JSONResponse(await asyncio.to_thread(hub.buckets.info, bid))

    async def listing(request: Request) -> Response:
        ns = request.path_params["bns"]
        ns = namespace if ns == "me" else ns
        if ns != namespace:
            # also what `bucket_info("name")` reaches: a bucket id without its namespace
            raise ApiError(404, f"namespace {ns[:100]!r} not found: this local server holds {namespace!r}'s "
                           "buckets (a bucket id is namespace/name)")
        search = request.query_params.get("search")
        return JSONResponse(await asyncio.to_thread(hub.buckets.list, ns, search))

    async def settings(request: Request) -> Response:
        payload = await read_json_body(request)
        private = payload.get("private") if isinstance(payload, dict) else None
        if not isinstance(private, bool):
            raise ApiError(400, 'private: expected true or false ({"private": bool})')
        await asyncio.to_thread(hub.buckets.set_private, bucket_id(request), private)
        return JSONResponse({})

    async def xet_token(request: Request) -> Response:
        bid = bucket_id(request)
        await asyncio.to_thread(hub.buckets.require, bid)
        scope = "write" if request.path_params["scope"] == "write" else "read"
        if scope == "write":
            await asyncio.to_thread(check_room, hub.cas.root, 0)
        token, exp = hub.cas.issue_token(scope)
        url = cas_url(request)
        headers = {"X-Xet-Cas-Url": url, "X-Xet-Access-Token": token, "X-Xet-Token-Expiration": str(exp)}
        return JSONResponse({"accessToken": token, "exp": exp, "casUrl": url}, headers=headers)

    def repo_exists(repo_type: str, repo_id: str) -> bool:
        return open_repo_store(hub, namespace).exists(repo_type, repo_id)

    async def batch(request: Request) -> Response:
        bid = bucket_id(request)
        await asyncio.to_thread(hub.buckets.require, bid)
        raw = b""
        async for chunk in body_chunks(request):
            raw += chunk
            if len(raw) > MAX_BATCH_BYTES:
                raise ApiError(413, "the batch is over 32 MiB")
        ops = []
        for line in raw.splitlines():
            if line.strip():
                try:
                    ops.append(check_unicode(json.loads(line), line))
                except ValueError:
                    raise ApiError(400, "the batch body must be NDJSON (one operation per line)") from None
                except RecursionError:
                    raise ApiError(400, "an operation of the batch is nested too deeply") from None
        try:
            failed = await asyncio.to_thread(hub.buckets.apply_batch, bid, ops, downloader(request), repo_exists)
        except xetclient.XetUnavailable as exc:
            raise ApiError(501, str(exc)) from None
        status = 422 if failed and len(failed) == len(ops) else 200
        return JSONResponse({"failed": failed}, status_code=status)

    async def tree(request: Request) -> Response:
        bid = await ready(request)
        # the Hub lists the whole tree unless told `recursive=false` (huggingface_hub sends no
        # parameter for `list_bucket_tree(bucket_id)`, and `recursive=False` for `hf buckets list`)
        flag = request.query_params.get("recursive", "true").lower()
        if flag not in ("true", "1", "false", "0"):
            raise ApiError(400, f"recursive: expected true or false, got {flag[:40]!r}")
        recursive = flag in ("true", "1")
        prefix = request.path_params.get("prefix", "")
        return JSONResponse(await asyncio.to_thread(hub.buckets.tree, bid, prefix, recursive))

    async def paths_info(request: Request) -> Response:
        bid = await ready(request)
        payload = await read_json_body(request)
        wanted = payload.get("paths") if isinstance(payload, dict) else None
        if not isinstance(wanted, list):
            raise ApiError(400, 'the body must be {"paths": [...]}')
        return JSONResponse(await asyncio.to_thread(hub.buckets.paths_info, bid, wanted))

    async def resolve(request: Request) -> Response:
        bid = await ready(request)
        path = check_path(request.path_params["path"])
        row = await asyncio.to_thread(hub.buckets.file, bid, path)
        headers = {
            "X-Xet-Hash": row.xet_hash,
            "X-Xet-Refresh-Route": f"{base(request)}/api/buckets/{bid}/xet-read-token",
            "X-Linked-Size": str(row.size),
            "ETag": f'"{row.xet_hash}"',
        }
        if request.method == "HEAD":
            return Response(b"", headers={**headers, "Content-Length": str(row.size)})
        target = hub.buckets.folder(bid) / path
        if not within(hub.buckets.folder(bid), target) or target.is_symlink():
            raise ApiError(404, f"{path!r} not found in bucket {bid!r}")
        return FileResponse(target, headers=headers)

    bucket = "/api/buckets/{bns}/{name}"
    return [
        ("/api/buckets/{bns}", listing, ["GET"]),
        (bucket, item, ["GET", "POST", "DELETE"]),
        (bucket + "/xet-{scope}-token", xet_token, ["GET"]),
        (bucket + "/xet-{scope}-token/{rev}", xet_token, ["GET"]),
        (bucket + "/settings", settings, ["PUT"]),
        (bucket + "/batch", batch, ["POST"]),
        (bucket + "/tree", tree, ["GET"]),
        (bucket + "/tree/{prefix:path}", tree, ["GET"]),
        (bucket + "/paths-info", paths_info, ["POST"]),
        ("/buckets/{bns}/{name}/resolve/{path:path}", resolve, ["GET", "HEAD"]),
    ]
