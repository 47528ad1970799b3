"""The `HfApi` the console uses: its defaults, a read-only guard and log streams that resume.

Imports huggingface_hub and the transport's policy; never the embedded server.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import quote

import httpcore2
import httpx2
from huggingface_hub import HfApi

from console.backend.errors import ReadOnlyError
from console.backend.job_ids import check_job_id
from console.backend.transport import RETRY_STATUSES, ClientPolicy
from console.stages import TERMINAL_STAGES

# What a read-only console may call: reads only. Everything else public is refused, so a method
# added to HfApi later is refused until someone decides it only reads.
_READ_PREFIXES = (
    "list_", "get_", "inspect_", "fetch_", "whoami", "auth_check", "repo_info", "model_info",
    "dataset_info", "space_info", "file_exists", "repo_exists", "revision_exists", "paper_info",
    "wait_for_",
)
_PLAIN_ATTRIBUTES = ("endpoint", "token", "library_name", "library_version", "user_agent",
                     "headers", "default_namespace", "read_only", "policy")


class JobsApi(HfApi):
    """HfApi with the console's defaults (see the `console.backend` docstring).

    - `list_jobs` defaults to the backend's namespace;
    - `fetch_job_logs` resumes a cut stream where it stopped; `fetch_job_log_batches` is the same
      followed stream in lists of lines, read a network chunk at a time;
    - with `read_only=True`, every method that could change anything raises ReadOnlyError.
    """

    def __init__(
        self,
        *args: Any,
        default_namespace: str,
        read_only: bool = False,
        policy: ClientPolicy | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.default_namespace = default_namespace
        self.read_only = read_only
        self.policy = policy or ClientPolicy()

    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        if (
            name.startswith("_")
            or name in _PLAIN_ATTRIBUTES
            or not callable(value)
            or not super().__getattribute__("read_only")
            or name.startswith(_READ_PREFIXES)
        ):
            return value

        def refused(*args: Any, **kwargs: Any) -> Any:
            raise ReadOnlyError(
                f"read-only: {name} refused (the console runs with --read-only or "
                "read_only = true; nothing was sent)"
            )

        return refused

    def list_jobs(self, *, namespace: str | None = None, **kwargs: Any) -> Iterable[Any]:
        return super().list_jobs(namespace=namespace or self.default_namespace, **kwargs)

    def fetch_job_logs(
        self,
        *,
        job_id: str,
        namespace: str | None = None,
        follow: bool = False,
        tail: int | None = None,
        token: bool | str | None = None,
    ) -> Iterator[str]:
        """huggingface_hub's log stream, reconnected when it fails part-way.

        The server replays a job's log from its first line on every connection, so after a
        failure this reconnects and skips the lines already given: none lost, none doubled. (A
        `tail=` request cannot be resumed that way; it is retried only if nothing came yet.)
        A followed stream that ends is checked once against a full replay, so lines cut off just
        before the job finished still arrive.
        """
        ns = namespace or self.default_namespace
        given = 0
        failures = 0
        verifying = False
        while True:
            stream = super().fetch_job_logs(
                job_id=job_id, namespace=ns, follow=follow and not verifying,
                tail=None if verifying else tail, token=token,
            )
            skip = given
            try:
                for line in stream:
                    if skip:
                        skip -= 1
                        continue
                    given += 1
                    failures = 0
                    yield line
                if not follow or tail is not None or verifying:
                    return
                verifying = True
                continue
            except GeneratorExit:
                raise
            except Exception as exc:
                failures += 1
                if (
                    not _resumable(exc)
                    or (tail is not None and given)
                    or failures > (self.policy.log_resumes if follow else 2)
                    or self.policy.closing.is_set()
                ):
                    raise
                if tail is not None:
                    given = 0
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
            if self.policy.closing.wait(self.policy.backoff(min(failures, 6))):
                return

    def fetch_job_log_entries(self, *, job_id: str, namespace: str | None = None,
                              tail: int | None = None) -> Iterator[tuple[str | None, str]]:
        """A job's log as it is now, each line with the time the Jobs API stamped it: (ISO
        timestamp or None, text). The logs stream carries a `timestamp` beside each line's
        `data`; huggingface_hub's `fetch_job_logs` drops it, this keeps it."""
        ns = namespace or self.default_namespace
        for event in self._fetch_running_job_sse(
            job_id=job_id, route="logs", timeout=5, skip_previous_events_on_retry=True, follow=False,
            namespace=ns, params={"tail": tail} if tail is not None else None,
        ):
            text = str(event.get("data", ""))
            if not text.startswith(_STARTED):
                stamp = event.get("timestamp")
                yield (str(stamp) if stamp else None), text

    def fetch_job_log_batches(self, *, job_id: str, namespace: str | None = None) -> Iterator[list[str]]:
        """A job's followed log as `fetch_job_logs(follow=True)` gives it (the same lines, none
        lost or doubled across cut streams), in lists: each network chunk of SSE events is parsed
        with one `json.loads` instead of one per line, which is most of what a fast log costs.

        The server replays the log from its first line on every connection; lines already given
        are skipped. A stream that ends (or stays silent past the read timeout) while the job
        still runs is reopened after a pause; once the job has ended, one more read of the whole
        log brings any line the stream missed (as `fetch_job_logs` does).
        """
        from huggingface_hub.utils import get_session, hf_raise_for_status

        ns = namespace or self.default_namespace
        check_job_id(job_id)  # not `..` or a path: refused before any request
        url = f"{self.endpoint}/api/jobs/{quote(ns, safe='')}/{quote(job_id, safe='')}/logs"
        given = 0
        failures = 0
        quiet = 0
        verifying = False
        while True:
            skip = given
            before = given
            ended = False
            try:
                with get_session().stream("GET", url, headers=self._build_hf_headers(),
                                          timeout=_LOG_READ_TIMEOUT) as response:
                    hf_raise_for_status(response)
                    for lines in _log_batches(response.iter_bytes()):
                        if skip:
                            if len(lines) <= skip:
                                skip -= len(lines)
                                continue
                            lines, skip = lines[skip:], 0
                        given += len(lines)
                        failures = 0
                        yield lines
                ended = True
            except GeneratorExit:
                raise
            except (httpx2.ReadTimeout, httpcore2.ReadTimeout):  # silent, not failed: the job may be quiet
                ended = True
            except Exception as exc:
                failures += 1
                if not _resumable(exc) or failures > self.policy.log_resumes or self.policy.closing.is_set():
                    raise
            if ended:
                if verifying:
                    return
                # the job ended: read it once more, at once, for what the stream missed; it did
                # not (HF may end a stream early): reopen it after a pause
                try:
                    verifying = self.inspect_job(job_id=job_id, namespace=ns).status.stage in _TERMINAL
                except Exception as exc:
                    failures += 1
                    if not _resumable(exc) or failures > self.policy.log_resumes or self.policy.closing.is_set():
                        raise
                else:
                    if verifying:
                        continue
                    quiet = 0 if given > before else quiet + 1
                    if self.policy.closing.wait(self.policy.backoff(min(quiet + 1, 6))):
                        return
                    continue
            if self.policy.closing.wait(self.policy.backoff(min(failures, 6))):
                return


