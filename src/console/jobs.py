"""The jobs view model: one plain row per job, the filter language, log-text hygiene.

Headless so the UI stays thin and the rules are tested without Textual:

- :func:`job_row` turns a ``JobInfo`` into a :class:`JobRow` (tenant, kind, stage, flavor, started,
  running time, cost so far at the flavor's per-minute price).
- :func:`parse_filter` / :meth:`JobFilter.matches`: ``/`` filters like ``tenant:acme stage:running
  label:env=prod loss`` (bare words match anywhere in the row's text, case-insensitive).
- :func:`clean_log_line`: a log line as safe plain text — escape sequences (CSI, OSC, DCS...) and
  other control characters removed, tabs expanded. Markup is never interpreted by the widgets
  the UI uses, so ``[bold red]x[/]`` stays literal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from typing import Any

from console.inputs import format_duration
from console.prices import PriceBook, shipped_price_book
from console.stages import ACTIVE_STAGES, CANCELED, COMPLETED, ERROR, RUNNING, SCHEDULING

STAGE_ORDER = {RUNNING: 0, SCHEDULING: 1, ERROR: 2, CANCELED: 3, COMPLETED: 4}

# ESC [ ... final byte | ESC ] ... BEL/ST | ESC P/X/^/_ ... ST | two-byte ESC sequences
_ESCAPES = (
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b[@-Z\\-_]"
    r"|\x9b[0-?]*[ -/]*[@-~]"
    # the 8-bit forms of OSC (U+009D) and DCS / SOS / PM / APC, payload and all
    r"|\x9d[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|[\x90\x98\x9e\x9f][^\x1b\x9c]*(?:\x1b\\|\x9c)?"
)
_CONTROLS = r"[\x00-\x08\x0b-\x1f\x7f-\x9f]"
# Bidirectional controls (LRE RLE PDF LRO RLO, LRI RLI FSI PDI, LRM RLM ALM): a terminal that
# honours them would show a job's text reversed ("exe.txt" as "txt.exe") and move table borders.
# Invisible characters (zero-width space, non-joiner, joiner, word joiner and the invisible
# operators, the byte-order mark / zero-width no-break space, the Mongolian vowel separator): they
# make two different texts look the same ("acme" and "ac\u200bme", a hidden marker in a line that
# matches a search) and are there without a trace. Each is shown as U+FFFD, one visible cell, like
# a byte that is not UTF-8.
_BIDI = ("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c"
         "\u200b-\u200d\u2060-\u2064\ufeff\u180e]")


@cache
def _cleaners() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The three patterns above, compiled when the first line is cleaned (not on the first frame's path)."""
    return re.compile(_ESCAPES), re.compile(_CONTROLS), re.compile(_BIDI)


def clean_log_line(text: str) -> str:
    """Plain text for display: no escape sequences, no control characters, tabs expanded; bidi
    controls and invisible characters shown as U+FFFD."""
    if "\r" in text:
        # a progress bar redraws with \r: what a terminal would show is the last segment
        parts = [p for p in text.split("\r") if p]
        text = parts[-1] if parts else ""
    escapes, controls, bidi = _cleaners()
    text = escapes.sub("", text)
    text = controls.sub("", text)
    text = bidi.sub("\ufffd", text)
    return text.expandtabs(4)


def log_time(stamp: str | None) -> datetime | None:
    """A log line's time as the Jobs API stamps it (ISO, UTC when it names no zone); None when it
    has none or it does not parse."""
    if not stamp:
        return None
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00") if stamp.endswith("Z") else stamp)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def timed_lines(entries: Iterable[tuple[str | None, str]], *, since: datetime | None = None,
                limit: int | None = None) -> list[str]:
    """Log lines (`fetch_job_log_entries`' (timestamp, text)) as `2026-12-04 09:30:12 text`, plain
    text, only those stamped at or after `since`, the last `limit` of them."""
    out: list[str] = []
    for stamp, text in entries:
        when = log_time(stamp)
        if since is not None and (when is None or when < since):
            continue
        clock = when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if when else "-" * 19
        out.append(f"{clock} {clean_log_line(text)}")
    return out[-limit:] if limit else out


