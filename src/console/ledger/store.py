"""The cost ledger: what every finished job cost, kept in SQLite so it is counted once and never lost.

HF bills a job per minute while it is Starting/Running, at its flavor's price, and a job killed on
its timeout still costs those minutes (reference §1, §3). The ledger turns each job the console
sees into one row once the job is terminal: running seconds x the price per hour in effect when it
was recorded. Rows are keyed by job id and inserted with ``INSERT OR IGNORE``, so a refresh run
twice, two consoles refreshing the same file, or a console restarted after ``kill -9`` never count a
job twice; each refresh is one committed transaction in WAL mode, so nothing committed is lost.

Running time comes from what the Jobs API returns, in this order:

1. ``JobInfo.durations.running_secs`` — computed by the server (HF and the embedded server both
   send ``durations.runningSecs``);
2. ``finished_at - started_at`` — the timestamps ``JobInfo`` carries when durations are absent;
3. zero — a job that never left SCHEDULING (cancelled in the queue) was never billed.

The summary answers the pane's questions: spend by tenant and by month, month to date, wasted
spend (timeouts), the plan floor, the projection to month end from the scheduled jobs, and whether
that projection is over the configured budget. Calibration observations for the what-if explorer
come from the ledger's completed training runs.

Headless: no Textual, no trackio, no network (callers pass the JobInfo objects or an ``HfApi``).
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from console import paths
from console.costs import (
    Calibration,
    CostInputError,
    Observation,
    RunSpec,
    calibrate,
    count_firings,
    estimate_run,
    normalize_cron,
)
from console.prices import PLANS, PriceBook, plan_floor_usd, shipped_price_book
from console.strings import shared

LEDGER_FILENAME = "ledger.sqlite"
SCHEMA_VERSION = 1
TERMINAL_STAGES = frozenset({"COMPLETED", "ERROR", "CANCELED", "DELETED"})
NO_TENANT = "(none)"
# How a timeout reads in a job's status message: the embedded server says "Job timed out after 2s
# (timeoutSeconds)"; HF's wording is not documented, so any "timed out" / "timeout" in an ERROR's
# message counts.
_TIMEOUT_RE = re.compile(r"time[ds]?[\s_-]?out", re.IGNORECASE)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    job_id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    kind TEXT NOT NULL,
    env TEXT NOT NULL,
    flavor TEXT NOT NULL,
    price_per_hour REAL NOT NULL,
    price_source TEXT NOT NULL,
    running_seconds REAL NOT NULL,
    running_source TEXT NOT NULL,
    cost_usd REAL NOT NULL,
    stage TEXT NOT NULL,
    message TEXT,
    wasted INTEGER NOT NULL,
    created_at TEXT,
    started_at TEXT,
    finished_at TEXT,
    month TEXT NOT NULL,
    model_b REAL,
    examples INTEGER,
    epochs REAL,
    unsloth INTEGER,
    run_name TEXT,
    scheduled_job_id TEXT,
    labels TEXT NOT NULL,
    endpoint TEXT NOT NULL DEFAULT '',
    recorded_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_month ON entries (month);
CREATE INDEX IF NOT EXISTS entries_tenant ON entries (tenant);
"""

_COLUMNS = (
    "job_id", "tenant", "kind", "env", "flavor", "price_per_hour", "price_source",
    "running_seconds", "running_source", "cost_usd", "stage", "message", "wasted", "created_at",
    "started_at", "finished_at", "month", "model_b", "examples", "epochs", "unsloth", "run_name",
    "scheduled_job_id", "labels", "endpoint", "recorded_at",
)


class LedgerError(Exception):
    """The ledger file cannot be used; the message names it and says why."""


