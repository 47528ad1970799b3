"""The status line: who and where (namespace, plan, backend, endpoint) and how fresh the data is.

It shows the time since the last successful refresh (in steps of `AGE_STEP_SECONDS`) and turns
into a visible STALE state when refreshes fail, so an on-call engineer never mistakes an old
picture for the current one. At start, before anything was read, the picture painted from the
local cache is marked SNAPSHOT with its age until fresh data replaces it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from rich.text import Text
from textual.widgets import Static

from console.inputs import format_duration
from console.jobs import clean_log_line

STALE_AFTER_SECONDS = 15.0
AGE_STEP_SECONDS = 5
"""The time since the last refresh is said in steps of this many seconds (0s, 5s, 10s) until
STALE: refreshes on time (every 2 s by default) leave the line, and the terminal, still at rest."""


class StatusLine(Static):
    """One line: `ns  plan  backend endpoint  refreshed 5s ago` (or STALE with the error)."""

    DEFAULT_CSS = """
    StatusLine { height: 1; width: 1fr; }
    """

    def __init__(
        self,
        *,
        namespace: str,
        plan: str,
        backend: str,
        endpoint: str,
        read_only: bool,
        clock: Callable[[], datetime] | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.namespace = namespace
        self.plan = plan
        self.backend = backend
        self.endpoint = endpoint
        self.read_only = read_only
        self.clock = clock or (lambda: datetime.now(UTC))
        self.last_ok: datetime | None = None
        self.last_error: str | None = None
        self.failures = 0
        self.snapshot_at: datetime | None = None
        """When the data of the picture painted from the cache was read (until fresh data came)."""
        self.stalled = 0
        self.overruns = 0
        self.waiting = ""
        self.stuck = False
        """Running jobs the last on-call pass found stalled / about to hit their timeout."""
        self.failing = 0
        """Schedules whose runs failed `notify.schedule_failures` times in a row (the last pass)."""
        self._shown: Text | None = None
        """The text last drawn (`refresh_text` draws only a change)."""

    def on_mount(self) -> None:
        self.refresh_text()
        self.set_interval(1.0, self.refresh_text)

    def mark_snapshot(self, when: datetime) -> None:
        """The screen shows the picture the cache kept, whose data was read at `when`."""
        self.snapshot_at = when
        self.refresh_text()

    def set_endpoint(self, endpoint: str) -> None:
        """The backend answered at `endpoint` (not known before connecting)."""
        if endpoint != self.endpoint:
            self.endpoint = endpoint
            self.refresh_text()

    def mark_ok(self, when: datetime) -> None:
        self.last_ok = when
        self.last_error = None
        self.failures = 0
        self.snapshot_at = None
        self.refresh_text()

    def set_oncall(self, stalled: int, overruns: int, waiting: str = "", stuck: bool = False,
                   failing: int = 0) -> None:
        """What the last on-call pass found: said at the end of the line while not zero.
        `waiting`: the SCHEDULING queue in a few words (`console.jobs.queue_tag`); `stuck`: a job
        in it has waited past `notify.scheduling_after_s`; `failing`: schedules failing in a row."""
        found = (stalled, overruns, waiting, stuck, failing)
        if found != (self.stalled, self.overruns, self.waiting, self.stuck, self.failing):
            self.stalled, self.overruns, self.waiting, self.stuck, self.failing = found
            self.refresh_text()

    def mark_failed(self, error: str) -> None:
        self.last_error = clean_log_line(error)
        self.failures += 1
        self.refresh_text()

    @property
    def stale(self) -> bool:
        if self.last_error is not None:
            return True
        if self.last_ok is None:
            return False
        return (self.clock() - self.last_ok).total_seconds() > STALE_AFTER_SECONDS

    def render_text(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f" {self.namespace} ", style="bold")
        text.append(f"{self.plan} ", style="dim")
        text.append(f"{self.backend} ", style="bold cyan")
        text.append(
            self.endpoint.removeprefix("http://").removeprefix("https://") + " ", style="dim"
        )
        if self.read_only:
            text.append(" READ-ONLY ", style="bold black on yellow")
            text.append(" ")
        if self.snapshot_at is not None and self.last_ok is None:
            age = format_duration(max(0.0, (self.clock() - self.snapshot_at).total_seconds()))
            text.append(" SNAPSHOT ", style="bold black on yellow")
            text.append(f" {age} old", style="bold yellow")
            if self.last_error:
                text.append(f", refresh failed: {self.last_error}", style="red")
            else:
                text.append(", refreshing...", style="italic")
        elif self.last_ok is None and self.last_error is None:
            text.append("loading...", style="italic")
        else:
            since = (self.clock() - self.last_ok).total_seconds() if self.last_ok else None
            age = format_duration(since) if since is not None else "never"
            if self.stale:
                text.append(" STALE ", style="bold white on red")
                text.append(f" last ok {age} ago", style="bold red")
                if self.last_error:
                    text.append(f": {self.last_error}", style="red")
            else:
                step = int(max(0.0, since or 0.0)) // AGE_STEP_SECONDS * AGE_STEP_SECONDS
                text.append(f"refreshed {format_duration(step)} ago", style="green")
        if self.stalled:
            text.append(f"  {self.stalled} STALLED", style="bold red")
        if self.overruns:
            text.append(f"  {self.overruns} TMOUT", style="bold yellow")
        if self.waiting:
            text.append(f"  {self.waiting}", style="bold yellow" if self.stuck else "yellow")
        if self.failing:
            text.append(f"  {self.failing} SCHED FAIL", style="bold red")
        return text

    def refresh_text(self) -> None:
        """Draw the line if its text changed (each second and each refresh ask: while refreshes
        come on time the line reads "refreshed 0s ago" and is not drawn again)."""
        text = self.render_text()
        if text == self._shown:
            return
        self._shown = text
        # one docked row: its size never changes, so no layout pass
        self.update(text, layout=False)
