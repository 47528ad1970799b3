"""A one-line readout of the selected job's live metrics: cpu, memory, gpu where given.

Fed by the app's metrics worker (`HfApi.fetch_job_metrics`); shows `-` until a sample arrives
and clears when the job changes.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static


def _bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.0f}{unit}" if unit in ("B", "KB", "MB") else f"{n:.1f}{unit}"
        n /= 1024
    return f"{n:.1f}TB"


def describe_sample(sample: dict[str, Any] | None) -> str:
    if not sample:
        return "cpu - mem -"
    cpu = sample.get("cpu_usage_pct")
    mem = sample.get("memory_used_bytes")
    parts = [f"cpu {cpu:.0f}%" if isinstance(cpu, (int, float)) else "cpu -", f"mem {_bytes(mem)}"]
    gpus = sample.get("gpus") or {}
    if isinstance(gpus, dict) and gpus:
        utils = [g.get("utilization") for g in gpus.values() if isinstance(g, dict)]
        utils = [u for u in utils if isinstance(u, (int, float))]
        if utils:
            parts.append(f"gpu {sum(utils) / len(utils):.0f}%")
    return " ".join(parts)


class JobMetricsBar(Static):
    """`cpu 35% mem 210MB gpu 80%` for the selected job."""

    DEFAULT_CSS = """
    JobMetricsBar { width: auto; height: 1; padding: 0 1; color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(describe_sample(None), id=id)
        self.job_id: str | None = None
        self.sample: dict[str, Any] | None = None

    def show(self, job_id: str | None, sample: dict[str, Any] | None) -> None:
        self.job_id = job_id
        self.sample = sample
        self.update(Text(describe_sample(sample), no_wrap=True))
