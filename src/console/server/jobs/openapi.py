"""The OpenAPI 3.0 description of the HF Jobs API this server implements.

Served without a token at ``GET /openapi.json`` (it says nothing a client could not read in
huggingface_hub's source). It covers what huggingface_hub 2.4's jobs calls use: whoami, hardware,
jobs (run, list, inspect, logs, metrics, cancel, duplicate, labels, expose) and scheduled jobs.
The bucket and Xet calls a job's volumes and `hf jobs uv run` need are not described.

The description is of *this* server: the `namespace` path parameter has one value, the namespace
it serves (any other is a 403). Schemas give the field types and bounds the server checks; a
request outside them is answered with a 4xx JSON error ``{"error": "..."}`` naming the field,
which ``tests/server/test_api_fuzz.py`` checks by fuzzing the server from this description.
"""

from __future__ import annotations

from typing import Any

from console import labels
from console.prices import SHIPPED_FLAVORS
from console.server.jobs.wire import MAX_ENTRIES, MAX_TIMEOUT_SECONDS
from console.stages import ALL_STAGES

_ID = {"type": "string", "pattern": "^[0-9a-f]{24}$", "description": "24 hex digits"}
_LABEL_KEY = labels.KEY_PATTERN
_LABEL_VALUE = labels.VALUE_PATTERN
_ENV_NAME = "^[A-Za-z_][A-Za-z0-9_]{0,255}$"
_STAGES = list(ALL_STAGES)


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _ok(description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"description": description}
    if schema is not None:
        out.update(_json(schema))
    return out


_ERRORS = {
    "400": {"$ref": "#/components/responses/BadRequest"},
    "401": {"$ref": "#/components/responses/Unauthorized"},
    "403": {"$ref": "#/components/responses/OtherNamespace"},
    "404": {"$ref": "#/components/responses/NotFound"},
    "413": {"$ref": "#/components/responses/TooLarge"},
    "507": {"$ref": "#/components/responses/DiskFull"},
}


def _op(summary: str, responses: dict[str, Any], *, params: list[Any] | None = None,
        body: dict[str, Any] | None = None, op_id: str) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "operationId": op_id,
                          "responses": {**responses, **_ERRORS}}
    if params:
        op["parameters"] = params
    if body is not None:
        op["requestBody"] = {"required": True, **_json(body)}
    return op


def _path_param(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema}


def _query(name: str, schema: dict[str, Any], description: str, *, many: bool = False) -> dict[str, Any]:
    if many:
        schema = {"type": "array", "items": schema}
    out = {"name": name, "in": "query", "required": False, "schema": schema,
           "description": description}
    if many:
        out.update(style="form", explode=True)
    return out


