"""Redraw a Static only when what it shows changed.

The app refreshes every few seconds and sets the same texts again most of the time; each
`Static.update` costs a repaint and, by default, a layout pass of the whole screen.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

_SHOWN = "_console_shown_text"


def update_if_changed(widget: Static, text: Text, *, layout: bool = True) -> bool:
    """Show `text` unless it is already shown. `layout=False` skips the layout pass, for a
    widget whose size cannot change with its text (a fixed-height, no-wrap row)."""
    old: Text | None = getattr(widget, _SHOWN, None)
    if old is not None and old == text:
        return False
    setattr(widget, _SHOWN, text)
    widget.update(text, layout=layout or old is None)
    return True
