"""Redraw a Static only when what it shows changed.

The app refreshes every few seconds and sets the same texts again most of the time; each
`Static.update` costs a repaint and, by default, a layout pass of the whole screen.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

_SHOWN = "_console_shown_text"


def update_if_changed(widget: Static, text: Text) -> bool:
    """Show `text` unless it is already shown; lay out again only if its line count changed."""
    old: Text | None = getattr(widget, _SHOWN, None)
    if old is not None and old == text:
        return False
    setattr(widget, _SHOWN, text)
    widget.update(text, layout=old is None or old.plain.count("\n") != text.plain.count("\n"))
    return True
