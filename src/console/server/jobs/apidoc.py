"""The OpenAPI 3.1 description of the HF Jobs API this server implements (``GET /openapi.json``,
no token needed: it says nothing a client could not read in huggingface_hub's source).

Derived, not written: the schemas are those of the Structs the server decodes requests with
(:mod:`console.server.jobs.schema`) and builds answers from (:mod:`console.server.jobs.answers`),
and the operations are :data:`OPERATIONS` below. It covers what huggingface_hub 2.4's jobs calls
use: whoami, hardware, jobs (run, list, inspect, logs, metrics, cancel, duplicate, labels, expose)
and scheduled jobs. The bucket and Xet calls a job's volumes and `hf jobs uv run` need are not
described.

The `namespace` path parameter has one value, the namespace this server serves (any other is a
403). A request outside the schemas is answered with a 4xx JSON error ``{"error": "..."}`` naming
the field, which ``tests/server/test_api_fuzz.py`` checks by fuzzing the server from this
description.
"""

from __future__ import annotations

from functools import cache
from typing import Any, NamedTuple

import msgspec

from console.server.jobs.answers import ANSWERS, Error, Hardware, Job, ScheduledJob, Whoami
from console.server.jobs.schema import REQUESTS, Expose, JobSpec, LabelsBody, ScheduleBody, ScheduledJobRequest
from console.stages import ALL_STAGES

MAX_LABEL_FILTERS = 50
"""The most `label=` filters one list request may carry (each is a join in SQL)."""
MAX_CURSOR = 2**63 - 1
"""A cursor is a row number: SQLite's integers end here."""
_REF = "#/components/schemas/{name}"
_ID = {"type": "string", "pattern": "^[0-9a-f]{24}$", "description": "24 hex digits"}
_SSE = "text/event-stream"


class Op(NamedTuple):
    """One operation: its path and method, what it takes and what it answers (a type, or
    `_SSE` for a stream, or None for `{}`)."""

    method: str
    path: str
    op_id: str
    summary: str
    answer: Any
    body: type | None = None
    query: tuple[str, ...] = ()
    also: dict[str, str] | None = None


_J, _S = "/api/jobs/{namespace}", "/api/scheduled-jobs/{namespace}"
OPERATIONS = (
    Op("get", "/api/whoami-v2", "whoami", "The account of this server's namespace", Whoami),
    Op("get", "/api/jobs/hardware", "listHardware", "Flavors and their prices", list[Hardware]),
    Op("post", _J, "runJob", "Run a job (answered SCHEDULING or RUNNING)", Job, JobSpec),
    Op("get", _J, "listJobs", "List jobs, newest first, 100 a page (Link: rel=next)", list[Job],
       query=("stage", "label", "limit", "cursor")),
    Op("get", f"{_J}/{{job_id}}", "inspectJob", "Inspect a job", Job),
    Op("get", f"{_J}/{{job_id}}/logs", "jobLogs",
       'A job\'s log: `data: {"data", "timestamp"}` events until it ends', _SSE, query=("tail",)),
    Op("get", f"{_J}/{{job_id}}/metrics", "jobMetrics", "`event: metric` once a second while the job runs",
       _SSE, also={"406": "the job has finished"}),
    Op("post", f"{_J}/{{job_id}}/cancel", "cancelJob", "Cancel a job (or nothing, if it has finished)", None),
    Op("post", f"{_J}/{{job_id}}/duplicate", "duplicateJob", "Run a job again with the same spec and secrets",
       Job),
    Op("put", f"{_J}/{{job_id}}/labels", "updateJobLabels", "Replace a job's labels", Job, LabelsBody),
    Op("put", f"{_J}/{{job_id}}/expose", "updateJobExpose", "Replace a running job's exposed ports", Job, Expose),
    Op("post", _S, "createScheduledJob", "Create a scheduled job", ScheduledJob, ScheduledJobRequest),
    Op("get", _S, "listScheduledJobs", "List scheduled jobs", list[ScheduledJob], query=("label",)),
    Op("get", f"{_S}/{{sj_id}}", "inspectScheduledJob", "Inspect a scheduled job", ScheduledJob),
    Op("delete", f"{_S}/{{sj_id}}", "deleteScheduledJob", "Delete a scheduled job", None),
    Op("post", f"{_S}/{{sj_id}}/suspend", "suspendScheduledJob", "Suspend", ScheduledJob),
    Op("post", f"{_S}/{{sj_id}}/resume", "resumeScheduledJob", "Resume", ScheduledJob),
    Op("post", f"{_S}/{{sj_id}}/schedule", "rescheduleScheduledJob", "Change the schedule (PUT is accepted too)",
       ScheduledJob, ScheduleBody),
    Op("post", f"{_S}/{{sj_id}}/run", "triggerScheduledJob", "Run now", Job,
       also={"409": "a run is in progress and concurrency is off"}),
    Op("put", f"{_S}/{{sj_id}}/labels", "updateScheduledJobLabels", "Replace a scheduled job's labels",
       ScheduledJob, LabelsBody),
)
QUERY = {
    "stage": ({"type": "string", "enum": list(ALL_STAGES)}, "any of these stages", True),
    "label": ({"type": "string", "pattern": "^[^=]+=.*$"},
              f"key=value; all must match (at most {MAX_LABEL_FILTERS})", True),
    "limit": ({"type": "integer", "minimum": 1, "maximum": 10**9}, "page size (at most 100)", False),
    "cursor": ({"type": "integer", "minimum": 0, "maximum": MAX_CURSOR}, "from the Link header", False),
    "tail": ({"type": "integer", "minimum": 0, "maximum": 10**9}, "only the last N lines", False),
}
"""The query parameters, each with its schema, description and whether it repeats."""
ERRORS = {
    "400": "a field is missing, of the wrong type or out of range: the message names it; nothing "
           "was changed",
    "401": "no token, or not this server's",
    "403": "this server serves one namespace",
    "404": "no such job or scheduled job",
    "413": "the request body is over 8 MiB",
    "507": "disk full: nothing was written",
}