def _schemas() -> dict[str, Any]:
    labels = {"type": "object", "maxProperties": MAX_ENTRIES,
              "propertyNames": {"pattern": _LABEL_KEY},
              "additionalProperties": {"type": "string", "pattern": _LABEL_VALUE}}
    env = {"type": "object", "maxProperties": MAX_ENTRIES,
           "propertyNames": {"pattern": _ENV_NAME},
           "additionalProperties": {"type": "string"}}
    str_list = {"type": "array", "maxItems": MAX_ENTRIES, "items": {"type": "string"}}
    ports = {"type": "array", "maxItems": 100,
             "items": {"type": "integer", "minimum": 1, "maximum": 65535}}
    timeout = {"type": "number", "minimum": 1, "maximum": MAX_TIMEOUT_SECONDS}
    status = {"type": "object", "properties": {
        "stage": {"type": "string", "enum": _STAGES},
        "message": {"type": "string", "nullable": True},
        "sshUrl": {"type": "string"},
        "exposeUrls": {"type": "array", "items": {"type": "string"}},
    }, "required": ["stage"]}
    owner = {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"},
                                              "type": {"type": "string"}}}
    return {
        "Error": {"type": "object", "required": ["error"],
                  "properties": {"error": {"type": "string"}}},
        "Labels": labels,
        "JobSpec": {
            "type": "object",
            "description": "What huggingface_hub's run_job sends. Space images (spaceId) are refused.",
            "required": ["dockerImage", "command"],
            "properties": {
                "dockerImage": {"type": "string", "minLength": 1},
                "command": {**str_list, "minItems": 1},
                "arguments": str_list,
                "environment": env,
                "secrets": env,
                "flavor": {"type": "string", "enum": [f.name for f in SHIPPED_FLAVORS]},
                "timeoutSeconds": timeout,
                "timeout": timeout,
                "attempts": {"type": "integer", "minimum": 1, "maximum": 10},
                "labels": labels,
                "tags": {"type": "array", "maxItems": MAX_ENTRIES,
                         "items": {"type": "string", "pattern": _LABEL_KEY}},
                "arch": {"type": "string", "enum": ["", "amd64", "x86_64", "arm64"]},
                "ssh": {"type": "object", "properties": {"enabled": {"type": "boolean"}}},
                "expose": _ref("Expose"),
                "network": {"type": "object", "required": ["group"], "properties": {
                    "group": {"type": "string", "pattern": "^[a-z0-9]([a-z0-9-]{0,44}[a-z0-9])?$"},
                    "aliases": {"type": "array", "items": {
                        "type": "string", "pattern": "^[a-z0-9]([a-z0-9-]{0,32}[a-z0-9])?$"}},
                }},
                "resourceGroupId": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
                "volumes": {"type": "array", "items": {
                    "type": "object", "required": ["source", "mountPath"], "properties": {
                        "type": {"type": "string", "enum": ["bucket", "model", "dataset", "space"]},
                        "source": {"type": "string", "pattern": "^[^/]+/[^/]+$"},
                        "mountPath": {"type": "string", "pattern": "^/"},
                        "readOnly": {"type": "boolean"},
                        "path": {"type": "string"},
                        "revision": {"type": "string"},
                    }}},
            },
        },
        "Expose": {"type": "object", "properties": {"ports": ports, "portsPublic": ports}},
        "Job": {
            "type": "object",
            "required": ["id", "createdAt", "status", "owner"],
            "properties": {
                "id": {"type": "string"}, "createdAt": {"type": "string"},
                "startedAt": {"type": "string"}, "finishedAt": {"type": "string"},
                "dockerImage": {"type": "string", "nullable": True},
                "command": {"type": "array", "items": {"type": "string"}, "nullable": True},
                "arguments": {"type": "array", "items": {"type": "string"}},
                "environment": {"type": "object", "additionalProperties": {"type": "string"}},
                "secrets": {"type": "object", "description": "names only, each null"},
                "flavor": {"type": "string", "nullable": True},
                "labels": {**labels, "nullable": True},
                "timeoutSeconds": {"type": "integer", "nullable": True},
                "status": status, "owner": owner,
                "durations": {"type": "object", "nullable": True},
            },
        },
        "ScheduledJobRequest": {
            "type": "object", "required": ["schedule", "jobSpec"],
            "properties": {
                "schedule": {"type": "string", "maxLength": 200, "description":
                             "@hourly/@daily/@weekly/@monthly/@yearly, 5 cron fields, or 6 with "
                             "seconds first; one that never fires (30 February) is refused"},
                "jobSpec": _ref("JobSpec"),
                "suspend": {"type": "boolean"},
                "concurrency": {"type": "boolean"},
            },
        },
        "ScheduledJob": {
            "type": "object", "required": ["id", "schedule", "jobSpec"],
            "properties": {
                "id": {"type": "string"}, "createdAt": {"type": "string"},
                "schedule": {"type": "string"}, "jobSpec": {"type": "object"},
                "suspend": {"type": "boolean", "nullable": True},
                "concurrency": {"type": "boolean"},
                "status": {"type": "object"}, "owner": owner,
            },
        },
    }


