"""The log widget: a bounded, plain-text `Log` that knows when the user scrolled away.

Textual's `Log` renders text without markup; lines reach it already cleaned of escape and control
sequences (`console.jobs.clean_log_line`). Scrolling up — keys, page keys, home, the wheel —
pauses follow mode; jumping to the end resumes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message
from textual.widgets import Log


class JobLog(Log):
    """A bounded log view; posts FollowPaused when the user scrolls up."""

    @dataclass
    class FollowPaused(Message):
        pass

    def __init__(self, *, max_lines: int, id: str | None = None) -> None:
        super().__init__(max_lines=max_lines, auto_scroll=True, id=id, highlight=False)

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

    def _on_mouse_scroll_up(self, event) -> None:  # noqa: ANN001 (Textual's event type)
        self._pause()
        super()._on_mouse_scroll_up(event)
