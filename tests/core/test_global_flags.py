"""Global flags hold wherever they are typed: before the subcommand, after it, or both.

A subcommand's own copy of a global flag must never put back the default over what was typed
before the subcommand (`console --read-only fleet apply FILE` once applied the file).
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from console.cli import build_parser


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """Every runnable command path, with the positionals it needs filled in."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        fill: list[str] = []
        for action in parser._actions:
            if action.option_strings or action.dest in ("help",):
                continue
            if action.nargs in ("?", "*", argparse.REMAINDER):
                continue
            value = str(next(iter(action.choices))) if action.choices else "x"
            count = action.nargs if isinstance(action.nargs, int) else 1
            fill += [value] * count
        required = [a for a in parser._actions if a.option_strings and a.required]
        for action in required:
            fill += [action.option_strings[0], str(next(iter(action.choices))) if action.choices else "x"]
        yield path, fill
        return
    for name, child in subs[0].choices.items():
        if name in {p for p in path}:
            continue
        yield from _leaves(child, (*path, name))


PARSER = build_parser()
LEAVES = sorted({path: fill for path, fill in _leaves(PARSER)}.items())


def test_every_command_is_enumerated():
    names = {path[0] for path, _ in LEAVES}
    assert {"config", "fleet", "incident", "whatif", "ledger", "server"} <= names
    assert len(LEAVES) > 15


@pytest.mark.parametrize(("path", "fill"), LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
@pytest.mark.parametrize("where", ["before", "after"])
def test_global_flags_survive_the_subcommand(path, fill, where, tmp_path):
    config = str(tmp_path / "mine.toml")
    flags = ["--read-only", "--config", config]
    argv = [*flags, *path, *fill] if where == "before" else [*path, *flags, *fill]
    args = PARSER.parse_args(argv)
    assert args.read_only is True, f"--read-only typed {where} `{' '.join(path)}` was lost"
    assert args.config == config, f"--config typed {where} `{' '.join(path)}` was lost"


@pytest.mark.parametrize(("path", "fill"), LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_no_flag_means_the_defaults(path, fill):
    args = PARSER.parse_args([*path, *fill])
    assert args.read_only is False
    assert args.config is None


def _console(*argv: str, env_home) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "HOME": str(env_home), "XDG_CONFIG_HOME": str(env_home / "cfg")}
    env.pop("CONSOLE_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "console", *argv], capture_output=True, text=True, timeout=60, env=env)


def test_config_path_prints_the_config_named_before_the_subcommand(tmp_path):
    mine = tmp_path / "elsewhere.toml"
    done = _console("--config", str(mine), "config", "path", env_home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(mine)


def test_read_only_before_fleet_apply_changes_nothing(tmp_path):
    from pathlib import Path

    fleet = Path(__file__).resolve().parents[2] / "training" / "fleet.example.toml"
    done = _console("--read-only", "fleet", "apply", str(fleet), env_home=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "read-only" in done.stderr
