"""Start-up stays light: the console's headless modules never load the training stack or the UI."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "trl", "peft", "datasets", "trackio")
HEADLESS = (
    "console",
    "console.cli",
    "console.config",
    "console.prices",
    "console.costs",
    "console.cron",
    "console.inputs",
    "console.reference",
    "console.paths",
    "console.commands",
    "console.oncall",
)


def loaded_after(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nprint('\\n'.join(sorted(sys.modules)))"
    # without coverage's own start-up in the child (it imports sqlite3 and hashlib for its data file)
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_PROCESS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    return {line.split(".")[0] for line in out.split()}


@pytest.mark.parametrize("module", HEADLESS)
def test_headless_modules_load_no_training_stack_and_no_textual(module):
    mods = loaded_after(f"import {module}")
    assert not mods & set(HEAVY), f"{module} imported {sorted(mods & set(HEAVY))}"
    assert "textual" not in mods, f"{module} imported textual"


def test_whatif_command_runs_without_the_training_stack():
    mods = loaded_after(
        "import contextlib, io\nfrom console.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n    main(['whatif', '--json'])"
    )
    assert not mods & set(HEAVY)
    assert "textual" not in mods


def test_the_tui_start_builds_no_parser_and_loads_no_subcommand():
    """`console` (and `console --config F --read-only`) goes to the TUI without the argument
    parser: building it imports every subcommand's module, none of which the first frame draws."""
    code = (
        "import sys\nimport console.commands.tui as tui\n"
        "seen = {}\n"
        "def run_tui(args):\n"
        "    seen.update(vars(args))\n"
        "    print('\\n'.join(m for m in sorted(sys.modules) if m.startswith('console.commands.')))\n"
        "    return 0\n"
        "tui.run_tui = run_tui\n"
        "from console.cli import main\n"
        "assert main(['--config', 'c.toml', '--read-only']) == 0\n"
        "assert seen == {'command': None, 'config': 'c.toml', 'read_only': True}, seen\n"
    )
    # without coverage's own start-up in the child (it imports sqlite3 and hashlib for its data file)
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_PROCESS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert set(out.split()) <= {"console.commands.tui", "console.commands._common"}, out


FIRST_FRAME_PATH = (
    "import console.cli, console.commands, console.commands.tui, console.commands._common, "
    "console.config, console.ui.app"
)
"""What `console` imports before Textual paints its first frame (the screens, the jobs tab)."""
OFF_THE_FIRST_FRAME = (
    "console.jobspec", "console.costs", "console.ship", "console.vram", "console.cron",
    "console.ui.actions", "ctypes", "zipfile", "pkgutil", "argparse", "shlex", "sqlite3", "_hashlib",
    "console.ui.refresh_read", "console.ui.watch", "console.ui.reasons", "console.ui.live_versions",
    "console.ui.refresh_keep", "console.ui.oncall_marks",
)
"""What the first frame draws nothing from: a submission's spec and cost model, the action keys'
code, the parser, `malloc_trim`'s ctypes, importlib.resources' zip reader, SQLite (a fresh start
has no cache to open), OpenSSL's hashes, the refresh's read (its first refresh comes after the
first frame), the on-call watch and the marks it puts on jobs, the failure reasons, the live
adapter versions and what a read keeps where nothing changed (`refresh_keep`). They load on first
use, after the first frame."""


def test_the_first_frame_path_leaves_out_what_it_does_not_draw():
    code = f"import sys\n{FIRST_FRAME_PATH}\nprint('\\n'.join(sorted(sys.modules)))"
    # without coverage's own start-up in the child (it imports sqlite3 and hashlib for its data file)
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_PROCESS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    loaded = set(out.split())
    early = sorted(m for m in loaded if m in OFF_THE_FIRST_FRAME or m.startswith("console.ui.actions."))
    assert not early, f"imported before the first frame: {early}"
