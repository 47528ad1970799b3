"""The log widget: a bounded, plain-text `Log` that knows when the user scrolled away.

Textual's `Log` renders text without markup; lines reach it already cleaned of escape and control
sequences (`console.jobs.clean_log_line`). Scrolling up — keys, page keys, home, the wheel —
pauses follow mode; jumping to the end resumes it.

Once the log holds `max_lines`, every write drops as many lines from the top as it adds at the
bottom: every visible row changes. Textual's `Log.write_lines` repaints only the rows where the
new lines were before the drop (past the end) and scrolls to an end it is already at, so the
screen kept showing the lines of the moment the log filled up. `write_lines` here repaints the
whole view when lines were dropped.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.events import MouseScrollUp
from textual.message import Message
from textual.widgets import Log


class JobLog(Log):
    """A bounded log view; posts FollowPaused when the user scrolls up."""

    class FollowPaused(Message):
        """The user scrolled up: the log stops following its end."""

    def __init__(self, *, max_lines: int, id: str | None = None) -> None:
        super().__init__(max_lines=max_lines, auto_scroll=True, id=id, highlight=False)

    def write_lines(self, lines: Iterable[str], scroll_end: bool | None = None) -> JobLog:
        lines = list(lines)
        dropping = self.max_lines is not None and self.line_count + len(lines) > self.max_lines
        super().write_lines(lines, scroll_end)
        if dropping:
            self.refresh()  # every row moved up: repaint them all
        return self

    def _pause(self) -> None:
        if self.auto_scroll:
            self.post_message(self.FollowPaused())

    def action_scroll_up(self) -> None:
        self._pause()
        super().action_scroll_up()

    def action_page_up(self) -> None:
        self._pause()
        super().action_page_up()

    def action_scroll_home(self) -> None:
        self._pause()
        super().action_scroll_home()

    def on_mouse_scroll_up(self, event: MouseScrollUp) -> None:  # noqa: ARG002 (the event itself says nothing more)
        """The wheel up pauses following too (Textual's own handler scrolls, as before)."""
        self._pause()
