"""The `HfApi` the console uses: its defaults, a read-only guard and log streams that resume.

Imports huggingface_hub and the transport's policy; never the embedded server.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import httpx2
from huggingface_hub import HfApi

from console.backend.errors import ReadOnlyError
from console.backend.transport import RETRY_STATUSES, ClientPolicy

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
    - `fetch_job_logs` resumes a cut stream where it stopped;
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


def _resumable(exc: BaseException) -> bool:
    """A failure worth reconnecting after: the network, a timeout, a 5xx or a 429."""
    from huggingface_hub.errors import HfHubHTTPError

    if isinstance(exc, HfHubHTTPError):
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        return status in RETRY_STATUSES
    return isinstance(exc, (httpx2.HTTPError, OSError))
