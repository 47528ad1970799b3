"""The real `console`, run with frame stamps for the start-up benchmarks.

    CONSOLE_BENCH_READY_FILE=/tmp/ready python benchmarks/stamped_console.py [console arguments]

It appends `<what> <time.time()>` lines to `$CONSOLE_BENCH_READY_FILE`, once each:

- `frame`: the kept picture is on the terminal (before Textual is imported);
- `painted`: Textual's first frame (on a first start: the screens, before any data);
- `snapshot`: the app has painted its picture from the cache;
- `fresh`: the first fresh data is on screen;
- `full`: every job is known and on screen.

`CONSOLE_BENCH_FULL_SYNC_SECONDS=S` sets the console's whole re-read interval
(`console.ui.refresh.FULL_SYNC_SECONDS`, 900 s) to S, for a memory probe that sees a few whole
re-reads in minutes (the soak's goal is read at the console's own interval).

The hooks are put in from here, around the console's own functions, so that the console carries
no benchmark code: `console.firstframe.paint` is wrapped before `console.cli` is imported, and
`console.ui.refresh.Refresher` when that module is first imported (after the first frame, as the
console imports it), so nothing is imported earlier than the console itself would.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import time
from typing import Any

READY_ENV = "CONSOLE_BENCH_READY_FILE"
FULL_SYNC_ENV = "CONSOLE_BENCH_FULL_SYNC_SECONDS"
_done: set[str] = set()


def stamp(what: str) -> None:
    """Append `<what> <time>` to the stamp file, once per `what`."""
    path = os.environ.get(READY_ENV)
    if not path or what in _done:
        return
    _done.add(what)
    try:
        with open(path, "a", encoding="utf-8") as out:
            out.write(f"{what} {time.time():.6f}\n")
    except OSError:
        pass


def _wrap_refresher(module: Any) -> None:
    """Stamp `painted`, `snapshot`, `fresh` and `full` once the frame that shows each is painted."""
    if os.environ.get(FULL_SYNC_ENV):
        module.FULL_SYNC_SECONDS = float(os.environ[FULL_SYNC_ENV])
    refresher = module.Refresher
    paint, apply = refresher.paint_snapshot, refresher.apply

    def paint_snapshot(self: Any) -> None:
        paint(self)
        self.app.call_after_refresh(stamp, "painted")  # Textual's first frame, with or without a picture
        if self.snapshot_at is not None:
            self.app.call_after_refresh(stamp, "snapshot")

    def applied(self: Any, message: Any) -> None:
        apply(self, message)
        self.app.call_after_refresh(stamp, "fresh")
        if message.full and self.synced:
            self.app.call_after_refresh(stamp, "full")

    refresher.paint_snapshot, refresher.apply = paint_snapshot, applied


class _AfterImport:
    """Wraps `console.ui.refresh` as it is imported (by the console, when it would be). A finder
    and loader by their methods alone: `importlib.abc` would load `importlib.resources` and its
    parts into a start the console itself never makes them part of."""

    NAME = "console.ui.refresh"

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.NAME:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        self._loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        _wrap_refresher(module)


def main() -> int:
    from console import firstframe

    painted = firstframe.paint

    def paint(argv: Any) -> bool:
        shown = painted(argv)
        if shown:
            stamp("frame")
        return shown

    firstframe.paint = paint
    sys.meta_path.insert(0, _AfterImport())
    from console.cli import main as console_main

    return console_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
