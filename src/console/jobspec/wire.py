"""The wire format both halves of `console.jobspec` share: how a number becomes a label value
and back, the recipe arguments the console passes (in their order), the run's name, and where a
run's datasets cache is mounted. :mod:`console.jobspec.build` writes it, :mod:`console.jobspec.readback`
reads it back; `tests/fleet/test_jobspec.py` round-trips them.

No UI, no network.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from console import labels

SCRIPT_ENV = "CONSOLE_SCRIPT_B64"
"""Where jobs of older consoles carried their scripts (a tar.gz in base64); still dropped from
what the console keeps and shows of a job, never written."""


# Arguments the console passes, in the order it passes them; read back by `readback.read_request`.
ARG_FIELDS: tuple[tuple[str, str], ...] = (
    ("--base-model", "base_model"),
    ("--dataset", "dataset"),
    ("--epochs", "epochs"),
    ("--max-steps", "max_steps"),
    ("--learning-rate", "learning_rate"),
    ("--lora-r", "lora_r"),
    ("--lora-alpha", "lora_alpha"),
    ("--hub-model-id", "hub_model_id"),
    ("--promote", "promote"),
    ("--resume-from", "resume_from"),
    ("--run-name", "run_name"),
    ("--trackio-project", "trackio_project"),
    ("--trackio-space-id", "trackio_space_id"),
)


def label_value(value: Any) -> str:
    """A label value HF accepts (`console.labels`), at most `labels.NAME_MAX` characters (other
    characters, '.' included, -> '-')."""
    text = labels.NOT_LABEL_CHARS.sub("-", str(value)).strip("-")
    return text[:labels.NAME_MAX]


def format_number(value: float) -> str:
    """3 -> '3', 0.5 -> '0.5': how numbers read in arguments."""
    return f"{value:g}"


def number_label(value: float) -> str:
    """A number as a label value HF accepts: 3 -> '3', 0.5 -> '0p5', 1.5 -> '1p5' (no '.')."""
    return label_value(format_number(value).replace(".", "p"))


def label_number(text: Any) -> float | None:
    """A number label read back, in either encoding ('0p5', or '0.5' as older consoles wrote it);
    None when absent or not a number."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return float(text.replace("p", "."))
    except ValueError:
        return None


def retry_words(labels: dict[str, str]) -> str | None:
    """`retry 1 of 2` for a retry's labels, None for a first attempt: what the fleet, the jobs
    table and the ledger say of it."""
    attempt = label_number(labels.get("attempt"))
    if not labels.get("retry_of") or not attempt:
        return None
    most = label_number(labels.get("retry"))
    return f"retry {int(attempt)} of {int(most)}" if most else f"retry {int(attempt)}"


def trackio_run_name(job_id: str, labels: dict[str, str] | None) -> str | None:
    """The Trackio run a console job logs to: its `run` label, or for a run of a scheduled job
    (labelled `run=<tenant>-scheduled`) `<tenant>-<job id>`, the name the script gives itself."""
    labels = labels or {}
    run, tenant = labels.get("run"), labels.get("tenant")
    if run and tenant and run == label_value(f"{tenant}-scheduled"):
        return f"{tenant}-{job_id}"
    return run or None


def default_run_name(tenant: str, kind: str = "sft", now: datetime | None = None) -> str:
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    return label_value(f"{tenant}-{kind}-{stamp}")


DATASETS_CACHE_MOUNT = "/data"
"""Where a run's datasets cache bucket is mounted (read-write)."""
DATASETS_CACHE_DIR = f"{DATASETS_CACHE_MOUNT}/datasets"
"""`HF_DATASETS_CACHE` of a run with a datasets cache. Training reference: the datasets library
caches inside the container, "destroyed after the job. Each Jobs run re-downloads the dataset";
a /data volume with HF_DATASETS_CACHE=/data/datasets keeps the cache across jobs."""
