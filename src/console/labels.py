"""HF's rule for a job label, in one place: the embedded server's request schema
(`server/jobs/schema.py`, from which its checks and OpenAPI description derive) and the console's
own (tenant ids, envs, run names) all read it.

huggingface_hub 2.4 (`update_job_labels`): "Both keys and values must be max 100 characters and
contain only alphanumeric characters, dashes, and underscores". The console keeps its own names
shorter (:data:`NAME_MAX`) so that a run name built from a tenant id stays a label too.

Standard library only: the server imports it.
"""

from __future__ import annotations

import re

LABEL_CHARS = "A-Za-z0-9_-"
"""The characters of a label key or value (a regex character class's inside)."""
LABEL_MAX = 100
LABEL_RULE = f"only alphanumeric characters, dashes and underscores, at most {LABEL_MAX} characters"
KEY_PATTERN = rf"^[{LABEL_CHARS}]{{1,{LABEL_MAX}}}$"
VALUE_PATTERN = rf"^[{LABEL_CHARS}]{{0,{LABEL_MAX}}}$"
"""The same, as JSON Schema patterns (the OpenAPI description)."""
# `\Z`, not `$`: `$` also matches before a trailing newline, and "A\n" is no label
KEY_RE = re.compile(rf"[{LABEL_CHARS}]{{1,{LABEL_MAX}}}\Z")
VALUE_RE = re.compile(rf"[{LABEL_CHARS}]{{0,{LABEL_MAX}}}\Z")

NAME_MAX = 63
"""The longest tenant id, env or run name the console gives a job."""
NAME_RE = re.compile(rf"[{LABEL_CHARS}]{{1,{NAME_MAX}}}\Z")
NOT_LABEL_CHARS = re.compile(rf"[^{LABEL_CHARS}]")


def is_name(text: object) -> bool:
    """Whether `text` can be a tenant id, an env or a run name: a label value HF accepts, as it is,
    of at most NAME_MAX characters."""
    return isinstance(text, str) and NAME_RE.match(text) is not None