# ---------------------------------------------------------------------------------------------
# Entries


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One finished job, costed once."""

    job_id: str
    tenant: str
    kind: str
    env: str
    flavor: str
    price_per_hour: float
    """$/hr of the flavor when the entry was recorded (live prices when the backend gave them)."""
    price_source: str
    running_seconds: float
    """Billed seconds (Starting/Running); see the module docstring for where they come from."""
    running_source: str
    """durations | timestamps | never-started"""
    cost_usd: float
    stage: str
    message: str | None
    wasted: bool
    """Killed on its timeout: the minutes were paid for and the unsaved progress lost."""
    created_at: str | None
    started_at: str | None
    finished_at: str | None
    month: str
    """YYYY-MM (UTC) of the billed time: when the job started, else when it was created."""
    model_b: float | None = None
    examples: int | None = None
    epochs: float | None = None
    unsloth: bool | None = None
    run_name: str | None = None
    scheduled_job_id: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    endpoint: str = ""
    """The Jobs API the job ran on (huggingface.co, or the embedded server on loopback)."""
    recorded_at: str = ""

    @property
    def local(self) -> bool:
        """Ran on the embedded server (this machine's CPU): real time, but not HF hardware's."""
        return is_loopback(self.endpoint)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def _row(self) -> tuple[Any, ...]:
        d = self.to_dict()
        d["wasted"] = int(self.wasted)
        d["unsloth"] = None if self.unsloth is None else int(self.unsloth)
        d["labels"] = json.dumps(self.labels, sort_keys=True)
        return tuple(d[c] for c in _COLUMNS)

    @classmethod
    def _from_row(cls, row: Sequence[Any]) -> LedgerEntry:
        d = dict(zip(_COLUMNS, row, strict=True))
        d["wasted"] = bool(d["wasted"])
        d["unsloth"] = None if d["unsloth"] is None else bool(d["unsloth"])
        try:
            labels = json.loads(d["labels"] or "{}")
        except ValueError:
            labels = {}
        d["labels"] = (
            {shared(k): shared(v) for k, v in labels.items()} if isinstance(labels, dict) else {}
        )
        for name in _SHARED_COLUMNS:
            d[name] = shared(d[name])
        return cls(**d)


_SHARED_COLUMNS = ("tenant", "kind", "env", "flavor", "price_source", "running_source", "stage",
                   "month", "message")
"""Columns whose values repeat across entries: each distinct value is kept once (a fleet's ledger
holds tens of thousands of entries, and the pane keeps them all)."""


def _iso(dt: datetime | None) -> str | None:
    if dt is None:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _stage(job: Any) -> str:
    status = getattr(job, "status", None)
    stage = getattr(status, "stage", None)
    return str(getattr(stage, "value", stage) or "").upper()


def _flavor(job: Any) -> str:
    flavor = getattr(job, "flavor", None)
    return str(getattr(flavor, "value", flavor) or "cpu-basic")


def is_loopback(endpoint: str) -> bool:
    from urllib.parse import urlsplit

    host = (urlsplit(endpoint).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


def is_terminal(job: Any) -> bool:
    return _stage(job) in TERMINAL_STAGES


def timed_out(job: Any) -> bool:
    """Whether the job was killed on its timeout (stage ERROR, a message saying so)."""
    message = getattr(getattr(job, "status", None), "message", None) or ""
    return _stage(job) == "ERROR" and bool(_TIMEOUT_RE.search(message))


def running_seconds_of(job: Any, now: datetime | None = None) -> tuple[float, str]:
    """Billed seconds of a job and where they came from (durations | timestamps | never-started).

    For a job still running, the timestamps fallback measures up to `now`.
    """
    durations = getattr(job, "durations", None)
    secs = getattr(durations, "running_secs", None)
    if isinstance(secs, (int, float)) and not isinstance(secs, bool) and math.isfinite(secs):
        return max(0.0, float(secs)), "durations"
    started = getattr(job, "started_at", None)
    if started is not None:
        end = getattr(job, "finished_at", None) or now or datetime.now(UTC)
        if started.tzinfo is None:
            started = started.replace(tzinfo=UTC)
        if end.tzinfo is None:
            end = end.replace(tzinfo=UTC)
        return max(0.0, (end - started).total_seconds()), "timestamps"
    return 0.0, "never-started"


def _label_float(labels: dict[str, str], key: str) -> float | None:
    try:
        value = float(labels[key])
    except (KeyError, TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _label_bool(labels: dict[str, str], key: str) -> bool | None:
    value = str(labels.get(key, "")).strip().lower()
    if value in ("1", "true", "yes"):
        return True
    if value in ("0", "false", "no"):
        return False
    return None


def entry_from_job(
    job: Any, prices: PriceBook | None = None, *, now: datetime | None = None
) -> LedgerEntry | None:
    """The ledger entry of a terminal job (None for a job still scheduling or running)."""
    if not is_terminal(job):
        return None
    prices = prices or shipped_price_book()
    labels = {str(k): str(v) for k, v in (getattr(job, "labels", None) or {}).items()}
    flavor = _flavor(job)
    if flavor in prices:
        price = prices.price_per_hour(flavor)
        price_source = prices.source
    else:
        price, price_source = 0.0, "unknown flavor"
    seconds, source = running_seconds_of(job, now)
    started = getattr(job, "started_at", None)
    created = getattr(job, "created_at", None)
    billed_at = started or created or now or datetime.now(UTC)
    if billed_at.tzinfo is None:
        billed_at = billed_at.replace(tzinfo=UTC)
    examples = _label_float(labels, "examples")
    initiator = getattr(job, "initiator", None)
    scheduled = getattr(initiator, "id", None) if getattr(initiator, "type", "") == "scheduled-job" else None
    message = getattr(getattr(job, "status", None), "message", None)
    return LedgerEntry(
        job_id=str(job.id),
        tenant=labels.get("tenant") or NO_TENANT,
        kind=labels.get("kind") or "",
        env=labels.get("env") or "",
        flavor=flavor,
        price_per_hour=price,
        price_source=price_source,
        running_seconds=seconds,
        running_source=source,
        cost_usd=seconds / 3600.0 * price,
        stage=_stage(job),
        message=message,
        wasted=timed_out(job),
        created_at=_iso(created),
        started_at=_iso(started),
        finished_at=_iso(getattr(job, "finished_at", None)),
        month=billed_at.astimezone(UTC).strftime("%Y-%m"),
        model_b=_label_float(labels, "model_b"),
        examples=None if examples is None else int(examples),
        epochs=_label_float(labels, "epochs"),
        unsloth=_label_bool(labels, "unsloth"),
        run_name=labels.get("run") or None,
        scheduled_job_id=scheduled,
        labels=labels,
        endpoint=str(getattr(job, "endpoint", "") or ""),
        recorded_at=_iso(now or datetime.now(UTC)) or "",
    )


# ---------------------------------------------------------------------------------------------
# The store


@dataclass(frozen=True)
class RefreshResult:
    added: int
    """New entries written by this refresh."""
    terminal: int
    """Terminal jobs seen (new or already in the ledger)."""
    active: list[Any]
    """Jobs still scheduling or running (not costed yet; their minutes so far are in flight)."""
    price_source: str


def default_path() -> Path:
    return paths.data_dir() / LEDGER_FILENAME


class Ledger:
    """The SQLite ledger file. Safe to use from several threads and processes at once.

    Each call opens its own short-lived connection, so a Ledger can be shared by the UI thread and
    thread workers; every write is one committed transaction.
    """

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path).expanduser() if path is not None else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._cache: tuple[int, list[LedgerEntry]] | None = None
        self._calibration: tuple[int, tuple[Calibration, str]] | None = None
        with self._connect() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise LedgerError(
                    f"{self.path}: written by a newer console (schema {version}, this one reads "
                    f"{SCHEMA_VERSION}); upgrade the console"
                )
            conn.executescript(_SCHEMA)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            conn = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        except sqlite3.Error as exc:
            raise LedgerError(f"{self.path}: cannot be opened: {exc}") from None
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA busy_timeout = 10000")
            yield conn
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"{self.path}: {exc}") from None
        finally:
            conn.close()

    # -- writing

    def record(self, entries: Iterable[LedgerEntry]) -> int:
        """Insert entries not yet in the ledger (by job id); returns how many were new."""
        rows = [e._row() for e in entries]
        if not rows:
            return 0
        placeholders = ", ".join("?" for _ in _COLUMNS)
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                before = conn.total_changes
                conn.executemany(
                    f"INSERT OR IGNORE INTO entries ({', '.join(_COLUMNS)}) VALUES ({placeholders})",
                    rows,
                )
                added = conn.total_changes - before
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return added

    def refresh(
        self, jobs: Iterable[Any], prices: PriceBook | None = None, *, now: datetime | None = None
    ) -> RefreshResult:
        """Cost every terminal job not yet in the ledger; idempotent."""
        prices = prices or shipped_price_book()
        now = now or datetime.now(UTC)
        known = self.job_ids()
        new: list[LedgerEntry] = []
        active: list[Any] = []
        terminal = 0
        for job in jobs:
            if not is_terminal(job):
                active.append(job)
                continue
            terminal += 1
            if str(job.id) in known:
                continue
            entry = entry_from_job(job, prices, now=now)
            if entry is not None:
                new.append(entry)
                known.add(entry.job_id)
        return RefreshResult(self.record(new), terminal, active, prices.describe())

    # -- reading

    def job_ids(self) -> set[str]:
        with self._connect() as conn:
            return {row[0] for row in conn.execute("SELECT job_id FROM entries")}

    def __len__(self) -> int:
        with self._connect() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])

    def __contains__(self, job_id: object) -> bool:
        with self._connect() as conn:
            row = conn.execute("SELECT 1 FROM entries WHERE job_id = ?", (str(job_id),)).fetchone()
        return row is not None

    def get(self, job_id: str) -> LedgerEntry | None:
        with self._connect() as conn:
            row = conn.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM entries WHERE job_id = ?", (job_id,)
            ).fetchone()
        return None if row is None else LedgerEntry._from_row(row)

    def entries(self, *, month: str | None = None, tenant: str | None = None) -> list[LedgerEntry]:
        """Entries, oldest first (by when they started, then by id).

        Entries are only ever added, so the unfiltered list is cached by the row count: a pane
        refreshing every few seconds re-reads the file only when a job was recorded.
        """
        if month is None and tenant is None:
            count = len(self)
            cached = self._cache
            if cached is not None and cached[0] == count:
                return list(cached[1])
            entries = self._read_entries(None, None)
            self._cache = (len(entries), entries)
            self._calibration = None
            return list(entries)
        return self._read_entries(month, tenant)

    def estimate_calibration(self) -> tuple[Calibration, str]:
        """:func:`estimate_calibration` of all entries, cached until a new entry is recorded."""
        entries = self.entries()
        cached = self._calibration
        if cached is not None and cached[0] == len(entries):
            return cached[1]
        result = estimate_calibration(entries)
        self._calibration = (len(entries), result)
        return result

    def _read_entries(self, month: str | None, tenant: str | None) -> list[LedgerEntry]:
        where, params = [], []
        if month is not None:
            where.append("month = ?")
            params.append(month)
        if tenant is not None:
            where.append("tenant = ?")
            params.append(tenant)
        sql = f"SELECT {', '.join(_COLUMNS)} FROM entries"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY COALESCE(started_at, created_at, recorded_at), job_id"
        with self._connect() as conn:
            return [LedgerEntry._from_row(r) for r in conn.execute(sql, params)]

    # -- calibration

    def observations(self, *, local: bool | None = None) -> list[Observation]:
        return observations_from(self.entries(), local=local)

    def calibration(self, *, local: bool | None = None) -> Calibration:
        return calibrate(self.observations(local=local))


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
        if e.stage != "COMPLETED" or e.kind not in ("sft", "") or e.running_seconds <= 0:
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
            )
        )
    return out


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


# ---------------------------------------------------------------------------------------------
# Projection from the schedules


def month_of(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m")


def month_end(now: datetime) -> datetime:
    """The first instant of the next month (UTC)."""
    now = now.astimezone(UTC)
    if now.month == 12:
        return datetime(now.year + 1, 1, 1, tzinfo=UTC)
    return datetime(now.year, now.month + 1, 1, tzinfo=UTC)


def remaining_firings(cron: str, now: datetime, end: datetime | None = None) -> int:
    """How many times a cron fires from `now` (exclusive) to the end of the month (UTC)."""
    return count_firings(cron, now, end or month_end(now))


@dataclass(frozen=True)
class ScheduleForecast:
    """What one scheduled job will still cost this month."""

    scheduled_job_id: str
    tenant: str
    kind: str
    flavor: str
    schedule: str
    remaining_runs: int
    per_run_usd: float
    remaining_usd: float
    basis: str
    """calibrated (heuristic x factor from N runs) | heuristic | observed (mean of past runs) |
    unknown (no labels to estimate from and no past runs)"""


def forecast_schedule(
    sj: Any,
    now: datetime,
    prices: PriceBook,
    *,
    calibration: Calibration | None = None,
    history: Sequence[LedgerEntry] = (),
) -> ScheduleForecast | None:
    """The month-end forecast of one `ScheduledJobInfo` (None when suspended or unreadable)."""
    if getattr(sj, "suspend", False):
        return None
    spec = getattr(sj, "job_spec", None)
    labels = {str(k): str(v) for k, v in (getattr(spec, "labels", None) or {}).items()}
    flavor = _flavor(spec)
    schedule = getattr(sj, "schedule", None) or ""
    try:
        runs = remaining_firings(schedule, now)
    except (CostInputError, ValueError, KeyError):
        return None
    tenant = labels.get("tenant") or NO_TENANT
    kind = labels.get("kind") or ""
    model_b, epochs = _label_float(labels, "model_b"), _label_float(labels, "epochs")
    examples = _label_float(labels, "examples")
    per_run, basis = 0.0, "unknown"
    if model_b and examples and epochs:
        factor = calibration.factor_for(flavor) if calibration and calibration.runs else 1.0
        try:
            est = estimate_run(
                RunSpec(model_b, int(examples), epochs, flavor, bool(_label_bool(labels, "unsloth"))),
                prices,
                calibration_factor=factor,
            )
            per_run = est.cost_usd
            basis = "calibrated" if factor != 1.0 else "heuristic"
        except CostInputError:
            pass
    if basis == "unknown":
        past = [
            e.cost_usd
            for e in history
            if e.scheduled_job_id == getattr(sj, "id", None)
            or (e.tenant == tenant and e.kind == kind and e.flavor == flavor)
        ]
        if past:
            per_run, basis = sum(past) / len(past), "observed"
    return ScheduleForecast(
        scheduled_job_id=str(getattr(sj, "id", "")),
        tenant=tenant,
        kind=kind,
        flavor=flavor,
        schedule=schedule,
        remaining_runs=runs,
        per_run_usd=per_run,
        remaining_usd=per_run * runs,
        basis=basis,
    )


# ---------------------------------------------------------------------------------------------
# Summary


@dataclass(frozen=True)
class TenantSpend:
    tenant: str
    runs: int
    month_usd: float
    total_usd: float
    wasted_usd: float


@dataclass(frozen=True)
class LedgerSummary:
    month: str
    entries: int
    month_to_date_usd: float
    """GPU/CPU time of this month's finished jobs."""
    in_flight_usd: float
    """Minutes already paid by jobs still running (not in the ledger until they end)."""
    by_tenant: list[TenantSpend]
    by_month: dict[str, float]
    wasted_usd: float
    """This month's spend on jobs killed on their timeout."""
    wasted_runs: int
    plan: str
    seats: int
    plan_floor_usd: float
    schedules: list[ScheduleForecast]
    scheduled_remaining_usd: float
    projection_usd: float
    """Month to date + in flight + the schedules' remaining firings + the plan floor."""
    budget_usd: float | None
    calibration_runs: int

    @property
    def over_budget(self) -> bool:
        return self.budget_usd is not None and self.projection_usd > self.budget_usd

    @property
    def budget_warning(self) -> str | None:
        if not self.over_budget:
            return None
        assert self.budget_usd is not None
        return (
            f"projected ${self.projection_usd:,.2f} for {self.month} exceeds the monthly budget "
            f"${self.budget_usd:,.2f} by ${self.projection_usd - self.budget_usd:,.2f}"
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["over_budget"] = self.over_budget
        d["budget_warning"] = self.budget_warning
        return d


def summarize(
    entries: Sequence[LedgerEntry],
    *,
    now: datetime | None = None,
    plan: str = "pro",
    seats: int = 1,
    budget_usd: float | None = None,
    scheduled_jobs: Iterable[Any] = (),
    active_jobs: Iterable[Any] = (),
    prices: PriceBook | None = None,
    calibration: Calibration | None = None,
) -> LedgerSummary:
    """The pane's numbers for the month containing `now`."""
    now = now or datetime.now(UTC)
    prices = prices or shipped_price_book()
    month = month_of(now)
    if calibration is None:
        calibration, _ = estimate_calibration(entries)
    tenants: dict[str, list[float]] = {}
    by_month: dict[str, float] = {}
    mtd = wasted = 0.0
    wasted_runs = 0
    for e in entries:
        by_month[e.month] = by_month.get(e.month, 0.0) + e.cost_usd
        t = tenants.setdefault(e.tenant, [0, 0.0, 0.0, 0.0])
        t[0] += 1
        t[2] += e.cost_usd
        if e.month == month:
            mtd += e.cost_usd
            t[1] += e.cost_usd
            if e.wasted:
                wasted += e.cost_usd
                wasted_runs += 1
                t[3] += e.cost_usd
    in_flight = 0.0
    for job in active_jobs:
        secs, _ = running_seconds_of(job, now)
        flavor = _flavor(job)
        if flavor in prices:
            in_flight += secs / 3600.0 * prices.price_per_hour(flavor)
    forecasts = [
        f
        for sj in scheduled_jobs
        if (f := forecast_schedule(sj, now, prices, calibration=calibration, history=entries))
        is not None
    ]
    remaining = sum(f.remaining_usd for f in forecasts)
    floor = plan_floor_usd(plan, seats) if plan in PLANS else 0.0
    return LedgerSummary(
        month=month,
        entries=len(entries),
        month_to_date_usd=mtd,
        in_flight_usd=in_flight,
        by_tenant=sorted(
            (TenantSpend(name, int(v[0]), v[1], v[2], v[3]) for name, v in tenants.items()),
            key=lambda t: (-t.month_usd, -t.total_usd, t.tenant),
        ),
        by_month=dict(sorted(by_month.items())),
        wasted_usd=wasted,
        wasted_runs=wasted_runs,
        plan=plan,
        seats=seats,
        plan_floor_usd=floor,
        schedules=sorted(forecasts, key=lambda f: (-f.remaining_usd, f.tenant)),
        scheduled_remaining_usd=remaining,
        projection_usd=mtd + in_flight + remaining + floor,
        budget_usd=budget_usd,
        calibration_runs=calibration.runs,
    )


# ---------------------------------------------------------------------------------------------
# Talking to the backend (an HfApi, pointed at huggingface.co or the embedded server)


def live_prices(api: Any) -> PriceBook:
    """Prices from the backend's `list_jobs_hardware`, else the shipped table."""
    from console.prices import price_book_from_hardware

    try:
        return price_book_from_hardware(api.list_jobs_hardware())
    except Exception:  # an older server, or no network: the shipped prices still cost the jobs
        return shipped_price_book()


@dataclass(frozen=True)
class Snapshot:
    """One read of the backend: what the ledger recorded and what the summary needs."""

    refresh: RefreshResult
    scheduled_jobs: list[Any]
    prices: PriceBook
    fetched_at: datetime
    seconds: float


def refresh_from_api(ledger: Ledger, api: Any, *, namespace: str | None = None) -> Snapshot:
    """List jobs and scheduled jobs, record every newly finished job, return what was read.

    Blocking (HTTP): call it from a thread worker in the UI.
    """
    t0 = time.monotonic()
    prices = live_prices(api)
    jobs = list(api.list_jobs(namespace=namespace))
    result = ledger.refresh(jobs, prices)
    try:
        scheduled = list(api.list_scheduled_jobs(namespace=namespace))
    except Exception:  # a projection without schedules is still a ledger
        scheduled = []
    return Snapshot(result, scheduled, prices, datetime.now(UTC), time.monotonic() - t0)


def summary_for_config(ledger: Ledger, cfg: Any, snapshot: Snapshot | None = None,
                       *, now: datetime | None = None) -> LedgerSummary:
    """The summary with the config's plan, seats and budget (and a snapshot's schedules)."""
    return summarize(
        ledger.entries(),
        now=now,
        plan=cfg.plan,
        seats=cfg.seats,
        budget_usd=cfg.monthly_budget_usd,
        scheduled_jobs=snapshot.scheduled_jobs if snapshot else (),
        active_jobs=snapshot.refresh.active if snapshot else (),
        prices=snapshot.prices if snapshot else None,
    )


# ---------------------------------------------------------------------------------------------
# The current fleet, for the what-if explorer's "current" column


@dataclass(frozen=True)
class FleetCosts:
    """What the scheduled fleet costs per month, schedule by schedule (tenants may differ)."""

    tenants: int
    schedules: int
    runs_per_month: float
    gpu_usd: float
    """Training runs per month x their heuristic cost, summed over the schedules."""
    gpu_calibrated_usd: float
    """The same with the ledger's calibration factors."""
    plan_floor_usd: float
    representative: Any
    """A one-recipe `costs.Scenario` close to the fleet (the what-if's starting point)."""

    @property
    def monthly_usd(self) -> float:
        return self.gpu_usd + self.plan_floor_usd

    @property
    def monthly_calibrated_usd(self) -> float:
        return self.gpu_calibrated_usd + self.plan_floor_usd


def _most_common(values: Sequence[Any], default: Any) -> Any:
    if not values:
        return default
    counts: dict[Any, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return max(counts, key=lambda v: (counts[v], -values.index(v)))


def _median(values: Sequence[float], default: float) -> float:
    if not values:
        return default
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def fleet_costs(
    scheduled_jobs: Iterable[Any],
    *,
    plan: str = "pro",
    seats: int = 1,
    default_flavor: str = "l4x1",
    prices: PriceBook | None = None,
    calibration: Calibration | None = None,
    timeout_buffer: float | None = None,
) -> FleetCosts:
    """The scheduled training fleet's monthly cost and a representative scenario for the what-if."""
    from console.costs import Scenario, runs_per_month

    prices = prices or shipped_price_book()
    tenants: set[str] = set()
    specs: list[RunSpec] = []
    cadences: list[str] = []
    rpm_total = gpu = gpu_cal = 0.0
    n = 0
    for sj in scheduled_jobs:
        if getattr(sj, "suspend", False):
            continue
        spec = getattr(sj, "job_spec", None)
        labels = {str(k): str(v) for k, v in (getattr(spec, "labels", None) or {}).items()}
        if labels.get("kind", "sft") != "sft":
            continue
        model_b, epochs = _label_float(labels, "model_b"), _label_float(labels, "epochs")
        examples = _label_float(labels, "examples")
        if not (model_b and examples and epochs):
            continue
        run = RunSpec(model_b, int(examples), epochs, _flavor(spec), bool(_label_bool(labels, "unsloth")))
        try:
            cadence = normalize_cron(getattr(sj, "schedule", "") or "")
            rpm = runs_per_month(cadence)
            base = estimate_run(run, prices).cost_usd
            factor = calibration.factor_for(run.flavor) if calibration and calibration.runs else 1.0
            cal = estimate_run(run, prices, calibration_factor=factor).cost_usd
        except CostInputError:
            continue
        n += 1
        tenants.add(labels.get("tenant") or NO_TENANT)
        specs.append(run)
        cadences.append(cadence)
        rpm_total += rpm
        gpu += rpm * base
        gpu_cal += rpm * cal
    floor = plan_floor_usd(plan, seats) if plan in PLANS else 0.0
    kwargs: dict[str, Any] = {}
    if timeout_buffer is not None:
        kwargs["timeout_buffer"] = timeout_buffer
    representative = Scenario(
        tenants=max(1, len(tenants)),
        cadence=_most_common(cadences, "weekly"),
        run=RunSpec(
            _median([s.model_b for s in specs], 3.0),
            int(_median([float(s.examples) for s in specs], 1000.0)),
            _median([s.epochs for s in specs], 3.0),
            _most_common([s.flavor for s in specs], default_flavor),
            _most_common([s.unsloth for s in specs], False),
        ),
        plan=plan if plan in PLANS else "pro",
        seats=seats,
        **kwargs,
    )
    return FleetCosts(len(tenants), n, rpm_total, gpu, gpu_cal, floor, representative)
