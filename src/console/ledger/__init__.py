"""The cost ledger: what every finished job cost, kept in SQLite so it is counted once and never lost.

HF bills a job per minute while it is Starting/Running, at its flavor's price, and a job killed on
its timeout still costs those minutes (reference §1, §3). The ledger turns each job the console
sees into one row once the job is terminal, and answers the cost pane's questions from those rows.

- :mod:`~console.ledger.entries`: a :class:`LedgerEntry`, and how a job becomes one
  (:func:`entry_from_job`, :func:`running_seconds_of`, :func:`timed_out`);
- :mod:`~console.ledger.store`: the SQLite file (:class:`Ledger`), idempotent and crash-safe; a
  schedule's runs failed in a row (:meth:`Ledger.failure_streaks`);
- :mod:`~console.ledger.calibration`: completed training runs as calibration observations;
- :mod:`~console.ledger.forecast`: the month's spend and the projection to month end
  (:func:`summarize`);
- :mod:`~console.ledger.from_backend`: live prices and one read of a backend (:func:`record_from_api`);
- :mod:`~console.ledger.fleet_rollup`: the scheduled fleet's monthly cost, for the what-if.

Headless: no Textual, no console.ui or console.server, no trackio, no training stack, no network
of its own (callers pass the JobInfo objects or an ``HfApi``).
"""

from __future__ import annotations

from console.ledger.calibration import estimate_calibration, observations_from
from console.ledger.entries import (
    NO_TENANT,
    TERMINAL_STAGES,
    LedgerEntry,
    entry_from_job,
    is_loopback,
    is_terminal,
    running_seconds_of,
    timed_out,
)
from console.ledger.fleet_rollup import FleetCosts, fleet_costs
from console.ledger.forecast import (
    LedgerSummary,
    ObservedCosts,
    ScheduleForecast,
    TenantSpend,
    forecast_schedule,
    month_of,
    summarize,
)
from console.ledger.from_backend import Snapshot, ledger_summary, live_prices, record_from_api, summary_for_config
from console.ledger.store import (
    LEDGER_FILENAME,
    SCHEMA_VERSION,
    FailureStreak,
    Ledger,
    LedgerError,
    RecordResult,
    default_path,
)

__all__ = [
    "LEDGER_FILENAME",
    "NO_TENANT",
    "SCHEMA_VERSION",
    "TERMINAL_STAGES",
    "FailureStreak",
    "FleetCosts",
    "Ledger",
    "LedgerEntry",
    "LedgerError",
    "LedgerSummary",
    "ObservedCosts",
    "RecordResult",
    "ScheduleForecast",
    "Snapshot",
    "TenantSpend",
    "default_path",
    "entry_from_job",
    "estimate_calibration",
    "fleet_costs",
    "forecast_schedule",
    "is_loopback",
    "is_terminal",
    "ledger_summary",
    "live_prices",
    "month_of",
    "observations_from",
    "record_from_api",
    "running_seconds_of",
    "summarize",
    "summary_for_config",
    "timed_out",
]
