"""The embedded Jobs server over HTTP: the HF Jobs REST + SSE routes huggingface_hub 2.4 uses.

Routes (all under a bearer token; anything else is 401, but for reads of public model and dataset
repos, which need no token, as on the Hub):

- ``GET  /api/whoami-v2``                                  the config's namespace
- ``GET  /api/jobs/hardware``                              flavors and prices (console.prices)
- ``POST /api/jobs/{ns}`` / ``GET /api/jobs/{ns}``          run / list (``stage=``, ``label=k=v``,
  newest first, paginated with a ``Link: <...>; rel="next"`` header)
- ``GET  /api/jobs/{ns}/{id}``                              inspect
- ``GET  /api/jobs/{ns}/{id}/logs``                         SSE ``data: {"data","timestamp"}``,
  ``tail=N``, keep-alives, ends when the job is terminal
- ``GET  /api/jobs/{ns}/{id}/metrics``                      SSE ``event: metric`` once a second
- ``POST /api/jobs/{ns}/{id}/cancel`` | ``/duplicate``; ``PUT .../labels`` | ``.../expose``
- ``/api/scheduled-jobs/{ns}[/{id}[/suspend|resume|schedule|run|labels]]``
- ``GET  /openapi.json`` (no token needed)                 the OpenAPI description of the jobs
  routes above, derived from the request and answer Structs (:mod:`console.server.jobs.apidoc`)
- the bucket calls of Jobs artifacts and volumes (:mod:`console.server.hub.bucket_routes`), model and
  dataset repos (:mod:`console.server.hub.repo_routes`), and the Xet CAS behind both
  (:mod:`console.server.hub.xetcas`, under its own short-lived tokens)

Bad input (a wrong JSON type, NaN, a name with a trailing newline, a cron that never fires, an
out-of-range cursor, too many label filters, JSON nested too deeply, a job id that is not letters
and digits such as `..` or `a%2Fb`, ...) is a 400 whose JSON
``{"error": ...}`` names the field, with nothing written. Anything unforeseen is a JSON 500, logged,
with the connection kept.

Requests the server cannot honour (Space images, webhooks, other bucket calls, pull requests, ...) get a 4xx (501
for webhooks) whose message names what is unsupported.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import logging
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from email.utils import formatdate
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import unquote, urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from console.server import paths
from console.server.core import JobsService
from console.server.host.grants import Grants
from console.server.host.usage import TreeSampler
from console.server.hub.bucket_routes import bucket_routes
from console.server.hub.repo_routes import ANONYMOUS, repo_routes
from console.server.hub.xetcas import cas_routes
from console.server.jobs.answers import hardware_json, scheduled_job_json, whoami_json
from console.server.jobs.apidoc import MAX_CURSOR, MAX_LABEL_FILTERS, openapi_doc
from console.server.jobs.wire import MAX_BODY_BYTES, ApiError, dumps_bytes, read_json_body
from console.server.reserve import is_disk_full
from console.server.routing import IndexedRouter
from console.stages import SCHEDULING, TERMINAL_STAGES

PAGE_SIZE = 100
"""Jobs per page of the job list: a client that wants the newest few reads one small page."""
START_WAIT_SECONDS = 0.25
KEEPALIVE_SECONDS = 15.0
LOG_POLL_SECONDS = 0.05
_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

Handler = Callable[[Request], Awaitable[Response]]
log = logging.getLogger("console.server.app")
_WHOLE_NUMBER = re.compile(r"-?[0-9]{1,24}")
_PATH_ID = re.compile(r"[A-Za-z0-9]+")
_ID_FIELDS = {"jobs": ("job_id", "job"), "scheduled-jobs": ("sj_id", "scheduled job")}


def check_path_id(raw_path: str) -> None:
    """The id in `/api/jobs/{ns}/{id}...` or `/api/scheduled-jobs/{ns}/{id}...` (the path as
    sent, before `%2F` becomes a separator) is letters and digits, else a 400 naming the field:
    `..`, `%2E%2E`, `a%2Fb` or a space never reach a route or a file name."""
    parts = raw_path.split("/", 5)
    if len(parts) < 5 or parts[1] != "api" or parts[2] not in _ID_FIELDS or not parts[4]:
        return
    value = unquote(parts[4])
    if not _PATH_ID.fullmatch(value):
        field, what = _ID_FIELDS[parts[2]]
        shown = value if len(value) <= 100 else value[:100] + "..."
        raise ApiError(400, f"{field} {shown!r} is not a {what} id: letters and digits only")


def _error(status: int, message: str, code: str | None = None) -> JSONResponse:
    if len(message) > 2000:  # a message may quote what was sent: never echo megabytes back
        message = message[:2000] + "..."
    # a header may hold printable ASCII only: a control character the message quotes (a label
    # key with a CR or NUL) would make the server fail writing the answer and drop the connection
    header = "".join(ch if " " <= ch <= "~" else "?" for ch in message[:500])
    headers = {"X-Error-Message": header}
    if code:
        headers["X-Error-Code"] = code
    return JSONResponse({"error": message}, status_code=status, headers=headers)


_dumps = dumps_bytes


class _Json(JSONResponse):
    def render(self, content: Any) -> bytes:
        return _dumps(content)


_PUBLIC_METHODS = ("GET", "HEAD", "POST")


def guard(service: JobsService, token: str, grants: Grants | None = None) -> Callable[..., Handler]:
    """What every route goes through: the bearer token (401 without it, compared in constant
    time), the namespace it names (404 unless it is the server's), and the answer to whatever the
    route raises: its own 4xx, 507 for a full disk, a logged JSON 500 for anything else.

    A route guarded with `public=True` (the model and dataset repo reads, as the Hub serves public
    repos to anyone) also takes a request with no Authorization header at all: it runs marked
    anonymous (`repo_routes.ANONYMOUS` in its scope) and itself serves only reads of public repos
    to it. A wrong or malformed header is a 401 there too.

    A job's own token (`grants`, :mod:`console.server.host.grants`) passes where its job may go, and is
    a 403 naming the job elsewhere."""
    expected = f"Bearer {token}".encode()

    def guarded(fn: Handler, public: bool = False) -> Handler:
        async def handler(request: Request) -> Response:
            given = request.headers.get("authorization")
            grant = grants.find(given) if grants is not None else None
            if given is None and public and request.method in _PUBLIC_METHODS:
                request.scope[ANONYMOUS] = True
            elif grant is None and not hmac.compare_digest((given or "").encode(), expected):
                return _error(401, "Invalid credentials in Authorization header")
            try:
                if grant is not None and grants is not None and (why := await grants.allows(grant, request)):
                    return _error(403, why)
                raw = request.scope.get("raw_path")
                check_path_id(raw.decode("latin-1") if raw else request.url.path)
                ns = request.path_params.get("namespace")
                if ns is not None:
                    service.check_namespace(ns)
                return await fn(request)
            except ApiError as exc:
                return _error(exc.status, exc.message, exc.code)
            except (sqlite3.Error, OSError) as exc:
                if is_disk_full(exc):
                    return _error(507, "disk full: the Jobs server cannot write its state; free "
                                  "space in its data folder")
                return _internal(request, exc)
            except Exception as exc:  # a bug: answered in JSON, logged, the connection kept
                return _internal(request, exc)

        return handler

    return guarded


def _internal(request: Request, exc: BaseException) -> Response:
    log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return _error(500, f"internal error in the local Jobs server ({type(exc).__name__}); "
                  "see `console server logs`")


def create_app(service: JobsService, token: str, models: Iterable[str] = (), grants: Grants | None = None) -> Any:
    """The Starlette app serving `service`, guarded by `token` (and the jobs' own tokens, `grants`);
    `models` are the Hub model repos whose model info it answers (`HfApi.model_info`), as the Hub
    does for existing models."""
    guarded = guard(service, token, grants)
    known_models = frozenset(models)

    def labels_filter(request: Request) -> dict[str, str]:
        items = request.query_params.getlist("label")
        if len(items) > MAX_LABEL_FILTERS:
            raise ApiError(400, f"label: at most {MAX_LABEL_FILTERS} label filters, got {len(items)}")
        labels: dict[str, str] = {}
        for item in items:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise ApiError(400, f"label filter {item!r:.200} must be key=value")
            labels[key] = value
        return labels

    def whole_number(params: Any, name: str, low: int, high: int) -> int | None:
        text = params.get(name)
        if text is None:
            return None
        if not _WHOLE_NUMBER.fullmatch(text):
            raise ApiError(400, f"{name} must be a whole number from {low} to {high}")
        value = int(text)
        if not low <= value <= high:
            raise ApiError(400, f"{name} must be a whole number from {low} to {high}")
        return value

    async def body_json(request: Request) -> Any:
        return await read_json_body(request, MAX_BODY_BYTES)

    def job_out(job: Any) -> Any:
        return service.present(job)

    # -- account and hardware ---------------------------------------------------------------

    async def whoami(request: Request) -> Response:
        return _Json(whoami_json(service.namespace))

    async def hardware(request: Request) -> Response:
        return _Json(hardware_json())

    # -- jobs ----------------------------------------------------------------------------------

    async def jobs_collection(request: Request) -> Response:
        if request.method == "POST":
            job = service.run_job(await body_json(request))
            # With a free slot the runner starts the job within milliseconds: answer with that
            # stage rather than make every client poll once more (the hf CLI waits 2 s per poll).
            deadline = time.monotonic() + START_WAIT_SECONDS
            while job.stage == SCHEDULING and time.monotonic() < deadline:
                await asyncio.sleep(0.005)
                job = service.get_job(job.id)
            return _Json(job_out(job))
        params = request.query_params
        stages = list(dict.fromkeys(s.upper()[:40] for s in params.getlist("stage")))
        labels = labels_filter(request)
        limit = whole_number(params, "limit", 1, 10**9)
        limit = PAGE_SIZE if limit is None else min(PAGE_SIZE, limit)
        cursor = whole_number(params, "cursor", 0, MAX_CURSOR)
        body, next_cursor = service.list_jobs_page(
            stages=stages, labels=labels, before_seq=cursor, limit=limit
        )
        headers = {}
        if next_cursor is not None:
            query = [(k, v) for k, v in params.multi_items() if k != "cursor"]
            query.append(("cursor", str(next_cursor)))
            next_url = str(request.url.replace(query=urlencode(query)))
            headers["Link"] = f'<{next_url}>; rel="next"'
        return Response(body, media_type="application/json", headers=headers)

    async def job_item(request: Request) -> Response:
        return _Json(job_out(service.get_job(request.path_params["job_id"])))

    async def job_cancel(request: Request) -> Response:
        service.cancel_job(request.path_params["job_id"])
        return _Json({})

    async def job_duplicate(request: Request) -> Response:
        return _Json(job_out(service.duplicate_job(request.path_params["job_id"])))

    async def job_labels(request: Request) -> Response:
        job = service.update_job_labels(request.path_params["job_id"], await body_json(request))
        return _Json(job_out(job))

    async def job_expose(request: Request) -> Response:
        job = await asyncio.to_thread(service.update_job_expose, request.path_params["job_id"],
                                      await body_json(request))
        return _Json(job_out(job))

    async def job_logs(request: Request) -> Response:
        job_id = request.path_params["job_id"]
        service.get_job(job_id)
        tail = whole_number(request.query_params, "tail", 0, 10**9)
        return StreamingResponse(
            _log_events(service, job_id, tail), media_type="text/event-stream",
            headers=_SSE_HEADERS,
        )

    async def job_metrics(request: Request) -> Response:
        job_id = request.path_params["job_id"]
        job = service.get_job(job_id)
        if job.stage in TERMINAL_STAGES:
            raise ApiError(406, f"job {job_id} has finished ({job.stage}): no live metrics")
        return StreamingResponse(
            _metric_events(service, job_id), media_type="text/event-stream",
            headers=_SSE_HEADERS,
        )

    # -- scheduled jobs ------------------------------------------------------------------------

    async def scheduled_collection(request: Request) -> Response:
        if request.method == "POST":
            return _Json(scheduled_job_json(service.create_scheduled(await body_json(request))))
        labels = labels_filter(request)
        return StreamingResponse(service.scheduled_listing(labels), media_type="application/json")

    async def scheduled_item(request: Request) -> Response:
        sj_id = request.path_params["sj_id"]
        if request.method == "DELETE":
            service.delete_scheduled(sj_id)
            return _Json({})
        return _Json(scheduled_job_json(service.get_scheduled(sj_id)))

    async def scheduled_action(request: Request) -> Response:
        sj_id = request.path_params["sj_id"]
        action = request.path_params["action"]
        if action == "suspend" and request.method == "POST":
            return _Json(scheduled_job_json(service.suspend_scheduled(sj_id)))
        if action == "resume" and request.method == "POST":
            return _Json(scheduled_job_json(service.resume_scheduled(sj_id)))
        if action == "schedule" and request.method in ("POST", "PUT"):
            body = await body_json(request)
            return _Json(scheduled_job_json(service.reschedule(sj_id, body)))
        if action == "run" and request.method == "POST":
            return _Json(job_out(service.trigger_scheduled(sj_id)))
        if action == "labels" and request.method == "PUT":
            body = await body_json(request)
            return _Json(scheduled_job_json(service.update_scheduled_labels(sj_id, body)))
        raise ApiError(
            404, f"{request.method} /api/scheduled-jobs/.../{action} is not supported by the "
            "local Jobs server",
        )

    async def webhooks(request: Request) -> Response:
        raise ApiError(
            501, "webhooks (and webhook-triggered jobs, `hf webhooks create --job-id`) are not "
            "supported by the local Jobs server: nothing on this machine emits Hub events",
        )

    async def unsupported(request: Request) -> Response:
        path = request.url.path
        what = path
        for prefix, name in (
            ("/api/buckets", "bucket calls"), ("/api/spaces", "Spaces"), ("/api/datasets", "datasets"),
            ("/api/models", "models"), ("/api/repos", "repositories"),
            ("/api/resolve-cache", "file downloads"),
        ):
            if path.startswith(prefix):
                what = f"{name} ({path})"
                break
        raise ApiError(
            404 if not path.startswith("/api/jobs") else 400,
            f"{request.method} {what} is not supported by the local Jobs server "
            "(it serves jobs, scheduled jobs, hardware, whoami, buckets and model and dataset repos)",
        )

    async def openapi(request: Request) -> Response:
        base = f"{request.url.scheme}://{request.url.netloc}"
        return _Json(openapi_doc(service.namespace, base))

    all_methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"]
    repo_guarded, repo_signed = repo_routes(service.hub, service.namespace, known_models)
    routes = [
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/api/whoami-v2", guarded(whoami), methods=["GET"]),
        Route("/api/jobs/hardware", guarded(hardware), methods=["GET"]),
        Route("/api/jobs/{namespace}", guarded(jobs_collection), methods=["GET", "POST"]),
        Route("/api/jobs/{namespace}/{job_id}", guarded(job_item), methods=["GET"]),
        Route("/api/jobs/{namespace}/{job_id}/logs", guarded(job_logs), methods=["GET"]),
        Route("/api/jobs/{namespace}/{job_id}/metrics", guarded(job_metrics), methods=["GET"]),
        Route("/api/jobs/{namespace}/{job_id}/cancel", guarded(job_cancel), methods=["POST"]),
        Route("/api/jobs/{namespace}/{job_id}/duplicate", guarded(job_duplicate),
              methods=["POST"]),
        Route("/api/jobs/{namespace}/{job_id}/labels", guarded(job_labels), methods=["PUT"]),
        Route("/api/jobs/{namespace}/{job_id}/expose", guarded(job_expose), methods=["PUT"]),
        Route("/api/scheduled-jobs/{namespace}", guarded(scheduled_collection),
              methods=["GET", "POST"]),
        Route("/api/scheduled-jobs/{namespace}/{sj_id}", guarded(scheduled_item),
              methods=["GET", "DELETE"]),
        Route("/api/scheduled-jobs/{namespace}/{sj_id}/{action}", guarded(scheduled_action),
              methods=all_methods),
        *[Route(path, guarded(fn), methods=methods)
          for path, fn, methods in bucket_routes(service.hub, service.namespace)],
        *cas_routes(lambda: service.hub.cas),
        *[Route(path, guarded(fn, public=getattr(fn, "public_reads", False)), methods=methods)
          for path, fn, methods in repo_guarded],
        *[Route(path, fn, methods=methods) for path, fn, methods in repo_signed],
        Route("/api/settings/webhooks", guarded(webhooks), methods=all_methods),
        Route("/api/settings/webhooks/{rest:path}", guarded(webhooks), methods=all_methods),
        Route("/{path:path}", guarded(unsupported), methods=all_methods),
    ]
    app = Starlette()
    app.router = IndexedRouter(routes)  # each request tries only the routes that can match it
    app.state.service = service
    return _DateHeader(app)


@functools.lru_cache(maxsize=2)
def _http_date(second: int) -> bytes:
    """The `Date` header of a second (it names whole seconds: formatted once per second, not per answer)."""
    return formatdate(second, usegmt=True).encode("ascii")


class _DateHeader:
    """Stamp every response with a fresh `Date` (uvicorn's own is cached for up to a second).

    `fetch_job_logs(follow=False)` stops at the first event later than the Date header + 1 s, so
    a stale Date would cut off the last lines of a job that just finished.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.state = app.state

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_date(message: Any) -> None:
            if message["type"] == "http.response.start":
                date = _http_date(int(time.time()))
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"date"]
                headers.append((b"date", date))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_date)


class _LineReader:
    """Complete lines appended to a file since the last read (the file may not exist yet)."""

    CHUNK = 4 * 1024 * 1024

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pos = 0
        self.pending = b""
        self.fh: BinaryIO | None = None

    def read_lines(self) -> tuple[list[bytes], bool]:
        """(new complete lines, whether more data may be waiting right now)."""
        if self.fh is None:
            try:
                self.fh = open(self.path, "rb")  # noqa: SIM115
            except FileNotFoundError:
                return [], False
        self.fh.seek(self.pos)
        data = self.fh.read(self.CHUNK)
        if not data:
            return [], False
        self.pos += len(data)
        lines = (self.pending + data).split(b"\n")
        self.pending = lines.pop()
        return [line for line in lines if line], len(data) == self.CHUNK

    def read_all_lines(self) -> list[bytes]:
        out: list[bytes] = []
        while True:
            lines, more = self.read_lines()
            out.extend(lines)
            if not more:
                return out

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()


def tail_lines(path: Path, count: int, block: int = 64 * 1024) -> tuple[list[bytes], int]:
    """The last `count` complete lines of a file, read backwards a block at a time, and the offset
    just past them (where following the file goes on). A missing file has none."""
    try:
        fh = open(path, "rb")  # noqa: SIM115
    except FileNotFoundError:
        return [], 0
    with fh:
        end = fh.seek(0, 2)
        data = b""
        pos = end
        while pos > 0 and data.count(b"\n") <= count:
            step = min(block, pos)
            pos -= step
            fh.seek(pos)
            data = fh.read(step) + data
    complete = data.rfind(b"\n") + 1  # a last line still being written is not sent yet
    lines = [line for line in data[:complete].split(b"\n") if line]
    if pos > 0 and lines:  # the first piece may be the end of a line that began before `pos`
        lines = lines[1:]
    return (lines[-count:] if count else []), end - (len(data) - complete)


# Line breaks a JSON string may hold raw but that line-splitting SSE clients (httpx's
# `iter_lines`, like `str.splitlines`) break lines at: NEL, LINE and PARAGRAPH SEPARATOR. Sent
# raw, a job printing one would split its event in two and end the client's stream with a JSON
# error; escaped, the event says the same thing on one line.
_SPLITTERS = ((b"\xc2\x85", b"\\u0085"), (b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"))


def _sse(lines: list[bytes]) -> bytes:
    out = b"".join(b"data: " + line + b"\n\n" for line in lines)
    for raw, escaped in _SPLITTERS:
        if raw in out:
            out = out.replace(raw, escaped)
    return out


async def _log_events(service: JobsService, job_id: str, tail: int | None) -> AsyncIterator[bytes]:
    """Replay a job's log file as SSE events, then follow it until the job is terminal."""
    reader = _LineReader(paths.log_path(job_id))
    last_sent = time.monotonic()
    try:
        if tail is not None:
            # from the end of the file, off the event loop: a 500 MB log costs a few blocks
            lines, reader.pos = await asyncio.to_thread(tail_lines, reader.path, tail)
            if lines:
                yield _sse(lines)
        while True:
            # Read the stage first: the runner writes every line before it records a terminal
            # stage, so the read that follows a terminal stage drains the log completely.
            stage = service.store.get_stage(job_id)
            lines, more = reader.read_lines()
            if lines:
                yield _sse(lines)
                last_sent = time.monotonic()
            if more:
                continue
            if stage is None or stage in TERMINAL_STAGES:
                return
            if time.monotonic() - last_sent >= KEEPALIVE_SECONDS:
                yield b": keep-alive\n\n"
                last_sent = time.monotonic()
            await asyncio.sleep(LOG_POLL_SECONDS)
    finally:
        reader.close()


async def _metric_events(service: JobsService, job_id: str) -> AsyncIterator[bytes]:
    """One `metric` event a second while the job runs; ends when it is terminal."""
    sampler: TreeSampler | None = None
    last_sent = time.monotonic()
    while True:
        stage = service.store.get_stage(job_id)
        if stage is None or stage in TERMINAL_STAGES:
            return
        pid = service.runner.pid_of(job_id)
        if pid is not None:
            if sampler is None or sampler.pid != pid:
                sampler = await asyncio.to_thread(TreeSampler, pid, job_id[-5:])
                await asyncio.sleep(0.5)
            sample = await asyncio.to_thread(sampler.sample)
            yield b"event: metric\ndata: " + _dumps(sample) + b"\n\n"
            last_sent = time.monotonic()
            await asyncio.sleep(1.0)
            continue
        if time.monotonic() - last_sent >= KEEPALIVE_SECONDS:
            yield b": keep-alive\n\n"
            last_sent = time.monotonic()
        await asyncio.sleep(0.2)
