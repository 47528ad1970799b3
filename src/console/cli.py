"""The `console` command: the TUI by default, and headless subcommands for scripts and SSH one-liners.

Each subcommand imports what it needs when it runs, so `console whatif` never loads Textual and
nothing here loads the training stack.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING

from console import __version__
from console.commands._common import CommandError

if TYPE_CHECKING:
    import argparse

# The global flags: accepted before the subcommand and after it. One rule: only the top-level parser
# holds their defaults; a subcommand's copy sets nothing unless typed (default=SUPPRESS), so a flag
# typed before the subcommand is never put back to its default by the subcommand's parser.
GLOBAL_FLAGS: tuple[tuple[str, dict, object], ...] = (
    ("--config", {"metavar": "PATH", "help": "config file (default: $CONSOLE_CONFIG or the user config dir)"}, None),
    ("--read-only", {"action": "store_true", "help": "refuse every action that changes anything"}, False),
)


def _add_global_flags(p: argparse.ArgumentParser, *, top: bool) -> None:
    import argparse

    for flag, kwargs, default in GLOBAL_FLAGS:
        p.add_argument(flag, **kwargs, default=default if top else argparse.SUPPRESS)


def _add_common(p: argparse.ArgumentParser) -> None:
    _add_global_flags(p, top=False)


def build_parser() -> argparse.ArgumentParser:
    import argparse  # not on the TUI's path: its start reads the global flags itself

    parser = argparse.ArgumentParser(
        prog="console",
        description="Operations console for per-tenant LoRA training jobs on Hugging Face Jobs.",
    )
    parser.add_argument("--version", action="version", version=f"console {__version__}")
    _add_global_flags(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    from console.commands import register_all

    register_all(sub, _add_common)
    return parser


def tui_args(argv: Sequence[str]) -> SimpleNamespace | None:
    """The parsed command line when it opens the TUI (nothing but the global flags), else None.

    The TUI's start reads these few flags itself: the parser, with every subcommand's module
    imported to build it, is not on the path to the first frame."""
    values = {dest.lstrip("-").replace("-", "_"): default for dest, _, default in GLOBAL_FLAGS}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--read-only":
            values["read_only"] = True
        elif arg == "--config" and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            values["config"] = argv[i + 1]
            i += 1
        elif arg.startswith("--config=") and len(arg) > len("--config="):
            values["config"] = arg.split("=", 1)[1]
        else:
            return None  # a subcommand, --help, --version or a typo: the parser answers
        i += 1
    return SimpleNamespace(command=None, **values)


def main(argv: Sequence[str] | None = None) -> int:
    """Run `console` with `argv`; its exit status. With `CONSOLE_EXIT_LOG` set, why it ends is
    appended there (`console.exitlog`): a terminal that is gone shows nothing."""
    from console import exitlog

    exitlog.take_reason()
    try:
        status = _main(argv)
    except SystemExit as exc:
        code = exc.code
        exitlog.record(code if isinstance(code, int) else (0 if code is None else 1),
                       f"SystemExit({code!r})")
        raise
    except BaseException as exc:
        exitlog.record_exception(1, exc)
        raise
    exitlog.record(status, exitlog.take_reason())
    return status


def _main(argv: Sequence[str] | None) -> int:
    from console import exitlog

    argv = list(sys.argv[1:] if argv is None else argv)
    args = tui_args(argv)
    if args is None:
        args = build_parser().parse_args(argv)
    handler = getattr(args, "handler", None)
    tui = handler is None
    if tui:  # the last screen, before Textual or anything of the UI is imported
        from console import collector, firstframe

        collector.pause()  # until the first frame is on screen (`ConsoleApp.on_mount`)
        firstframe.paint(argv)
    try:
        if tui:
            from console.commands.tui import run_tui

            return run_tui(args)
        return int(handler(args) or 0)
    except CommandError as exc:
        if tui:
            firstframe.abandon()
        exitlog.give_reason(f"CommandError: {exc}")
        try:
            print(f"console: {exc}", file=sys.stderr)
        except OSError:  # its terminal is gone: the exit status (and CONSOLE_EXIT_LOG) say it
            pass
        return exc.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    finally:
        if tui:
            firstframe.abandon()
            collector.resume()
