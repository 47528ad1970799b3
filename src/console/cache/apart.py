"""The whole schedule list, read in a short-lived process of its own.

`HfApi.list_scheduled_jobs` answers in one response, about 1 KB per schedule: 11 MB at 10,000
tenants, decoded at once into some 60 MB of dicts and `ScheduledJobInfo`s. Decoded in the console,
that peak comes back at every whole re-read, and what outlives it (the schedules that changed, the
refresh's own records) pins part of it for good: the console's memory stepped up at each re-read.
So the console reads the list in a child process (`python -m console.cache.apart`), which keeps
each schedule as the console does (`jobspec.keep_schedule`) and hands back only the schedules that
changed since the copies the console holds, known by a digest of each (`KeptSchedule.digest`); for
the rest the console keeps its own objects. The child's memory is gone with it.

Talking to the child: the console writes one JSON document to its standard input (the endpoint,
token, headers, namespace, timeout and the digests it holds: the token never goes on a command
line or in an environment); the child writes a pickle to its standard output, ``("ok", entries)``
where an entry is a schedule id (unchanged: the console's own copy) or a `KeptSchedule`, in the
API's order, or ``("error", message)``. The child asks once, with plain huggingface_hub: no
retries. :func:`read_schedules_apart` answers None whenever the child cannot answer (a test's
stand-in API, an error, a crash, no answer in `CHILD_SECONDS`): the caller reads in its own
process then, through the console's retrying transport, so every error reaches the user as it
always did.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

CHILD_MODULE = "console.cache.apart"
CHILD_SECONDS = 120.0
"""How long the child may take before the console reads in its own process instead."""
_POLL_SECONDS = 0.25


def digest_of(kept: Any) -> str:
    """A digest of what a `KeptSchedule` holds (not the digest itself): equal schedules, equal
    digests, from the same code in any process."""
    values = tuple(getattr(kept, f.name) for f in dataclasses.fields(kept) if f.compare)
    return hashlib.blake2b(pickle.dumps(values, protocol=5), digest_size=16).hexdigest()


def _apart_possible(api: Any) -> bool:
    """The child can read what `api` would: a real HfApi (not a stand-in with a list of its own)."""
    try:
        from huggingface_hub import HfApi
    except ImportError:  # pragma: no cover (a dependency)
        return False
    return (isinstance(api, HfApi) and isinstance(getattr(api, "endpoint", None), str)
            and getattr(type(api), "list_scheduled_jobs", None) is HfApi.list_scheduled_jobs)


def read_schedules_apart(api: Any, namespace: str, held: Mapping[str, Any],
                         cancelled: Callable[[], bool] = lambda: False) -> list[Any] | None:
    """The namespace's schedules as `KeptSchedule`s, read by a child process: `held` (schedule id
    -> the `KeptSchedule` the console holds) gives back its own object for each schedule that
    reads the same. None when the child cannot answer, or `cancelled()` said stop (the child is
    stopped then)."""
    if cancelled() or not _apart_possible(api):
        return None
    token = getattr(api, "token", None)
    request = {
        "endpoint": api.endpoint,
        "token": token if isinstance(token, (str, bool)) else None,
        "namespace": namespace,
        "headers": dict(getattr(api, "headers", None) or {}),
        "timeout": getattr(getattr(api, "policy", None), "timeout", None),
        "held": {i: getattr(k, "digest", "") for i, k in held.items() if getattr(k, "digest", "")},
    }
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", CHILD_MODULE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return None
    out = b""
    try:
        try:  # all of it before the child answers anything: it reads to the end first
            assert child.stdin is not None
            child.stdin.write(json.dumps(request).encode())
            child.stdin.close()
            child.stdin = None  # closed: communicate() only reads
        except OSError:  # the child is gone
            return None
        del request
        deadline = time.monotonic() + CHILD_SECONDS
        while True:
            try:
                out, _ = child.communicate(timeout=_POLL_SECONDS)
                break
            except subprocess.TimeoutExpired:
                if cancelled() or time.monotonic() > deadline:
                    return None
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    if child.returncode != 0 or not out:
        return None
    try:
        answer = pickle.loads(out)  # noqa: S301 (our own child, over a pipe)
    except Exception:
        return None
    del out
    if not (isinstance(answer, tuple) and answer and answer[0] == "ok"):
        return None
    entries = answer[1]
    try:
        return [held[e] if isinstance(e, str) else e for e in entries]
    except KeyError:  # an id the console no longer holds (cannot happen with one caller)
        return None


def _read(request: dict[str, Any]) -> list[Any]:
    from huggingface_hub import HfApi

    from console.jobspec import keep_schedule

    api = HfApi(endpoint=request["endpoint"], token=request.get("token"), headers=request.get("headers") or None)
    held: dict[str, str] = request.get("held", {})
    scheduled = api.list_scheduled_jobs(namespace=request["namespace"], timeout=request.get("timeout") or 20.0)
    scheduled.reverse()
    entries: list[Any] = []
    while scheduled:
        kept = keep_schedule(scheduled.pop())
        kept.digest = digest_of(kept)
        entries.append(kept.id if held.get(kept.id) == kept.digest else kept)
    return entries


def main() -> int:
    """The child: one request on standard input, one pickled answer on standard output."""
    try:
        request = json.loads(sys.stdin.buffer.read())
        answer: tuple[Any, ...] = ("ok", _read(request))
    except Exception as exc:  # the console reads in its own process then, and shows the error
        answer = ("error", f"{type(exc).__name__}: {exc}")
    sys.stdout.buffer.write(pickle.dumps(answer, protocol=5))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
