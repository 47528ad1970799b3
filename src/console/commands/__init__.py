"""Subcommands of `console`, one module each.

Every module here defines `register(subparsers, add_common)`, which adds its parser and sets
`handler=` to a function taking the parsed args. Modules stay light at import time: the work and its
imports happen inside the handler.
"""

from __future__ import annotations

import importlib


def register_all(subparsers, add_common) -> None:
    import pkgutil  # the parser only: the TUI's start builds none

    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers, add_common)