def _json_patterns(node: Any) -> Any:
    """Python's end of text (`\\Z`, what the server checks) as JSON Schema's (`$`)."""
    if isinstance(node, dict):
        return {k: (v[:-2] + "$" if k == "pattern" and v.endswith(r"\Z") else _json_patterns(v))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_json_patterns(v) for v in node]
    return node


def _content(schema: dict[str, Any], media: str = "application/json") -> dict[str, Any]:
    return {"content": {media: {"schema": schema}}}


@cache
def _described() -> tuple[dict[str, Any], dict[str, Any]]:
    """(the paths with `{namespace}` left to fill, the component schemas); built once."""
    types = [*REQUESTS, *ANSWERS, *(op.answer for op in OPERATIONS if op.answer not in (None, _SSE))]
    refs, schemas = msgspec.json.schema_components(types, ref_template=_REF)
    ref_of = dict(zip(map(repr, types), refs, strict=True))
    error = {"$ref": _REF.format(name=Error.__name__)}
    paths: dict[str, Any] = {}
    for op in OPERATIONS:
        params: list[dict[str, Any]] = []
        if "{namespace}" in op.path:
            params.append({"name": "namespace", "in": "path", "required": True, "schema": None})
        for name in ("job_id", "sj_id"):
            if f"{{{name}}}" in op.path:
                params.append({"name": name, "in": "path", "required": True, "schema": _ID})
        for name in op.query:
            schema, description, many = QUERY[name]
            param = {"name": name, "in": "query", "required": False, "description": description,
                     "schema": {"type": "array", "items": schema} if many else schema}
            if many:
                param.update(style="form", explode=True)
            params.append(param)
        if op.answer is None:
            ok = {"description": "done", **_content({"type": "object"})}
        elif op.answer == _SSE:
            ok = {"description": "server-sent events", **_content({"type": "string"}, _SSE)}
        else:
            ok = {"description": op.summary, **_content(ref_of[repr(op.answer)])}
        responses = {"200": ok, **{code: {"description": why, **_content(error)}
                                   for code, why in {**(op.also or {}), **ERRORS}.items()}}
        entry: dict[str, Any] = {"summary": op.summary, "operationId": op.op_id, "responses": responses}
        if params:
            entry["parameters"] = params
        if op.body is not None:
            entry["requestBody"] = {"required": True, **_content(ref_of[repr(op.body)])}
        paths.setdefault(op.path, {})[op.method] = entry
    return paths, _json_patterns(schemas)


def openapi_doc(namespace: str, server_url: str | None = None) -> dict[str, Any]:
    """The description of the server serving `namespace` (at `server_url`, if given)."""
    paths, schemas = _described()
    ns = {"type": "string", "enum": [namespace]}
    filled = {path: {method: {**op, "parameters": [
        {**p, "schema": ns} if p["name"] == "namespace" else p for p in op.get("parameters", [])]}
        for method, op in item.items()} for path, item in paths.items()}
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "HF Jobs API (console's local Jobs server)", "version": "huggingface_hub-2.4",
                 "description": __doc__},
        "security": [{"bearer": []}],
        "paths": filled,
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
                       "schemas": schemas},
    }
    if server_url:
        doc["servers"] = [{"url": server_url}]
    return doc
