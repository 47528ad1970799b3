"""What the jobs tab shows when the console quits, kept for the next start's first picture.

`console.firstframe` paints it before Textual loads; this is the other half, in the app: the
screen as Textual composes it, rendered to styled lines at the terminal's size. Kept only from
the jobs tab with no dialog open (the tab a start opens on), and only for a TUI that `console`
started (`firstframe.current_key`).

Textual has no public call for the composed screen as text: `Screen._compositor.render_update`
(what `App.export_screenshot` renders to SVG) is used here and nowhere else, and a test fails if it
changes (tests/ui/test_first_frame.py).
"""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from console import firstframe


def screen_lines(app: Any) -> list[str]:
    """The current screen, one line of text with SGR styles per row."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system=app.console.color_system or "truecolor", record=True,
                      legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True))
    lines = console.export_text(styles=True).split("\n")
    return (lines + [""] * height)[:height]


def keep(app: Any) -> bool:
    """Keep the screen for the next start, if it is the jobs tab (True when kept)."""
    if firstframe.current_key() is None or len(app.screen_stack) != 1:
        return False
    try:
        if app.active_tab != "jobs":
            return False
        lines = screen_lines(app)
    except Exception:  # a screen that is closing: nothing to keep, and quitting must go on
        return False
    width, height = app.size
    return firstframe.save(lines, width, height)
