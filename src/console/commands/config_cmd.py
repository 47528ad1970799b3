"""`console config`: create, show and change the local TOML config (never a token)."""

from __future__ import annotations

import argparse
import json


def register(sub, add_common) -> None:
    p = sub.add_parser("config", help="create, show or change the local config file")
    add_common(p)
    csub = p.add_subparsers(dest="config_command", metavar="ACTION")
    init = csub.add_parser("init", help="write a config file (the keys given; the rest keep their defaults)")
    add_common(init)
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.add_argument("--namespace", help="HF user or org the jobs run under")
    init.add_argument("--plan", help="free | pro | team | enterprise")
    init.add_argument("--backend", help="local | hub")
    init.set_defaults(handler=_init)
    show = csub.add_parser("show", help="print the config in effect")
    add_common(show)
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=_show)
    path = csub.add_parser("path", help="print the config file's path")
    add_common(path)
    path.set_defaults(handler=_path)
    keys = csub.add_parser("keys", help="list every key with its default and meaning")
    add_common(keys)
    keys.set_defaults(handler=_keys)
    set_ = csub.add_parser("set", help="set one key (e.g. `console config set plan team`)")
    add_common(set_)
    set_.add_argument("key")
    set_.add_argument("value")
    set_.set_defaults(handler=_set)
    unset = csub.add_parser("unset", help="put one key back to its default")
    add_common(unset)
    unset.add_argument("key")
    unset.set_defaults(handler=_unset)
    p.set_defaults(handler=_show, json=False)


def _target(args: argparse.Namespace):
    from pathlib import Path

    from console import paths

    return Path(args.config).expanduser() if getattr(args, "config", None) else paths.default_config_path()


_INIT_HEADER = """\
# The console's config. Only the keys set here differ from the defaults;
# `console config keys` lists every key with its default and meaning.
"""


def _init(args: argparse.Namespace) -> int:
    from console import config as cfgmod
    from console.commands._common import CommandError

    target = _target(args)
    if target.exists() and not args.force:
        raise CommandError(f"{target} already exists (use --force to overwrite it)")
    cfg = cfgmod.Config(path=target, _text=_INIT_HEADER)
    try:
        for key in ("namespace", "plan", "backend"):
            value = getattr(args, key)
            if value is not None:
                cfgmod.set_value(cfg, key, json.dumps(value))
        try:
            cfgmod.save(cfg, target)
        except OSError as exc:
            raise CommandError(f"{target}: not written: {exc.strerror or exc}") from None
    except cfgmod.ConfigError as exc:
        raise CommandError(str(exc)) from None
    print(f"wrote {target}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from console import config as cfgmod
    from console.commands._common import load_config

    cfg = load_config(args)
    values = {key: cfgmod._get_attr(cfg, key) for key in cfgmod.SCHEMA}
    exists = bool(cfg.path and cfg.path.exists())
    if getattr(args, "json", False):
        print(json.dumps({"path": str(cfg.path), "exists": exists, "values": values}, indent=2))
        return 0
    print(f"# {cfg.path}{'' if exists else ' (not written yet: defaults in effect)'}")
    for key, value in values.items():
        print(f"{key} = {'(unset)' if value is None else json.dumps(value)}")
    return 0


def _path(args: argparse.Namespace) -> int:
    print(_target(args))
    return 0


def _keys(args: argparse.Namespace) -> int:
    """One row per key in three aligned columns; on a terminal (or with COLUMNS set) the meaning
    wraps under its own column, or below the row, indented, when that column would be too narrow."""
    import os
    import shutil
    import sys
    import textwrap

    from console.config import describe_keys

    rows = describe_keys()
    key_w = max(len(key) for key, _, _ in rows)
    default_w = max(len(default) for _, default, _ in rows)
    indent = " " * (key_w + default_w + 4)
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() or os.environ.get("COLUMNS") else 0
    if 0 < width - len(indent) < 30:  # a narrow terminal: the meaning goes below its row
        indent = "    "
    for key, default, doc in rows:
        head = f"{key:<{key_w}}  {default:<{default_w}}  "
        if not width:  # piped: one line per key, for grep
            print(f"{head}{doc}".rstrip())
            continue
        lines = textwrap.wrap(doc, max(20, width - len(indent)), break_long_words=False, break_on_hyphens=False)
        below = len(indent) < len(head)
        print(head.rstrip() if below else f"{head}{lines[0] if lines else ''}".rstrip())
        for line in lines if below else lines[1:]:
            print(indent + line)
    return 0


def _set(args: argparse.Namespace) -> int:
    return _change(args, lambda cfgmod, cfg: cfgmod.set_value(cfg, args.key, args.value))


def _unset(args: argparse.Namespace) -> int:
    return _change(args, lambda cfgmod, cfg: cfgmod.unset_value(cfg, args.key))


def _change(args: argparse.Namespace, apply) -> int:
    from console import config as cfgmod
    from console.commands._common import CommandError, load_config

    cfg = load_config(args)
    try:
        apply(cfgmod, cfg)
        if args.key.startswith("keys."):  # the app's own check: a known id, no clash
            from console.ui.keys import user_keymap

            user_keymap(cfg)
        if args.key == "theme":  # one of Textual's themes
            from textual.theme import BUILTIN_THEMES

            from console.ui.keys import check_theme

            check_theme(cfg, BUILTIN_THEMES)
        path = cfgmod.save(cfg)
    except cfgmod.ConfigError as exc:
        msg = str(exc)
        where = str(cfg.path)
        raise CommandError(msg if msg.startswith(where) else f"{where}: {msg}") from None
    except OSError as exc:  # a full disk, a read-only folder: the file is left as it was
        raise CommandError(f"{cfg.path}: not saved: {exc.strerror or exc}") from None
    value = cfgmod._get_attr(cfg, args.key)
    print(f"{args.key} = {'(unset)' if value is None else json.dumps(value)}  ({path})")
    return 0
