"""The log pane: the selected job's log, streaming, batched, bounded, searchable.

Lines arrive from a thread worker through :meth:`LogPane.feed` (thread-safe: a deque append)
tagged with the stream's generation; a 50 ms timer drains them into the `JobLog` in one
`write_lines` call, at most `batch_limit` lines per tick so a chatty job cannot freeze the app.
Only the newest `max_lines` stay in memory (the full log stays on the server: save fetches it).
Lines are plain text: escape sequences and control characters are removed, markup never applies.

Keys (when the pane has focus): `f` follow, `w` wrap, `end`/`G` jump to the end, `/` search,
`n` / `N` next / previous match, `&` filter (only the lines that match, new ones too, as they
arrive; `/regex/` for a regular expression; empty to show every line again), `T` each line's time
on/off (the time the Jobs API stamped it, UTC), `J` jump to the first line at or after a time.
Save (`ctrl+s`) is an app action: it needs the API.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass
from datetime import UTC, datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Static

from console.inputs import LineFilter, parse_since
from console.jobs import clean_log_line, log_time
from console.stages import ACTIVE_STAGES
from console.ui import keys
from console.ui.widgets.job_log import JobLog
from console.ui.widgets.job_metrics import JobMetricsBar

DEFAULT_MAX_LINES = 5000
BATCH_INTERVAL = 0.05
BATCH_LIMIT = 500
TIME_WIDTH = 9
"""`HH:MM:SS ` before each line while the times are shown."""


def clock_of(stamp: str | None) -> str:
    """A line's time as the pane shows it: `HH:MM:SS` UTC, `--:--:--` when it has none."""
    when = log_time(stamp)
    return when.astimezone(UTC).strftime("%H:%M:%S") if when is not None else "--:--:--"


class _StreamEnd:
    """Queued after a stream's last line: it ended (error None) or failed with `error`. A plain
    marker class: a dataclass's generated methods would be compiled on the first frame's path."""

    __slots__ = ("error",)

    def __init__(self, error: str | None = None) -> None:
        self.error = error


