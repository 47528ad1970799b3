"""Each tenant's live adapter version, on screen: the fleet's Live column and the versions view.

The versions of a tenant's adapter repo are read by `console.adapters.list_versions` (the function
`console adapters` uses), in a thread worker (group "adapters"), and kept per repo. After each
refresh the app asks for what the fleet table shows and lacks: the tenants on screen (the fleet
tab's visible rows), a few repos per refresh, one read at a time. A repo is read again only when
a run of one of its tenants finished since (the fleet row's last run is a different finished job)
or after `LIVE_SECONDS`; so a quiet fleet costs no Hub call between those, whatever its size.

The versions view (`screens/versions.py`) reads its repo once more when it opens (what an engineer
promotes from must be current) and after a promote or roll back; every read lands here, so the
view and the fleet row show the same live version. Each read's Live cells that changed are kept in
the cache with when they were seen (`console.cache.past.record_live`): the fleet as it was (`J`)
reads which version was live then.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from textual.css.query import NoMatches
from textual.message import Message

from console.stages import TERMINAL_STAGES

if TYPE_CHECKING:
    from console.adapters import Versions
    from console.ui.base import ConsoleBase

LIVE_SECONDS = 300.0
"""A repo's versions are read again after this long even when no run of its tenant finished
(a tag moved by someone else, by `console adapters --promote` or `hf`)."""
READS_PER_REFRESH = 4
"""Repos read per refresh (a fleet on screen is read a few at a time)."""
TERMINAL = TERMINAL_STAGES
NO_LIVE = "-"
"""The Live cell of a tenant with no repo, no repo on the Hub yet, or no live tag."""
UNREADABLE = "?"
"""The Live cell of a repo that could not be read (the versions view says why)."""


@dataclass
class VersionsRead(Message):
    """What some repo reads found: repo -> its versions, or why it could not be read (`missing`:
    the repos that do not exist yet)."""

    versions: dict[str, Versions] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)
    marks: dict[str, str | None] = field(default_factory=dict)
    """tenant -> its finished last run when the read was asked for (what makes it stale again)."""
    background: bool = True
    """A read of the fleet's (one at a time), not one the versions view asked for."""


def _finished(row: Any) -> str | None:
    """The tenant's last run when it has finished (None while it runs, or before any run)."""
    return row.last_job_id if row is not None and row.last_stage in TERMINAL else None


def read_versions(api: Any, repos: list[str]) -> VersionsRead:
    """Read each repo's versions (in a worker): never raises; a repo that cannot be read is an error line."""
    from console.adapters import AdapterError, NoAdapterRepo, list_versions
    from console.jobs import clean_log_line

    out = VersionsRead()
    for repo in repos:
        try:
            out.versions[repo] = list_versions(api, repo)
        except NoAdapterRepo:
            out.missing.add(repo)
        except AdapterError as exc:
            out.errors[repo] = clean_log_line(str(exc))
        except Exception as exc:  # noqa: BLE001 - a background read says why and tries again later
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            out.errors[repo] = clean_log_line(f"cannot read {repo}: {first}")
    return out


def live_cell(versions: Versions | None) -> tuple[str, datetime | None]:
    """The Live cell before its age: `a1b2c3d4 PASS` and when that version was made, or `-`."""
    if versions is None or versions.live_commit is None:
        return NO_LIVE, None
    live = versions.live
    if live is None:  # tagged, but not among the versions read (older, or not a run's commit)
        return f"{versions.live_commit[:8]} ?", None
    try:
        when = datetime.fromisoformat(live.time) if live.time else None
    except ValueError:
        when = None
    return f"{live.short} {live.verdict}", when


