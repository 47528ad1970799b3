"""Why a finished job failed, in words that fit a narrow column.

The best evidence first: the timeout that killed it (its minutes billed, its unpushed work lost);
the training script's own `VERDICT: FAIL <code>: <reason>` line (`console.fleet.parse_outcome`);
the exception a Python traceback ended with; the exit message of the Jobs API (`exit 1`,
`SIGKILL`); a cancel. All of it is untrusted text, returned plain (no control characters).

Pure: the caller reads the job and its log tail. No Textual, no console.ui, console.server or
console.backend, no network.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from console.fleet.outcome import parse_outcome
from console.inputs import format_duration
from console.jobs import clean_log_line
from console.ledger.entries import timed_out
from console.oncall.escapes import plain
from console.oncall.forecast import job_timeout_seconds
from console.stages import ACTIVE_STAGES, CANCELED, COMPLETED

_EXCEPTION_RE = re.compile(
    r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning|Fault)|KeyboardInterrupt)(?::\s*(.*))?$"
)
_EXIT_RE = re.compile(r"exit(?:ed)?(?: with)?(?: code|status)?[:\s]+(-?\d+)", re.IGNORECASE)
_SIGNAL_RE = re.compile(r"signal\s+(SIG[A-Z0-9]+|\d+)", re.IGNORECASE)
_TIMEOUT_AFTER_RE = re.compile(r"after\s+([0-9hms ]+?)\s*(?:\(|$)")


@dataclass(frozen=True)
class FailureReason:
    """Why a job failed: `text` in full, `source` the evidence it comes from."""

    text: str
    source: str
    """timeout | verdict | exception | exit | canceled | stage"""

    def short(self, width: int = 32) -> str:
        """At most `width` characters (an ellipsis marks a cut)."""
        return _cut(self.text, width)

    def tag(self, width: int = 10) -> str:
        """The reason in a word or two, for a Stage cell at 80 columns: `TIMEOUT`, `FAIL oom`,
        `ZeroDivis…` (the exception's name), `exit 137`, `SIGKILL`, `canceled`."""
        if self.source == "timeout":
            return _cut("TIMEOUT", width)
        if self.source == "verdict":
            code = self.text.removeprefix("FAIL").strip().split(":", 1)[0].strip()
            code = code.split()[0] if code else "FAIL"
            return _cut(f"FAIL {code}" if len(code) + 5 <= width else code, width)
        if self.source == "exception":
            name, _, detail = self.text.partition(":")
            if "out of memory" in detail.lower() or name.strip() in ("OutOfMemoryError", "MemoryError"):
                return "OOM"
            name = name.strip()
            if len(name) > width:
                name = name.removesuffix("Error").removesuffix("Exception") or name
            return _cut(name, width)
        if self.source == "stage":
            return _cut(self.text.upper(), width)
        return _cut(self.text, width)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(1, width - 1)].rstrip() + "…"


def _exception(lines: Sequence[str]) -> str | None:
    """The last `SomeError: message` line of the tail, after a traceback when there is one."""
    cleaned = [clean_log_line(x).strip() for x in lines]
    start = max((i for i, x in enumerate(cleaned) if x.startswith("Traceback ")), default=-1)
    for line in reversed(cleaned[start + 1 :] if start >= 0 else cleaned):
        m = _EXCEPTION_RE.match(line)
        if m:
            name = m.group(1).rsplit(".", 1)[-1]
            return f"{name}: {m.group(2)}" if m.group(2) else name
    return None


def _exit(message: str) -> str | None:
    m = _SIGNAL_RE.search(message)
    if m:
        return m.group(1).upper()
    m = _EXIT_RE.search(message)
    if m:
        return f"exit {m.group(1)}"
    return None


def why_failed(job: Any, log_tail: Sequence[str] = ()) -> FailureReason | None:
    """Why a finished job (`JobInfo`) failed, from its status and its log tail; None when it did
    not (COMPLETED without a failed verdict, or still running)."""
    status = getattr(job, "status", None)
    stage = str(getattr(status, "stage", "") or "")
    message = plain(getattr(status, "message", None) or "", 300)
    outcome = parse_outcome(log_tail)
    if stage in ACTIVE_STAGES:
        return None
    if timed_out(job):
        timeout = job_timeout_seconds(job)
        m = _TIMEOUT_AFTER_RE.search(message)
        after = format_duration(timeout) if timeout else (m.group(1).strip() if m else "")
        head = f"timeout {after}" if after else "timeout"
        return FailureReason(f"{head}: killed, billed", "timeout")
    if outcome.fail_reason:
        return FailureReason(plain(f"FAIL {outcome.fail_reason}", 300), "verdict")
    if stage == COMPLETED:
        return None
    if stage == CANCELED:
        return FailureReason("canceled", "canceled")
    exception = _exception(log_tail)
    if exception:
        return FailureReason(plain(exception, 300), "exception")
    exited = _exit(message)
    if exited:
        return FailureReason(exited, "exit")
    if message:
        return FailureReason(message, "exit")
    return FailureReason(stage.lower() or "failed", "stage")


def failure_reason(job: Any, log_tail: Sequence[str] = (), width: int = 32) -> str | None:
    """`why_failed`'s text cut to `width` characters, or None when the job did not fail."""
    reason = why_failed(job, log_tail)
    return reason.short(width) if reason else None
