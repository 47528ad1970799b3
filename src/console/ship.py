"""Ship a Hub job's scripts the way `hf jobs uv run` does: through the jobs-artifacts bucket.

A Hub :class:`~console.jobspec.Submission` names the files it needs from this machine (its recipe
and the `jobkit` package, `Submission.ships`) and a content-named folder for them
(`Submission.bundle_id`). :func:`ship` uploads them once per folder to the
``{namespace}/jobs-artifacts`` bucket (private, created if missing; the upload goes through Xet,
as every bucket upload of huggingface_hub does) and returns the submission with the read-only
bucket volume that mounts that folder at `jobspec.TRAINING_MOUNT`. Equal files make one folder,
so a fleet of a thousand tenants uploads its recipes once, and a job's spec carries a volume of a
few hundred bytes instead of the scripts themselves.

Talks to the backend only through the `HfApi` it is given; no UI.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from console.jobspec import ARTIFACTS_BUCKET, TRAINING_MOUNT, Submission

_shipped: set[tuple[str, str, str]] = set()
"""(endpoint, bucket, folder) uploaded by this process: each is uploaded once."""
_lock = threading.Lock()


def bucket_of(namespace: str) -> str:
    return f"{namespace}/{ARTIFACTS_BUCKET}"


def ship(api: Any, submission: Submission, namespace: str) -> Submission:
    """The submission ready to run: its files in the namespace's jobs-artifacts bucket and their
    folder mounted read-only at `TRAINING_MOUNT`. A submission that ships nothing (the local
    backend runs the recipe from this machine's `training/`) comes back as it is."""
    if not submission.ships:
        return submission
    bucket = bucket_of(namespace)
    key = (str(getattr(api, "endpoint", "")), bucket, submission.bundle_id)
    with _lock:
        if key not in _shipped:
            from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

            # no progress bars: on a terminal the app draws on, they would scribble over it
            quiet = are_progress_bars_disabled()
            disable_progress_bars()
            try:
                api.create_bucket(bucket, exist_ok=True, private=True)
                api.batch_bucket_files(
                    bucket, add=[(Path(path), f"{submission.bundle_id}/{name}") for name, path in submission.ships]
                )
            finally:
                if not quiet:
                    enable_progress_bars()
            _shipped.add(key)
    volume = {
        "type": "bucket",
        "source": bucket,
        "mount_path": TRAINING_MOUNT,
        "path": submission.bundle_id,
        "read_only": True,
    }
    return replace(submission, volumes=(volume,))
