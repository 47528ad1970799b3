"""On call: what a jobs console must tell the engineer who carries the pager.

- :mod:`~console.oncall.forecast`: a running job's burn and timeout forecast
  (:func:`forecast_job`): cost so far, cost at its timeout, ETA from the Trackio step rate, and
  by how much it will overrun its timeout;
- :mod:`~console.oncall.stall`: stalled-but-billing jobs (:class:`StallDetector`);
- :mod:`~console.oncall.why`: why a finished job failed, short enough for a column
  (:func:`failure_reason`);
- :mod:`~console.oncall.notify`: events sent once each, to the terminal (bell, OSC 9 / 777) and
  webhooks (Slack, Discord, JSON), never blocking (:class:`Notifier`);
- :mod:`~console.oncall.watcher`: one pass of every detector and the notifications
  (:class:`Watcher`), what `console watch` loops on;
- :mod:`~console.oncall.incident`: the incident bundle, one Markdown file per job
  (:func:`write_incident`);
- :mod:`~console.oncall.bulk`: bulk cancel / suspend / resume / trigger by filter, planned with
  its money and applied after a typed count (:func:`plan_bulk`, :func:`apply_bulk`);
- :mod:`~console.oncall.reschedule`: $/month before -> after of a schedule change
  (:func:`reschedule_cost`);
- :mod:`~console.oncall.store`: what survives a restart (sent events, activity marks), SQLite in
  the data dir; :mod:`~console.oncall.escapes`: the terminal escapes.

Headless, below the UI: no Textual, no console.ui, no console.server and no console.backend (the
caller passes the `HfApi`). Importing this package loads no trackio and no network client of its
own; the calls that read block, so the app runs them in thread workers.
"""

from __future__ import annotations

from console.oncall.bulk import (
    ACTIONS,
    BulkItem,
    BulkPlan,
    BulkRefused,
    BulkResult,
    apply_bulk,
    check_confirmation,
    plan_bulk,
)
from console.oncall.forecast import JobForecast, forecast_job, job_timeout_seconds
from console.oncall.incident import clipboard_escape, incidents_dir, write_incident
from console.oncall.notify import Event, Notifier
from console.oncall.reschedule import RescheduleCost, reschedule_cost
from console.oncall.stall import StallDetector, StallStatus
from console.oncall.store import OnCallStore, OnCallStoreError
from console.oncall.watcher import Watcher, WatchReport
from console.oncall.why import FailureReason, failure_reason, why_failed

__all__ = [
    "ACTIONS",
    "BulkItem",
    "BulkPlan",
    "BulkRefused",
    "BulkResult",
    "Event",
    "FailureReason",
    "JobForecast",
    "Notifier",
    "OnCallStore",
    "OnCallStoreError",
    "RescheduleCost",
    "StallDetector",
    "StallStatus",
    "WatchReport",
    "Watcher",
    "apply_bulk",
    "check_confirmation",
    "clipboard_escape",
    "failure_reason",
    "forecast_job",
    "incidents_dir",
    "job_timeout_seconds",
    "plan_bulk",
    "reschedule_cost",
    "why_failed",
    "write_incident",
]
