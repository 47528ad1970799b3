"""Python's cyclic garbage collector, paused while the TUI starts.

Importing Textual and the console and building the first frame allocate about 100,000 objects,
nearly all of which live as long as the app (modules, classes, widgets, styles). At its default
thresholds the collector runs some 140 times over them before the first frame, a fifth of the
start's CPU. The TUI's start pauses it (:func:`pause`, before anything of the UI is imported) and,
once the first frame is on screen, moves what is allocated by then to the permanent generation
(:func:`gc.freeze`: never scanned again) and lets it run again (:func:`resume`); one collection
first frees the few thousand objects the start left in unreachable cycles (about half a megabyte),
which a freeze would keep for the app's life.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Stop automatic collection (when it runs) until :func:`resume`."""
    global _paused
    if gc.isenabled() and not _paused:
        gc.disable()
        _paused = True


def resume() -> None:
    """After :func:`pause`: free the start's garbage, freeze what is left and collect again (else
    nothing)."""
    global _paused
    if _paused:
        _paused = False
        gc.collect()
        gc.freeze()
        gc.enable()