@dataclass(frozen=True, slots=True)
class JobRow:
    """One job as the jobs pane shows it."""

    id: str
    tenant: str
    kind: str
    stage: str
    flavor: str
    created_at: datetime | None
    started_at: datetime | None
    running_seconds: float | None
    cost_usd: float | None
    labels: dict[str, str] = field(default_factory=dict)
    message: str | None = None
    ssh_url: str | None = None
    scheduled_job_id: str | None = None
    owner: str | None = None

    @property
    def active(self) -> bool:
        return self.stage in ACTIVE_STAGES

    def waiting_seconds(self, now: datetime) -> float | None:
        """How long the job has waited in SCHEDULING: since it was created (a queued job has not
        started); None when it is not waiting or the API gave no creation time."""
        if self.stage != SCHEDULING or self.created_at is None:
            return None
        return max(0.0, (now - self.created_at).total_seconds())

    def text(self) -> str:
        labels = " ".join(f"{k}={v}" for k, v in self.labels.items())
        return " ".join(
            str(x)
            for x in (
                self.id,
                self.tenant,
                self.kind,
                self.stage,
                self.flavor,
                labels,
                self.message or "",
            )
        ).lower()


def _running_seconds(info: Any, now: datetime) -> float | None:
    """How long the job ran (so far), from what the Jobs API said; None when it did not say: never
    started, or finished without durations or a finish time (HF's legacy answers). A finished job
    is never measured "until now"."""
    durations = getattr(info, "durations", None)
    if durations is not None and durations.running_secs is not None:
        if info.status.stage == RUNNING and info.started_at is not None:
            # the server computed it at fetch time; keep counting between refreshes
            return max(float(durations.running_secs), (now - info.started_at).total_seconds())
        return float(durations.running_secs)
    if info.started_at is None:
        return None
    if info.finished_at is None and info.status.stage not in ACTIVE_STAGES:
        return None
    end = info.finished_at or now
    return max(0.0, (end - info.started_at).total_seconds())


def job_row(info: Any, *, now: datetime | None = None, prices: PriceBook | None = None) -> JobRow:
    from console import jobspec  # the spec and the cost model: not on the first frame's path
    from console.costs import job_cost

    now = now or datetime.now(UTC)
    prices = prices or shipped_price_book()
    labels = jobspec.labels_held(info)  # the row shares the record's labels: 10,000 rows, one copy
    running = _running_seconds(info, now)
    flavor = str(info.flavor or "")
    cost = None
    if running is not None and flavor in prices:
        cost = job_cost(running, flavor, prices, timeout_s=jobspec.run_limit_seconds(info),
                        exposed_ports=jobspec.exposed_ports_of(info))
    initiator = getattr(info, "initiator", None)
    scheduled = (
        initiator.id if initiator is not None and initiator.type == "scheduled-job" else None
    )
    return JobRow(
        id=info.id,
        tenant=labels.get("tenant", "-"),
        kind=labels.get("kind", "-"),
        stage=info.status.stage,
        flavor=flavor,
        created_at=info.created_at,
        started_at=info.started_at,
        running_seconds=running,
        cost_usd=cost,
        labels=labels,
        message=info.status.message,
        ssh_url=info.status.ssh_url,
        scheduled_job_id=scheduled,
        owner=info.owner.name if getattr(info, "owner", None) else None,
    )


@dataclass(frozen=True, slots=True)
class FlavorQueue:
    """The jobs waiting in SCHEDULING on one flavor: how many, and since when."""

    flavor: str
    waiting: int
    since: datetime
    """When the longest-waiting of them was created."""
    longest_s: float
    """How long that one has waited."""

    def line(self, now: datetime) -> str:
        """`2 on h200x8 since 03:14 (12h 5m)`."""
        return f"{self.waiting} on {self.flavor or '-'} since {format_clock(self.since, now)} " \
               f"({format_duration(self.longest_s)})"

    def to_dict(self) -> dict[str, Any]:
        return {"flavor": self.flavor, "waiting": self.waiting, "since": self.since.isoformat(),
                "longest_s": round(self.longest_s, 1)}


