"""The tenant fleet: the fleet file, the fleet as HF Jobs says it is, and the plan between the two.

None of it touches the UI or the network by itself:

- :mod:`~console.fleet.file`: :func:`load_fleet_file` reads a fleet TOML and reports every problem
  at once in a :class:`FleetFileError`;
- :mod:`~console.fleet.outcome`: :func:`parse_outcome` reads a finished run's verdict, last loss
  and adapter from its log;
- :mod:`~console.fleet.derive`: :func:`derive_fleet` rebuilds the fleet from scheduled jobs and job
  labels alone, one :class:`TenantRow` per tenant;
- :mod:`~console.fleet.apply`: :func:`plan_apply` compares a fleet file with the scheduled jobs and
  returns the create / change / remove actions; :func:`apply_plan` carries them out through
  ``HfApi``. Applying the same file twice is a no-op.

Headless: no Textual, no console.ui or console.server, no training stack.
"""

from __future__ import annotations

from console.fleet.apply import (
    Action,
    ApplyPlan,
    PlanRefused,
    ReplaceIncomplete,
    apply_plan,
    desired_request,
    desired_submission,
    normalize_or_same,
    plan_apply,
)
from console.fleet.derive import TenantRow, cadence_seconds, derive_fleet
from console.fleet.file import FleetFile, FleetFileError, TenantSpec, load_fleet_file, parse_fleet
from console.fleet.outcome import RunOutcome, parse_outcome
from console.stages import TERMINAL_STAGES

__all__ = [
    "TERMINAL_STAGES",
    "Action",
    "ApplyPlan",
    "PlanRefused",
    "FleetFile",
    "FleetFileError",
    "ReplaceIncomplete",
    "RunOutcome",
    "TenantRow",
    "TenantSpec",
    "apply_plan",
    "cadence_seconds",
    "derive_fleet",
    "desired_request",
    "desired_submission",
    "load_fleet_file",
    "normalize_or_same",
    "parse_fleet",
    "parse_outcome",
    "plan_apply",
]
