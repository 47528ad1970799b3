"""Why each failed job failed, on screen: the jobs table's ERROR rows and the fleet row of a
tenant whose last run failed (`console.oncall.why`).

After each refresh the app asks for the reasons it lacks: the failed jobs in the jobs table
(newest first) and the fleet's failed last runs, a few per refresh. A thread worker reads each
one's log tail (for the `VERDICT: FAIL` line or the exception) and judges it with the job's
status (its timeout, its exit message); a tail that cannot be read still leaves the status's
reason. A run whose dataset revision differs from the last passing run's says so after its reason
("dataset changed since the last PASS (commit, title, time)", from the runs' manifests).
A finished job's reason never changes: each job is read once.

What is missing is kept as jobs change, not rescanned: the refresher says which tenants' fleet
rows changed and which failed rows a refresh brought (`Refresher.news`), and only those are looked
at; the jobs table is looked at whole only when it was reloaded, filtered or paged. A quiet
refresh looks at nothing (`checked`, the count of rows looked at, does not move).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.css.query import NoMatches
from textual.message import Message

from console.stages import ERROR

if TYPE_CHECKING:
    from console.ui.base import ConsoleBase

READS_PER_REFRESH = 6
"""Log tails read per refresh (a history of failures is read a few at a time)."""
TAIL_LINES = 60
TAG_WIDTH = 10
"""The Stage and Last run cells' width: the reason's word or two fits it."""


@dataclass
class ReasonsRead(Message):
    """Why some failed jobs failed: job id -> (a word or two, the whole reason)."""

    reasons: dict[str, tuple[str, str]]
    tried: list[str]


class FailureReasons:
    """The app's reasons for its failed jobs (see the module docstring)."""

    def __init__(self, app: ConsoleBase) -> None:
        self.app = app
        self.known: dict[str, tuple[str, str]] = {}
        """Failed job id -> (tag, text)."""
        self._tried: set[str] = set()
        self._reading = False
        self._fleet_missing: dict[str, str] = {}
        """Failed last run's job id -> its tenant, for the fleet rows whose reason is missing."""
        self._fleet_job: dict[str, str] = {}
        """tenant -> the failed last run in `_fleet_missing`."""
        self._table_missing: dict[str, float] = {}
        """ERROR rows of the jobs table whose reason is missing: job id -> when it was created."""
        self._table_seen: tuple[Any, int] | None = None
        """The table's filter and size when it was last looked at whole."""
        self.checked = 0
        """Diagnostics: fleet and table rows looked at for a missing reason (grows with what changed)."""
        self._listings: Any = None
        """Which adapter repos exist (`console.oncall.livereads.OwnerListings`), for the reads'
        worker: a run whose repo does not exist has no record to read."""

    def _missing(self, job_id: str) -> bool:
        return job_id not in self.known and job_id not in self._tried

    def _fleet_row(self, tenant: str, row: Any) -> None:
        old = self._fleet_job.pop(tenant, None)
        if old is not None:
            self._fleet_missing.pop(old, None)
        if row is not None and row.failed and row.last_job_id and self._missing(row.last_job_id):
            self._fleet_job[tenant] = row.last_job_id
            self._fleet_missing[row.last_job_id] = tenant

    def _take_news(self) -> None:
        """Bring what is missing up to date with what changed since the last look."""
        news, failed_rows, reloaded = self.app.refresher.news.take()
        fleet = self.app.refresher.fleet_rows
        tenants: Any = news
        if news is None:  # the whole fleet is new: in its order
            self._fleet_missing, self._fleet_job = {}, {}
            tenants = list(fleet)
        for tenant in tenants:
            self._fleet_row(tenant, fleet.get(tenant))
        self.checked += len(tenants)
        try:
            table = self.app.jobs_table
        except NoMatches:
            return
        seen = self._table_seen
        if reloaded or seen is None or seen[0] is not table.job_filter or seen[1] != table.max_rows:
            self._table_seen = (table.job_filter, table.max_rows)
            rows = table.rows_by_id.values()
            self._table_missing = {}
        else:
            rows = [r for r in failed_rows.values() if r.id in table.rows_by_id]
        for r in rows:
            if r.stage == ERROR and self._missing(r.id):
                self._table_missing[r.id] = r.created_at.timestamp() if r.created_at else 0.0
        self.checked += len(rows)

    def wanted(self) -> list[str]:
        """The failed jobs on screen whose reason is not known yet, the fleet's first."""
        self._take_news()
        table = sorted(self._table_missing, key=self._table_missing.__getitem__, reverse=True)
        return [i for i in dict.fromkeys([*self._fleet_missing, *table]) if self._missing(i)]

    def want(self) -> None:
        """Read the next few missing reasons in a thread worker (none while one is reading)."""
        if self._reading or not self.app.refresher.connected:
            return
        picked = self.wanted()[:READS_PER_REFRESH]
        infos = {job_id: self.app.refresher.job_info(job_id) for job_id in picked}
        if not infos:
            return
        self._reading = True
        self.app.run_worker(lambda: self._read(infos), thread=True, group="reasons", exit_on_error=False,
                            description="read why the failed jobs failed")

    def _read(self, infos: dict[str, Any]) -> None:
        from console.oncall import why_failed
        from console.oncall.livereads import OwnerListings

        session = self.app.session
        if self._listings is None or self._listings.api is not session.api:
            self._listings = OwnerListings(session.api)
        absent = self._listings.absent
        found: dict[str, tuple[str, str]] = {}
        try:
            for job_id, info in infos.items():
                if info is None:
                    continue
                try:
                    lines = session.api.fetch_job_logs(job_id=job_id, namespace=session.namespace,
                                                       follow=False, tail=TAIL_LINES)
                    tail = list(lines)
                except Exception:  # the status alone still says something (timeout, exit code)
                    tail = []
                reason = why_failed(info, tail)
                if reason is not None:
                    text = _with_dataset_change(session.api, info, reason.text, absent)
                    found[job_id] = (reason.tag(TAG_WIDTH), text)
        finally:
            if not self.app.post_message(ReasonsRead(found, list(infos))):
                self._reading = False

    def apply(self, message: ReasonsRead) -> None:
        self._reading = False
        self._tried.update(message.tried)
        self.known.update(message.reasons)
        for job_id in [*message.tried, *message.reasons]:
            self._table_missing.pop(job_id, None)
            tenant = self._fleet_missing.pop(job_id, None)
            if tenant is not None and self._fleet_job.get(tenant) == job_id:
                del self._fleet_job[tenant]
        self.show(message.reasons)

    def show(self, reasons: dict[str, tuple[str, str]] | None = None) -> None:
        """Give the tables these reasons, just read (by default every one known: a table mounted
        later gets them when it mounts), and the log pane's header the reason of the failed job on
        screen."""
        if not self.known:
            return
        if reasons is None:
            reasons = self.known
        job_id = self.app.job_view.job_id
        row = self.app.refresher.job_rows.get(job_id or "")
        if job_id in self.known and (row is None or row.stage == ERROR):
            try:
                self.app.log_pane.set_reason(self.known[job_id][1])
            except NoMatches:
                pass
        try:
            self.app.jobs_table.show_reasons(reasons)
        except NoMatches:
            pass
        try:
            self.app.fleet_table.show_reasons({k: tag for k, (tag, _text) in reasons.items()})
        except NoMatches:
            pass


def _with_dataset_change(api: Any, info: Any, text: str, absent: Callable[[str], bool] | None = None) -> str:
    """The reason, with "dataset changed since the last PASS (commit, title, time)" when the run
    trained on another revision of its dataset than the last passing run (`console.run_record`;
    not read from a repo `absent` says does not exist)."""
    from console.run_record import record_for_job

    record = record_for_job(api, info, absent)
    change = record.dataset_change() if record is not None else None
    return f"{text}; {change}" if change else text