def openapi_doc(namespace: str, server_url: str | None = None) -> dict[str, Any]:
    """The description of the server serving `namespace` (at `server_url`, if given)."""
    ns = _path_param("namespace", {"type": "string", "enum": [namespace]})
    job_id = _path_param("job_id", _ID)
    sj_id = _path_param("sj_id", _ID)
    job, sched = _ref("Job"), _ref("ScheduledJob")
    labels_body = {"type": "object", "required": ["labels"], "properties": {"labels": _ref("Labels")}}
    label_filter = _query("label", {"type": "string", "pattern": "^[^=]+=.*$"},
                          "key=value; all must match (at most 50)", many=True)
    schedule_body = {"type": "object", "required": ["schedule"],
                     "properties": {"schedule": {"type": "string", "maxLength": 200}}}
    sse = {"description": "server-sent events until the job ends",
           "content": {"text/event-stream": {"schema": {"type": "string"}}}}

    def err(description: str) -> dict[str, Any]:
        return _ok(description, _ref("Error"))

    paths = {
        "/api/whoami-v2": {"get": _op("The account of this server's namespace",
                                      {"200": _ok("the account", {"type": "object"})},
                                      op_id="whoami")},
        "/api/jobs/hardware": {"get": _op("Flavors and their prices", {"200": _ok(
            "flavors", {"type": "array", "items": {"type": "object"}})}, op_id="listHardware")},
        "/api/jobs/{namespace}": {
            "post": _op("Run a job", {"200": _ok("the job, SCHEDULING or RUNNING", job)},
                        params=[ns], body=_ref("JobSpec"), op_id="runJob"),
            "get": _op("List jobs, newest first, 100 a page (Link: rel=next)",
                       {"200": _ok("a page of jobs", {"type": "array", "items": job})},
                       params=[ns, _query("stage", {"type": "string", "enum": _STAGES},
                                          "any of these stages", many=True),
                               label_filter,
                               _query("limit", {"type": "integer", "minimum": 1,
                                                "maximum": 10**9}, "page size (at most 100)"),
                               _query("cursor", {"type": "integer", "minimum": 0,
                                                 "maximum": 2**63 - 1}, "from the Link header")],
                       op_id="listJobs"),
        },
        "/api/jobs/{namespace}/{job_id}": {"get": _op("Inspect a job", {"200": _ok("the job", job)},
                                                      params=[ns, job_id], op_id="inspectJob")},
        "/api/jobs/{namespace}/{job_id}/logs": {"get": _op(
            "A job's log: `data: {\"data\", \"timestamp\"}` events", {"200": sse},
            params=[ns, job_id, _query("tail", {"type": "integer", "minimum": 0,
                                                "maximum": 10**9}, "only the last N lines")],
            op_id="jobLogs")},
        "/api/jobs/{namespace}/{job_id}/metrics": {"get": _op(
            "`event: metric` once a second while the job runs",
            {"200": sse, "406": err("the job has finished")}, params=[ns, job_id],
            op_id="jobMetrics")},
        "/api/jobs/{namespace}/{job_id}/cancel": {"post": _op(
            "Cancel a job", {"200": _ok("cancelled (or already finished)", {"type": "object"})},
            params=[ns, job_id], op_id="cancelJob")},
        "/api/jobs/{namespace}/{job_id}/duplicate": {"post": _op(
            "Run a job again with the same spec and secrets", {"200": _ok("the new job", job)},
            params=[ns, job_id], op_id="duplicateJob")},
        "/api/jobs/{namespace}/{job_id}/labels": {"put": _op(
            "Replace a job's labels", {"200": _ok("the job", job)}, params=[ns, job_id],
            body=labels_body, op_id="updateJobLabels")},
        "/api/jobs/{namespace}/{job_id}/expose": {"put": _op(
            "Replace a running job's exposed ports", {"200": _ok("the job", job)},
            params=[ns, job_id], body=_ref("Expose"), op_id="updateJobExpose")},
        "/api/scheduled-jobs/{namespace}": {
            "post": _op("Create a scheduled job", {"200": _ok("the scheduled job", sched)},
                        params=[ns], body=_ref("ScheduledJobRequest"), op_id="createScheduledJob"),
            "get": _op("List scheduled jobs", {"200": _ok("all of them", {
                "type": "array", "items": sched})}, params=[ns, label_filter],
                op_id="listScheduledJobs"),
        },
        "/api/scheduled-jobs/{namespace}/{sj_id}": {
            "get": _op("Inspect a scheduled job", {"200": _ok("the scheduled job", sched)},
                       params=[ns, sj_id], op_id="inspectScheduledJob"),
            "delete": _op("Delete a scheduled job", {"200": _ok("deleted", {"type": "object"})},
                          params=[ns, sj_id], op_id="deleteScheduledJob"),
        },
        "/api/scheduled-jobs/{namespace}/{sj_id}/suspend": {"post": _op(
            "Suspend", {"200": _ok("the scheduled job", sched)}, params=[ns, sj_id],
            op_id="suspendScheduledJob")},
        "/api/scheduled-jobs/{namespace}/{sj_id}/resume": {"post": _op(
            "Resume", {"200": _ok("the scheduled job", sched)}, params=[ns, sj_id],
            op_id="resumeScheduledJob")},
        "/api/scheduled-jobs/{namespace}/{sj_id}/schedule": {
            "post": _op("Change the schedule (PUT is accepted too)",
                        {"200": _ok("the scheduled job", sched)}, params=[ns, sj_id],
                        body=schedule_body, op_id="rescheduleScheduledJob"),
        },
        "/api/scheduled-jobs/{namespace}/{sj_id}/run": {"post": _op(
            "Run now", {"200": _ok("the job started", job),
                        "409": err("a run is in progress and concurrency is off")},
            params=[ns, sj_id], op_id="triggerScheduledJob")},
        "/api/scheduled-jobs/{namespace}/{sj_id}/labels": {"put": _op(
            "Replace a scheduled job's labels", {"200": _ok("the scheduled job", sched)},
            params=[ns, sj_id], body=labels_body, op_id="updateScheduledJobLabels")},
    }
    doc: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {
            "title": "HF Jobs API (console's local Jobs server)",
            "version": "huggingface_hub-2.4",
            "description": __doc__,
        },
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": _schemas(),
            "responses": {
                "BadRequest": err("a field is missing, of the wrong type or out of range: the "
                                  "message names it; nothing was changed"),
                "Unauthorized": err("no token, or not this server's"),
                "OtherNamespace": err("this server serves one namespace"),
                "NotFound": err("no such job or scheduled job"),
                "TooLarge": err("the request body is over 8 MiB"),
                "DiskFull": err("disk full: nothing was written"),
            },
        },
    }
    if server_url:
        doc["servers"] = [{"url": server_url}]
    return doc
