"""Job ids as people type them: the full id, or the short one the console shows (its last 8).

:func:`resolve_job_id` is the one way a command turns what it was given into the full id of a job:

- it must look like a job id: letters and digits only (at most 64). Anything else (`../x`, a
  slash, a space, `?`) is refused with :class:`JobIdError` before any request, so it never becomes
  part of a URL;
- a full id (24 hex digits, as HF and the embedded server make them) is used as it is, with no
  listing;
- anything shorter is matched against the namespace's jobs (one `list_jobs`; on the hub backend
  that is the configured namespace): the one job whose id starts or ends with it (case-insensitive)
  is the answer; several are a one-line error naming them (full ids), none a one-line error
  naming the id and the namespace.

Standard library only at import time; `api` is the backend's `HfApi`.
"""

from __future__ import annotations

import re
from typing import Any

FULL_ID = re.compile(r"[0-9a-f]{24}")
"""A full job id as HF and the embedded server make them: 24 hex digits."""
_SHAPE = re.compile(r"[A-Za-z0-9]{1,64}")
_LISTED = 5
"""Candidates an ambiguous id lists by name (the rest are counted)."""


class JobIdError(ValueError):
    """What was given is not a job id, names no job, or names several; one line, ready to show."""


def _shown(text: str) -> str:
    return repr(text if len(text) <= 64 else text[:63] + "…")


def check_job_id(text: object) -> str:
    """`text` as a job id (or the start or end of one), stripped; JobIdError unless it is
    letters and digits only."""
    value = text.strip() if isinstance(text, str) else ""
    if not value:
        raise JobIdError("job id: empty; give the job's id (the full id, or its last 8 characters as "
                         "the console shows it)")
    if not _SHAPE.fullmatch(value):
        raise JobIdError(f"job id {_shown(value)} is not a job id: letters and digits only (the full "
                         "id, or its first or last characters as the console shows them); nothing was sent")
    return value


def resolve_job_id(api: Any, text: object, *, namespace: str | None = None) -> str:
    """The full id of the job `text` names: a full id as it is, else the one job of `namespace`
    whose id starts or ends with `text`. JobIdError (one line) for a malformed id, no match, or
    several; an error of `list_jobs` itself passes through."""
    value = check_job_id(text)
    if FULL_ID.fullmatch(value):
        return value
    wanted = value.lower()
    matches: list[str] = []
    for job in api.list_jobs(namespace=namespace):
        job_id = str(job.id)
        low = job_id.lower()
        if low == wanted:
            return job_id
        if (low.startswith(wanted) or low.endswith(wanted)) and job_id not in matches:
            matches.append(job_id)
    where = f" in namespace {namespace!r}" if namespace else ""
    if not matches:
        raise JobIdError(f"no job {_shown(value)}{where}: no job id starts or ends with it")
    if len(matches) > 1:
        named = ", ".join(sorted(matches)[:_LISTED])
        more = f" and {len(matches) - _LISTED} more" if len(matches) > _LISTED else ""
        raise JobIdError(f"job id {_shown(value)} is ambiguous{where}: {len(matches)} jobs match: "
                         f"{named}{more}; give more characters")
    return matches[0]