def scheduling_queue(rows: Iterable[JobRow], now: datetime) -> list[FlavorQueue]:
    """The SCHEDULING jobs per flavor, the longest wait first (the queue depth of the fleet)."""
    by_flavor: dict[str, list[JobRow]] = {}
    for row in rows:
        if row.waiting_seconds(now) is not None:
            by_flavor.setdefault(row.flavor, []).append(row)
    queues = []
    for flavor, waiting in by_flavor.items():
        oldest = min(waiting, key=lambda r: r.created_at or now)
        queues.append(FlavorQueue(flavor, len(waiting), oldest.created_at or now,
                                  oldest.waiting_seconds(now) or 0.0))
    return sorted(queues, key=lambda q: (-q.longest_s, q.flavor))


def queue_line(queues: Sequence[FlavorQueue], now: datetime) -> str:
    """`3 waiting: 2 on h200x8 since 03:14 (12h 5m), 1 on t4-small since 15:02 (4m)`; "" when none."""
    if not queues:
        return ""
    total = sum(q.waiting for q in queues)
    return f"{total} waiting: " + ", ".join(q.line(now) for q in queues)


def queue_tag(queues: Sequence[FlavorQueue]) -> str:
    """The queue in a few words for a status line: `3 WAIT h200x8 12h` (how many wait, and the
    flavor that has waited longest, for how long); "" when none."""
    if not queues:
        return ""
    total = sum(q.waiting for q in queues)
    return f"{total} WAIT {queues[0].flavor or '-'} {format_duration(queues[0].longest_s)}"


def sort_key(row: JobRow) -> tuple:
    """Running first, then queued, then finished jobs; newest first within each."""
    created = row.created_at.timestamp() if row.created_at else 0.0
    group = {RUNNING: 0, SCHEDULING: 1}.get(row.stage, 2)
    return (group, -created)


def format_age(when: datetime | None, now: datetime) -> str:
    if when is None:
        return "-"
    seconds = (now - when).total_seconds()
    if seconds < 0:
        return "in " + format_duration(-seconds)
    return format_duration(seconds) + " ago"


def format_clock(when: datetime | None, now: datetime) -> str:
    """HH:MM today, else 'Mon 03' / 'Dec 02' (UTC, like the API)."""
    if when is None:
        return "-"
    when = when.astimezone(UTC)
    if when.date() == now.astimezone(UTC).date():
        return when.strftime("%H:%M")
    if abs((now - when).days) < 7:
        return when.strftime("%a %H:%M")
    return when.strftime("%b %d")


def format_month(usd: float | None, suspended: bool = False) -> str:
    """A schedule's $/month as a cell: a suspended schedule adds "$0" (`console.money`)."""
    return "$0" if suspended and not usd else format_cost(usd)


def format_cost(usd: float | None) -> str:
    if usd is None:
        return "-"
    if usd < 0.01:
        return f"${usd:.3f}"
    if usd < 100:
        return f"${usd:.2f}"
    return f"${usd:,.0f}"


# ---------------------------------------------------------------------------------------------
# Filter


@dataclass(frozen=True)
class JobFilter:
    tenant: str | None = None
    stages: tuple[str, ...] = ()
    labels: tuple[tuple[str, str | None], ...] = ()
    words: tuple[str, ...] = ()
    text: str = ""

    @property
    def empty(self) -> bool:
        return not (self.tenant or self.stages or self.labels or self.words)

    def matches(self, row: JobRow) -> bool:
        if self.tenant and self.tenant.lower() not in row.tenant.lower():
            return False
        if self.stages and not any(row.stage.lower().startswith(s) for s in self.stages):
            return False
        for key, value in self.labels:
            if key not in row.labels:
                return False
            if value is not None and row.labels[key] != value:
                return False
        text = row.text()
        return all(w in text for w in self.words)


FILTER_KEYS = ("tenant", "t", "stage", "s", "label", "l")
"""The keys a filter term may start with (`tenant:acme`); any other term is a word."""


def unknown_filter_keys(text: str) -> list[str]:
    """The `key:` of each term that looks like a key but is none (`tenat:acme` -> `tenat`): such a
    term is searched as a word, which is rarely what was meant."""
    unknown = []
    for term in text.split():
        key, sep, value = term.partition(":")
        known = key.lower() in FILTER_KEYS or value.startswith("/")  # a URL is a word
        if sep and value and key.isalpha() and not known and key not in unknown:
            unknown.append(key)
    return unknown


