"""What a finished training run's log says: its verdict, its last loss and where its adapter went.

The training script ends its log with a ``VERDICT:`` line and prints ``saved adapter=`` (``saved
model=`` for a full fine-tune or an embedding model: `adapter` below is where the weights went) and
``progress ... loss=`` lines on the way; :func:`parse_outcome` reads them from a log tail.

Standard library only: no Textual, no console.ui or console.server, no network, no training stack.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_LOSS_RE = re.compile(r"\blast_loss=([-+0-9.eEnaif]+)")
_PROGRESS_LOSS_RE = re.compile(r"^progress .*\bloss=([-+0-9.eEnaif]+)")
_ADAPTER_RE = re.compile(r"\b(?:adapter|model)=(\S+)")


@dataclass
class RunOutcome:
    """What a finished run's log tail says: the verdict, the last loss, where the adapter went."""

    passed: bool | None = None
    last_loss: float | None = None
    adapter: str | None = None
    loss_trend: str = ""
    """The run's Trackio loss curve as block characters ("" when Trackio has none)."""
    fail_reason: str | None = None
    """What a `VERDICT: FAIL <code>: <reason>` line says after FAIL (None for a pass or no verdict)."""


def parse_outcome(lines: Iterable[str]) -> RunOutcome:
    """Read `VERDICT:` / `saved adapter=` / `progress ... loss=` lines (the last ones win)."""
    out = RunOutcome()
    for line in lines:
        text = line.strip()
        if text.startswith("VERDICT:"):
            out.passed = text.startswith("VERDICT: PASS")
            verdict = text[len("VERDICT:"):].strip()
            out.fail_reason = None
            if verdict.startswith("FAIL"):
                out.fail_reason = verdict[len("FAIL"):].strip() or "FAIL"
            m = _LOSS_RE.search(text)
            if m:
                out.last_loss = _float(m.group(1))
            m = _ADAPTER_RE.search(text)
            if m:
                out.adapter = m.group(1)
        elif text.startswith(("saved adapter=", "saved model=")):
            out.adapter = text.split("=", 1)[1].strip() or out.adapter
        else:
            m = _PROGRESS_LOSS_RE.match(text)
            if m:
                out.last_loss = _float(m.group(1))
    return out


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None
