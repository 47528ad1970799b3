"""What the ledger teaches the cost estimates: completed training runs as calibration observations.

The what-if explorer and the month-end forecasts scale the reference heuristic by these runs:
runs on HF hardware when there are any, else the embedded server's (CPU) runs.

Imports the entries and console.costs only: no SQLite, no Textual, no console.ui or
console.server, no network, no training stack.
"""

from __future__ import annotations

from collections.abc import Iterable

from console.costs import Calibration, Observation, calibrate
from console.jobspec import RECIPE_BATCH_SIZE
from console.ledger.entries import LedgerEntry, label_float
from console.stages import COMPLETED
from console.vram import DEFAULT_BATCH_SIZE


def observations_from(entries: Iterable[LedgerEntry], *, local: bool | None = None) -> list[Observation]:
    """Completed training runs with the labels the heuristic needs, as calibration observations.

    Timed-out, failed and cancelled runs are left out: their running time says nothing about how
    long the recipe takes. `local=False` keeps only runs on HF hardware, `True` only the embedded
    server's (CPU) runs, None both.
    """
    out = []
    for e in entries:
        if local is not None and e.local != local:
            continue
        if e.stage != COMPLETED or e.kind not in ("sft", "") or not e.known or e.running_seconds <= 0:
            continue
        if e.model_b is None or not e.examples or e.epochs is None:
            continue
        out.append(
            Observation(
                flavor=e.flavor,
                model_b=e.model_b,
                examples=e.examples,
                epochs=e.epochs,
                running_seconds=e.running_seconds,
                unsloth=bool(e.unsloth),
                max_steps=steps_of(e.labels),
                batch_size=batch_of(e.kind),
            )
        )
    return out


def steps_of(labels: dict[str, str] | None) -> int | None:
    """The optimizer steps a run was capped at (its `max_steps` label), or None: its run is then
    compared with the heuristic per step (max_steps x batch examples), not per epoch."""
    value = label_float(labels or {}, "max_steps")
    return int(value) if value and value >= 1 and value == int(value) else None


def batch_of(kind: str | None) -> int:
    """Examples per optimizer step of a kind's recipe (`jobspec.RECIPE_BATCH_SIZE`)."""
    return RECIPE_BATCH_SIZE.get(kind or "sft", DEFAULT_BATCH_SIZE)


def estimate_calibration(entries: Iterable[LedgerEntry]) -> tuple[Calibration, str]:
    """The calibration for cost estimates and what it rests on: "hf" | "local" | "none".

    Runs on HF hardware when there are any; otherwise the embedded server's runs (real, but timed
    on this machine's CPU, so they calibrate the local fleet, not HF's GPUs).
    """
    entries = list(entries)
    hf = calibrate(observations_from(entries, local=False))
    if hf.runs:
        return hf, "hf"
    local = calibrate(observations_from(entries, local=True))
    return local, "local" if local.runs else "none"