JOB_STAGES = ("scheduling", "running", "completed", "canceled", "error", "deleted")
"""The stages a job's `stage:` term names (any prefix of one: `run`, `err`)."""
SCHEDULE_STAGES = ("scheduled", "suspended")
"""The stages of a scheduled job, as the bulk actions match schedules (`stage:suspended`)."""


def unknown_stages(text: str, stages: tuple[str, ...] = JOB_STAGES) -> list[str]:
    """Each `stage:` value of the filter that is no prefix of any of `stages` (it matches nothing)."""
    bad: list[str] = []
    for value in parse_filter(text).stages:
        if not any(stage.startswith(value) for stage in stages) and value not in bad:
            bad.append(value)
    return bad


def filter_problem(text: str, stages: tuple[str, ...] = JOB_STAGES) -> str | None:
    """The one line saying what in a filter cannot be what was meant (None: nothing): a `key:`
    that is no key (searched as a word), or a `stage:` value that names no stage, with the valid ones."""
    unknown = unknown_filter_keys(text)
    if unknown:
        return (f"unknown filter key {', '.join(k + ':' for k in unknown)} searched as words; "
                "keys: tenant: stage: label:")
    bad = unknown_stages(text, stages)
    if bad:
        return f"stage {', '.join(repr(v) for v in bad)} is none of: {' '.join(stages)}"
    return None


def parse_filter(text: str) -> JobFilter:
    """`tenant:acme stage:run,err label:env=prod word`: all terms must match."""
    tenant = None
    stages: list[str] = []
    labels: list[tuple[str, str | None]] = []
    words: list[str] = []
    for term in text.split():
        key, sep, value = term.partition(":")
        key = key.lower()
        if sep and key in ("tenant", "t") and value:
            tenant = value
        elif sep and key in ("stage", "s") and value:
            stages.extend(v.lower() for v in value.split(",") if v)
        elif sep and key in ("label", "l") and value:
            k, eq, v = value.partition("=")
            labels.append((k, v if eq else None))
        else:
            words.append(term.lower())
    return JobFilter(tenant, tuple(stages), tuple(labels), tuple(words), text)


# ---------------------------------------------------------------------------------------------
# The first frame

FIRST_FRAME_JOBS = 100
"""The first frame shows the newest this many jobs (plus every active one) before the rest."""


def first_frame_jobs(api: Any, namespace: str | None, limit: int = FIRST_FRAME_JOBS) -> list[Any]:
    """The newest `limit` jobs and every active one (compacted): what the first frame shows."""
    import itertools

    from console import jobspec

    head = [jobspec.compact_job(j) for j in itertools.islice(api.list_jobs(namespace=namespace), limit)]
    seen = {j.id for j in head}
    head += [
        jobspec.compact_job(j)
        for j in api.list_jobs(namespace=namespace, status=list(ACTIVE_STAGES))
        if j.id not in seen
    ]
    return head


class Prefetch:
    """`first_frame_jobs` read in a thread while the rest of the app is still loading.

    The console reads the first page of jobs while it imports and lays out its screens, so the
    first frame does not wait for both one after the other. `result()` gives the jobs and the time
    they were read, or raises what the read raised.
    """

    def __init__(self, api: Any, namespace: str | None, clock: Any = None) -> None:
        import threading

        self._clock = clock or (lambda: datetime.now(UTC))
        self._jobs: list[Any] | None = None
        self._error: BaseException | None = None
        self.at: datetime | None = None
        self._thread = threading.Thread(
            target=self._run, args=(api, namespace), name="console-first-frame", daemon=True
        )
        self._thread.start()

    def _run(self, api: Any, namespace: str | None) -> None:
        at = self._clock()
        try:
            self._jobs = first_frame_jobs(api, namespace)
            self.at = at
        except BaseException as exc:  # handed to whoever asks for the result
            self._error = exc

    def result(self, timeout: float | None = None) -> tuple[list[Any], datetime]:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("the first page of jobs is still being read")
        if self._error is not None:
            raise self._error
        assert self._jobs is not None and self.at is not None
        return self._jobs, self.at