class LiveVersions:
    """The app's adapter versions per repo (see the module docstring)."""

    def __init__(self, app: ConsoleBase) -> None:
        self.app = app
        self.known: dict[str, Versions] = {}
        self.errors: dict[str, str] = {}
        """repo -> why its last read failed."""
        self.missing: set[str] = set()
        """Repos the Hub does not have (no run pushed to them yet)."""
        self._read_at: dict[str, float] = {}
        self._marks: dict[str, str | None] = {}
        """tenant -> its finished last run when its repo was last read."""
        self._reading = False
        self.reads = 0
        """Diagnostics: repos read so far (what the fleet's Live column cost in Hub reads)."""

    def repo(self, tenant: str) -> str | None:
        """The tenant's adapter repo (`adapters.repo_for`: its request's, else the config's template)."""
        from console.adapters import repo_for

        row = self.app.refresher.fleet_rows.get(tenant)
        request = row.request if row is not None else None
        return repo_for(tenant, [request], self.app.cfg.defaults.hub_model_id)

    def _stale(self, tenant: str, repo: str, now: float) -> bool:
        read_at = self._read_at.get(repo)
        if read_at is None or now - read_at >= LIVE_SECONDS:
            return True
        finished = _finished(self.app.refresher.fleet_rows.get(tenant))
        return finished is not None and finished != self._marks.get(tenant)

    def want(self) -> None:
        """Read the next few repos the fleet tab shows and lacks (none while one is reading, none
        while the fleet tab is not on screen)."""
        app = self.app
        if self._reading or not app.refresher.connected:
            return
        try:
            if app.active_tab != "fleet":
                return
            tenants = [t for t in app.tenants_in_view() if t]
        except NoMatches:
            return
        now = time.monotonic()
        picked: dict[str, str] = {}
        marks: dict[str, str | None] = {}
        for tenant in tenants:
            repo = self.repo(tenant)
            if repo is None or not self._stale(tenant, repo, now):
                continue
            marks[tenant] = _finished(app.refresher.fleet_rows.get(tenant))
            if repo not in picked.values():
                picked[tenant] = repo
            if len(picked) >= READS_PER_REFRESH:
                break
        self.show(tenants)
        if not picked:
            return
        self._reading = True
        self._read(list(dict.fromkeys(picked.values())), marks, background=True)

    def marks_for(self, tenant: str) -> dict[str, str | None]:
        """What a read of the tenant's repo is current for (its finished last run)."""
        return {tenant: _finished(self.app.refresher.fleet_rows.get(tenant))}

    def read_now(self, tenant: str, repo: str) -> None:
        """Read one repo now (the versions view opened): its result comes back as a `VersionsRead`
        like the fleet's."""
        self._read([repo], self.marks_for(tenant), background=False)

    @staticmethod
    def read_message(api: Any, repo: str, marks: dict[str, str | None]) -> VersionsRead:
        """Read one repo in the calling worker (after a move): the message for the app to post."""
        message = read_versions(api, [repo])
        message.marks, message.background = marks, False
        return message

    def _read(self, repos: list[str], marks: dict[str, str | None], *, background: bool) -> None:
        api = self.app.session.api

        def read() -> None:
            message = VersionsRead(marks=marks, background=background)
            try:
                message = read_versions(api, repos)
                message.marks, message.background = marks, background
            finally:
                if not self.app.post_message(message) and background:
                    self._reading = False

        self.app.run_worker(read, thread=True, group="adapters", exit_on_error=False,
                            description="read the adapter versions")

    def apply(self, message: VersionsRead) -> None:
        """Keep what a read found, and show it in the fleet table and any open versions view."""
        if message.background:
            self._reading = False
        now = time.monotonic()
        repos = set(message.versions) | set(message.errors) | message.missing
        for repo in repos:
            self._read_at[repo] = now
            self.errors.pop(repo, None)
            self.missing.discard(repo)
            self.known.pop(repo, None)
        self.known.update(message.versions)
        self.errors.update(message.errors)
        self.missing |= message.missing
        self._marks.update(message.marks)
        self.reads += len(repos)
        self.show(list(message.marks))
        self.keep(list(message.marks))
        from console.ui.screens.versions import VersionsScreen

        for screen in self.app.screen_stack:
            if isinstance(screen, VersionsScreen) and screen.repo in repos:
                screen.show(self.known.get(screen.repo), self.errors.get(screen.repo), screen.repo in self.missing)

    def cell(self, tenant: str) -> tuple[str, datetime | None] | None:
        """The tenant's Live cell (None: not read yet)."""
        repo = self.repo(tenant)
        if repo is None or repo in self.missing:
            return NO_LIVE, None
        if repo in self.known:
            return live_cell(self.known[repo])
        if repo in self.errors:
            return UNREADABLE, None
        return None

    def keep(self, tenants: list[str]) -> None:
        """Keep these tenants' Live cells in the cache when they changed (the live tag's
        history, which the Hub does not keep: `J` on the fleet reads it back)."""
        import sqlite3

        from console.cache.past import record_live

        cells = {t: c for t in tenants if (c := self.cell(t)) is not None and c[0] != UNREADABLE}
        try:
            record_live(self.app.session.cache, cells, self.app.clock())
        except sqlite3.Error:  # the cache is a convenience: a locked file loses one sighting
            pass

    def show(self, tenants: list[str]) -> None:
        """Give the fleet table the Live cells of these tenants (it redraws the changed ones)."""
        cells = {t: c for t in tenants if (c := self.cell(t)) is not None}
        if not cells:
            return
        try:
            self.app.fleet_table.show_live(cells)
        except NoMatches:
            pass
