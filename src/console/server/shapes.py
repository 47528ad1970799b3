"""Strict mode: the embedded server answers in the leaner shapes huggingface.co is seen to send.

This server's answers are complete: every job has `finishedAt` once it ends and `durations`, every
scheduled job's spec has its timeout, `suspend` is true or false. huggingface.co's answers, as
huggingface_hub 2.4's dataclasses and tests show them, are not always:

- finished jobs without `finishedAt` and with ``durations: null`` (jobs from before the API had
  durations), so a client cannot tell how long they ran;
- a scheduled job's spec with its timeout only as `timeoutSeconds`, which `JobSpec` does not read
  (it reads `timeout`; huggingface_hub issue #3386 reports it coming back empty), so a client
  sees no timeout;
- ``suspend: null`` for a schedule that is not suspended.

A server started with ``ServerOptions(strict=True)`` (or ``CONSOLE_SERVER_STRICT=1`` in its
environment) wraps its app in :class:`HfShapes`, which rewrites every JSON answer about jobs and
scheduled jobs that way, so that tests prove the console copes with what HF really sends. Off by
default; streams (logs, metrics) and errors pass untouched.
"""

from __future__ import annotations

import json
import os
from typing import Any

STRICT_ENV = "CONSOLE_SERVER_STRICT"
_PREFIXES = ("/api/jobs/", "/api/scheduled-jobs/")


def strict_by_env() -> bool:
    return os.environ.get(STRICT_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def reshape_job(doc: dict[str, Any]) -> dict[str, Any]:
    """A job as a legacy HF answer: no `finishedAt`, ``durations: null``."""
    doc.pop("finishedAt", None)
    doc["durations"] = None
    return doc


def reshape_scheduled(doc: dict[str, Any]) -> dict[str, Any]:
    """A scheduled job as HF answers it: the timeout only as `timeoutSeconds`, ``suspend: null``
    when not suspended."""
    spec = doc.get("jobSpec")
    if isinstance(spec, dict):
        spec.pop("timeout", None)
    if not doc.get("suspend"):
        doc["suspend"] = None
    return doc


def reshape(doc: Any) -> Any:
    """Any answer of the jobs API (a job, a scheduled job, a list of either), reshaped."""
    if isinstance(doc, list):
        return [reshape(item) for item in doc]
    if not isinstance(doc, dict):
        return doc
    if "jobSpec" in doc and "schedule" in doc:
        return reshape_scheduled(doc)
    if "status" in doc and "owner" in doc and "id" in doc:
        return reshape_job(doc)
    return doc


class HfShapes:
    """ASGI middleware: successful JSON answers under /api/jobs and /api/scheduled-jobs reshaped."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.state = getattr(app, "state", None)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith(_PREFIXES):
            await self.app(scope, receive, send)
            return
        held: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def reshaping_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = {k.lower(): v for k, v in message.get("headers", [])}
                json_answer = headers.get(b"content-type", b"").startswith(b"application/json")
                if message.get("status") == 200 and json_answer:
                    held["start"] = message  # sent with the rewritten body
                    return
            elif message["type"] == "http.response.body" and "start" in held:
                chunks.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                body = b"".join(chunks)
                try:
                    body = json.dumps(reshape(json.loads(body)), ensure_ascii=False,
                                      separators=(",", ":")).encode("utf-8")
                except ValueError:
                    pass
                start = held.pop("start")
                headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
                headers.append((b"content-length", str(len(body)).encode("ascii")))
                await send({**start, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
            await send(message)

        await self.app(scope, receive, reshaping_send)