_LOG_READ_TIMEOUT = 120
"""Seconds a followed log may stay silent before it is reopened (HF sends a keep-alive every 30)."""
_TERMINAL = TERMINAL_STAGES
_STARTED = "===== Job started"


class TimedLines(list):
    """A batch of log lines; `stamps[i]` is the time the Jobs API stamped line i (ISO, or None)."""

    stamps: list[str | None]


def _log_batches(chunks: Iterable[bytes]) -> Iterator[list[str]]:
    """The log lines of an SSE byte stream, a list per network chunk (`data: {...}` events; the
    "===== Job started" marker dropped, as huggingface_hub drops it), each with its time
    (`TimedLines.stamps`)."""
    import json

    rest = b""
    for chunk in chunks:
        buffer = rest + chunk if rest else chunk
        end = buffer.rfind(b"\n")
        if end < 0:
            rest = buffer
            continue
        rest = buffer[end + 1:]
        payloads = [line[6:].rstrip(b"\r") for line in buffer[:end].split(b"\n") if line.startswith(b"data: {")]
        if not payloads:
            continue
        try:
            events = json.loads(b"[" + b",".join(payloads) + b"]")
        except ValueError:  # say which event is broken, as a per-event parse would
            events = [json.loads(p) for p in payloads]
        if any(e["data"].startswith(_STARTED) for e in events):
            events = [e for e in events if not e["data"].startswith(_STARTED)]
        if events:
            lines = TimedLines(e["data"] for e in events)
            lines.stamps = [e.get("timestamp") for e in events]
            yield lines


def _resumable(exc: BaseException) -> bool:
    """A failure worth reconnecting after: the network, a timeout, a 5xx or a 429."""
    from huggingface_hub.errors import HfHubHTTPError

    if isinstance(exc, HfHubHTTPError):
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        return status in RETRY_STATUSES
    return isinstance(exc, (httpx2.HTTPError, OSError))
