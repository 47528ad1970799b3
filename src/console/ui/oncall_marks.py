"""What the on-call watcher says of each job, as the jobs table marks it (`JobsTable.show_oncall`).

Made by the on-call passes (`console.ui.watch`), after the first frame: the table's first frame
draws no mark, so this module is not on its path.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from console.inputs import format_coarse, format_duration


@dataclass(frozen=True)
class OnCallMark:
    """What the on-call watcher says of a running job: a few characters for the Stage cell (fits
    at 80 columns) and its whole line for the Message column."""

    stage: str
    """`TMOUT+12m`: will hit its timeout 12 minutes before its last step; `STALL 14m`: stalled
    (no log line, no step, about-zero CPU) for 14 minutes, still billing; `WAIT 12h`: in
    SCHEDULING for 12 hours, past `notify.scheduling_after_s`."""
    style: str
    line: str


def oncall_marks(forecasts: Iterable[Any], stalls: Iterable[Any],
                 stuck: dict[str, float] | None = None, flavors: dict[str, str] | None = None
                 ) -> dict[str, OnCallMark]:
    """job id -> its mark, from an on-call pass (`console.oncall.WatchReport`): a stall first, then
    a forecast timeout; every other running job's forecast line goes to its Message cell only.
    `stuck`: the SCHEDULING jobs past `notify.scheduling_after_s` (job id -> seconds waited), with
    their `flavors`."""
    marks: dict[str, OnCallMark] = {}
    for fc in forecasts:
        if fc.will_time_out:
            marks[fc.job_id] = OnCallMark(f"TMOUT+{format_coarse(fc.overrun_s)}", "bold yellow", fc.line())
        else:
            marks[fc.job_id] = OnCallMark("", "", fc.line())
    for status in stalls:
        if status.stalled:
            marks[status.job_id] = OnCallMark(f"STALL {format_coarse(status.idle_s)}", "bold red", status.line())
    for job_id, waited in (stuck or {}).items():
        flavor = (flavors or {}).get(job_id) or "-"
        marks[job_id] = OnCallMark(f"WAIT {format_coarse(waited)}", "bold yellow",
                                   f"stuck in SCHEDULING on {flavor} for {format_duration(waited)}")
    return marks
