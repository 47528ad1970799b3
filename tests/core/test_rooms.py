"""Rooms of a size a reader holds in mind: every module of the console is under 600 lines, split by
what it does once it grows past that (docs/architecture.md names each room)."""

from __future__ import annotations

from pathlib import Path

import console

SRC = Path(console.__file__).resolve().parent
MAX_LINES = 600


def test_every_module_is_under_600_lines():
    long = {str(path.relative_to(SRC)): n for path in sorted(SRC.rglob("*.py"))
            if path.relative_to(SRC).parts[0] != "training"  # an installed package carries the scripts
            if (n := len(path.read_text(encoding="utf-8").splitlines())) >= MAX_LINES}
    assert not long, f"modules of {MAX_LINES} lines or more (split them by responsibility): {long}"


def test_the_embedded_server_is_in_rooms_by_what_they_serve():
    """The Jobs records, the Hub, the host and the access to running jobs are packages of their
    own; only the HTTP assembly and what every room shares sit at the server's top."""
    server = SRC / "server"
    rooms = {p.name for p in server.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert {"jobs", "hub", "host", "access"} <= rooms
    top = sorted(p.name for p in server.glob("*.py"))
    assert top == ["__init__.py", "app.py", "core.py", "faults.py", "paths.py", "reserve.py", "routing.py",
                   "serve.py", "shapes.py"], top