class LogPane(Vertical, can_focus=False):
    """Header (job, stage, follow/wrap state, search), live metrics, the log, a search box."""

    BINDINGS = keys.LOG_PANE

    @dataclass
    class SearchMoved(Message):
        index: int | None

    def __init__(
        self,
        *,
        max_lines: int = DEFAULT_MAX_LINES,
        batch_limit: int = BATCH_LIMIT,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.max_lines = max_lines
        self.batch_limit = batch_limit
        self.job_id: str | None = None
        self.job_label = ""
        self.stage = ""
        self.reason = ""
        """Why the job failed (`set_reason`), right after its stage."""
        self.generation = 0
        self.follow = True
        self.wrap = False
        self.timestamps = False
        """Each line shown after the time the Jobs API stamped it (`T`)."""
        self.ended = False
        self.error: str | None = None
        self.lines: collections.deque[str] = collections.deque(maxlen=max_lines)
        self.times: collections.deque[str | None] = collections.deque(maxlen=max_lines)
        """Each kept line's time as the Jobs API stamped it (ISO), or None."""
        self.received = 0
        # what the stream handed over and the screen has not shown yet: (generation, lines) chunks
        # as they came (one append per batch under the lock), or (generation, _StreamEnd)
        self._pending: collections.deque[tuple[int, list[str] | _StreamEnd, list[str | None] | None]] = (
            collections.deque())
        self._pending_lines = 0
        self._lock = threading.Lock()
        self.search_term = ""
        self.line_filter: LineFilter | None = None
        """Only the kept lines it keeps are shown (`&`); it stays on from job to job."""
        self.filtered = 0
        """How many kept lines the filter keeps."""
        self._asking = "search"
        """What the box under the log asks for: a search or a filter."""
        self.matches: list[int] = []
        self.match_index: int | None = None
        self._wrap_width = 0
        self._drain_timer: Timer | None = None
        self._title_length = -1

    def compose(self) -> ComposeResult:
        with Horizontal(id="log-header"):
            yield Static(id="log-title")
            yield JobMetricsBar(id="job-metrics")
        yield JobLog(max_lines=self.max_lines, id="job-log")
        # the search box is mounted when first asked for (`_ask`): the first frame does not draw it

    def on_mount(self) -> None:
        self._drain_timer = self.set_interval(BATCH_INTERVAL, self.drain)
        self._render_title()

    @property
    def log_widget(self) -> JobLog:
        return self.query_one("#job-log", JobLog)

    # -- the stream ------------------------------------------------------------------------

    def start(self, job_id: str | None, label: str = "", stage: str = "") -> int:
        """Show a new job's log (empty); returns the generation its stream must use."""
        with self._lock:
            self.generation += 1
            self._pending.clear()
            self._pending_lines = 0
        if self._drain_timer is not None:
            self._drain_timer.resume()
        self.job_id = job_id
        self.job_label = label
        self.stage = stage
        self.reason = ""
        self.lines.clear()
        self.times.clear()
        self.received = 0
        self.filtered = 0
        self.ended = False
        self.error = None
        self.matches = []
        self.match_index = None
        self.follow = True
        log = self.log_widget
        log.clear()
        log.auto_scroll = True
        self.query_one(JobMetricsBar).show(job_id, None)
        self._render_title()
        return self.generation

    def feed(self, generation: int, lines: list[str], stamps: list[str | None] | None = None) -> None:
        """Queue lines (and each one's time, when the stream gave it) from any thread; stale
        generations are dropped at drain time."""
        if not lines:
            return
        chunk = list(lines)
        with self._lock:
            self._pending.append((generation, chunk, list(stamps) if stamps else None))
            self._pending_lines += len(chunk)

    def backlog(self) -> int:
        """Lines queued but not yet shown (the stream worker waits while this is large)."""
        return self._pending_lines

    def end(self, generation: int, error: str | None = None) -> None:
        """The stream finished (the job ended) or failed with `error`; thread-safe."""
        with self._lock:
            self._pending.append((generation, _StreamEnd(error), None))

    def drain(self) -> None:
        batch: list[str] = []
        times: list[str | None] = []
        finished = False
        error = None
        with self._lock:
            pending = self._pending
            # Lines beyond the newest `max_lines` of the backlog would scroll out of the kept
            # window before they could be seen: count them and skip their cleaning and layout.
            skip = self._pending_lines - self.max_lines
            while skip > 0 and pending:
                generation, chunk, stamps = pending[0]
                if isinstance(chunk, _StreamEnd) or generation != self.generation:
                    break
                if len(chunk) > skip:
                    pending[0] = (generation, chunk[skip:], stamps[skip:] if stamps else None)
                    self._take(skip)
                    break
                pending.popleft()
                self._take(len(chunk))
                skip -= len(chunk)
            room = self.batch_limit
            while pending and room > 0:
                generation, chunk, stamps = pending[0]
                if isinstance(chunk, _StreamEnd):
                    # (a marker object, not text: a job's line may start with anything, NUL too)
                    pending.popleft()
                    if generation == self.generation:
                        finished = True
                        error = chunk.error
                    continue
                if generation != self.generation:
                    pending.popleft()
                    self._pending_lines -= len(chunk)
                    continue
                if len(chunk) > room:
                    batch.extend(chunk[:room])
                    times.extend(stamps[:room] if stamps else [None] * room)
                    pending[0] = (generation, chunk[room:], stamps[room:] if stamps else None)
                    self._pending_lines -= room
                    room = 0
                else:
                    pending.popleft()
                    batch.extend(chunk)
                    times.extend(stamps or [None] * len(chunk))
                    self._pending_lines -= len(chunk)
                    room -= len(chunk)
        if batch:
            cleaned = [clean_log_line(line) for line in batch]
            keep = self.line_filter
            if keep is not None:  # the lines that scroll out of the kept window leave the count
                dropping = len(self.lines) + len(cleaned) - self.max_lines
                for i in range(min(max(0, dropping), len(self.lines))):
                    self.filtered -= keep(self.lines[i])
            self.lines.extend(cleaned)
            self.times.extend(times)
            self.received += len(cleaned)
            if keep is not None:
                cleaned, times = self._kept_by_filter(cleaned[-self.max_lines:], times[-self.max_lines:])
                self.filtered += len(cleaned)
            log = self.log_widget
            if cleaned:
                log.write_lines(self._display(cleaned, times), scroll_end=self.follow)
        if finished:
            self.ended = True
            self.error = error
            with self._lock:
                if not self._pending and self._drain_timer is not None:
                    self._drain_timer.pause()  # the stream is over: no ticks until the next one
        if batch or finished:
            self._render_title()

    def _take(self, n: int) -> None:
        """`n` queued lines scrolled out unseen: counted as received, never drawn."""
        self._pending_lines -= n
        self.received += n

    def _kept_by_filter(self, lines: list[str], times: list[str | None]) -> tuple[list[str], list[str | None]]:
        keep = self.line_filter
        if keep is None:
            return lines, times
        pairs = [(line, t) for line, t in zip(lines, times, strict=True) if keep(line)]
        return [line for line, _ in pairs], [t for _, t in pairs]

    def _shown(self, line: str) -> bool:
        """Kept line `line` is on screen (the filter, when on, keeps it)."""
        return self.line_filter is None or self.line_filter(line)

    def _display(self, lines: list[str], times: list[str | None]) -> list[str]:
        if self.timestamps:
            lines = [f"{clock_of(t)} {line}" for t, line in zip(times, lines, strict=True)]
        if not self.wrap:
            return lines
        width = self._width()
        out: list[str] = []
        for line in lines:
            if len(line) <= width:
                out.append(line)
            else:
                out.extend(line[i : i + width] for i in range(0, len(line), width))
        return out

    def _width(self) -> int:
        width = self.log_widget.scrollable_content_region.width or 80
        return max(10, width - 1)

    def _rows(self, line: str) -> int:
        """Rows kept line `line` takes in the view (more than one when wrapped; none when the
        filter hides it)."""
        if not self._shown(line):
            return 0
        if not self.wrap:
            return 1
        extra = TIME_WIDTH if self.timestamps else 0
        return max(1, -(-(len(line) + extra) // self._width()))

    def _row_of(self, line: int) -> int:
        """The view's row where kept line `line` starts."""
        if not self.wrap and self.line_filter is None:
            return line
        return sum(self._rows(s) for s in list(self.lines)[:line])

    def _line_at_top(self) -> int | None:
        """The kept line at the top of the view (None when following: the end is the place)."""
        if self.follow or not self.lines:
            return None
        top, row = int(self.log_widget.scroll_y), 0
        for i, s in enumerate(self.lines):
            row += self._rows(s)
            if row > top:
                return i
        return len(self.lines) - 1

    def _rerender(self, top: int | None = None) -> None:
        """Draw the kept lines again (wrap, times or width changed) where the reader was: at the
        end when following, else with kept line `top` (as `_line_at_top` said before the change)
        at the top of the view."""
        log = self.log_widget
        log.clear()
        log.auto_scroll = self.follow
        lines, times = self._kept_by_filter(list(self.lines), list(self.times))
        log.write_lines(self._display(lines, times), scroll_end=self.follow)
        # the new rows are laid out at the next refresh: scroll then
        if self.follow:
            self.call_after_refresh(log.scroll_end, animate=False)
        elif top is not None:
            self.call_after_refresh(log.scroll_to, y=self._row_of(top), animate=False)

    def on_resize(self) -> None:
        if self.wrap and self._width() != self._wrap_width:
            top = self._line_at_top()  # where it was (at the last width)
            self._wrap_width = self._width()
            self._rerender(top)

    # -- header ----------------------------------------------------------------------------

    def set_stage(self, stage: str) -> None:
        if stage != self.stage:
            self.stage = stage
            if stage not in ACTIVE_STAGES:
                self.query_one(JobMetricsBar).show(self.job_id, None)  # no live metrics any more
            self._render_title()

    def set_reason(self, reason: str) -> None:
        """Say why the job on screen failed (legible at 80 columns, where the Message column is not)."""
        if reason != self.reason:
            self.reason = reason
            self._render_title()

    def _render_title(self) -> None:
        text = Text(no_wrap=True, overflow="ellipsis")
        if self.job_id is None:
            text.append(" no job selected", style="dim")
        else:
            text.append(f" {self.job_id[-8:]}", style="bold")  # the full id is in the details
            if self.job_label:
                text.append(f" {clean_log_line(self.job_label)}")
            if self.stage:
                text.append(f" {self.stage}", style="cyan")
            if self.reason:  # before the follow state: a finished job has nothing to follow
                text.append(f": {clean_log_line(self.reason)}", style="red")
            text.append(
                " follow" if self.follow else " paused", style="green" if self.follow else "yellow"
            )
            if self.wrap:
                text.append(" wrap", style="dim")
            if self.timestamps:
                text.append(" times", style="dim")
            kept = (
                f"{len(self.lines)}/{self.received}"
                if self.received > len(self.lines)
                else str(self.received)
            )
            text.append(f" {kept} lines", style="dim")
            if self.ended:
                text.append(
                    " (ended)"
                    if not self.error
                    else f" (stream error: {clean_log_line(self.error)})",
                    style="dim" if not self.error else "red",
                )
            if self.line_filter is not None:
                text.append(f" &{clean_log_line(self.line_filter.term)} {self.filtered} matching",
                            style="bold magenta")
            if self.search_term:
                where = (
                    "no match"
                    if not self.matches
                    else f"{(self.match_index or 0) + 1}/{len(self.matches)}"
                )
                text.append(f" /{clean_log_line(self.search_term)} {where}", style="magenta")
        # one row of fixed size (see screens.tcss): no layout pass, this runs on every batch
        # this runs on every batch: a layout pass only when the title's length changed
        title = self.query_one("#log-title", Static)
        layout = len(text.plain) != self._title_length
        self._title_length = len(text.plain)
        title.update(text, layout=layout)

    def show_metrics(self, job_id: str, sample: dict) -> None:
        if job_id == self.job_id:
            self.query_one(JobMetricsBar).show(job_id, sample)

    # -- actions ---------------------------------------------------------------------------

    def set_follow(self, on: bool) -> None:
        self.follow = on
        log = self.log_widget
        log.auto_scroll = on
        if on:
            log.scroll_end(animate=False)
        self._render_title()

    def action_toggle_follow(self) -> None:
        # the header says "follow" / "paused": no toast (mounting one while a log floods in
        # costs more than the key itself)
        self.set_follow(not self.follow)

    def on_job_log_follow_paused(self, event: JobLog.FollowPaused) -> None:
        event.stop()
        self.set_follow(False)

    def action_toggle_wrap(self) -> None:
        top = self._line_at_top()
        self.wrap = not self.wrap
        self._wrap_width = self._width()
        self._rerender(top)
        self._render_title()  # the header says "wrap"

    def action_toggle_timestamps(self) -> None:
        top = self._line_at_top()
        self.timestamps = not self.timestamps
        self._rerender(top)
        self._render_title()  # the header says "times"

    def action_jump_time(self) -> None:
        """Ask for a time; show the first kept line stamped at or after it (follow pauses)."""
        from console.ui.screens.prompt import PromptScreen  # modal screens load on first use

        self.app.push_screen(
            PromptScreen("Jump to the log at (HH:MM[:SS], 30m, 2h, an ISO time; UTC):", "", "09:30"),
            self.jump_to,
        )

    def jump_to(self, text: str | None) -> int | None:
        """Show the first kept line stamped at or after `text` (see `parse_since`); its index."""
        if text is None or not text.strip():
            return None
        try:
            when = parse_since(text, datetime.now(UTC), field="time")
        except ValueError as exc:
            self.app.notify(str(exc), severity="error")
            return None
        index = next((i for i, t in enumerate(self.times) if (at := log_time(t)) is not None and at >= when), None)
        if index is None:
            self.app.notify(f"No kept line at or after {when:%Y-%m-%d %H:%M:%S} UTC", severity="warning",
                            timeout=4)
            return None
        self._scroll_to_line(index)
        self._render_title()
        return index

    def action_jump_end(self) -> None:
        self.set_follow(True)

    async def action_search(self) -> None:
        await self._ask("search", "search the log (enter: find, esc: close)", "")

    async def action_filter(self) -> None:
        term = self.line_filter.term if self.line_filter is not None else ""
        await self._ask("filter", "show only lines with (/regex/ for a regular expression; empty: every line)", term)

    async def _ask(self, what: str, placeholder: str, value: str) -> None:
        self._asking = what
        try:
            box = self.query_one("#log-search", Input)
        except NoMatches:  # the first time: mounted under the log
            box = Input(value, placeholder=placeholder, id="log-search")
            await self.mount(box)
        box.placeholder = placeholder
        box.value = value
        box.display = True
        box.focus()

    def action_close_search(self) -> None:
        for box in self.query("#log-search").results(Input):
            box.display = False
        self.log_widget.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "log-search":
            return
        event.stop()
        if self._asking == "filter":
            try:
                self.set_filter(event.value)
            except ValueError as exc:
                self.app.notify(str(exc), severity="error")
                return  # the box stays open with the term to correct
        else:
            self.search(event.value)
        event.input.display = False
        self.log_widget.focus()

    def set_filter(self, term: str) -> int:
        """Show only the kept lines that match `term` (see `LineFilter`), and the new ones that
        match as they arrive; an empty term shows every line again. Returns how many match.
        A bad regular expression raises ValueError and changes nothing."""
        line_filter = LineFilter(term) if term.strip() else None
        top = self._line_at_top()
        self.line_filter = line_filter
        self.filtered = sum(1 for line in self.lines if line_filter(line)) if line_filter else 0
        if self.search_term:  # the search finds among the lines on screen
            self.matches = [i for i, line in enumerate(self.lines) if self._matches_search(line)]
            self.match_index = len(self.matches) - 1 if self.matches else None
        if top is not None and not self._shown(self.lines[top]):
            top = next((i for i in range(top, len(self.lines)) if self._shown(self.lines[i])), None)
        self._rerender(top)
        self._render_title()
        return self.filtered

    def _matches_search(self, line: str) -> bool:
        needle = self.search_term.lower()
        return bool(needle) and needle in line.lower() and self._shown(line)

    def search(self, term: str) -> int:
        """Find `term` (case-insensitive) in the lines on screen; jump to the last match."""
        self.search_term = term
        self.matches = [i for i, line in enumerate(self.lines) if self._matches_search(line)]
        self.match_index = len(self.matches) - 1 if self.matches else None
        self._go_to_match()
        return len(self.matches)

    def action_next_match(self) -> None:
        if self.matches:
            self.match_index = ((self.match_index or 0) + 1) % len(self.matches)
            self._go_to_match()

    def action_previous_match(self) -> None:
        if self.matches:
            self.match_index = ((self.match_index or 0) - 1) % len(self.matches)
            self._go_to_match()

    def _go_to_match(self) -> None:
        if self.match_index is None:
            self._render_title()
            if self.search_term:
                self.app.notify(f"No match for {self.search_term!r}", severity="warning", timeout=3)
            return
        line = self.matches[self.match_index]
        self._scroll_to_line(line)
        self.post_message(self.SearchMoved(line))
        self._render_title()

    def _scroll_to_line(self, line: int) -> None:
        """Pause follow and scroll kept line `line` into view (a few rows from the top)."""
        y = self._row_of(line)
        self.set_follow(False)
        self.log_widget.scroll_to(y=max(0, y - 2), animate=False)
