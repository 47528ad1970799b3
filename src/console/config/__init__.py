"""The console's local TOML config: preferences (namespace, plan, backend, defaults), never the fleet.

Every key is declared once in :mod:`console.config.schema` (its type, bounds, default and
description, as msgspec Structs); this module reads, checks and writes the file by those
declarations. Read with `tomllib`; written by editing the file's own text with `tomlkit`, so a save
changes only the keys that changed (comments, blank lines, order and keys the console does not know
are kept, and a key left at its default is not written), atomically (temp file, fsync, rename), so
a crash mid-save leaves the old file intact. Any problem is a :class:`ConfigError` whose one-line
message names the file, the line/column or key, and what was expected; a file with an error is
never rewritten. The config never holds a token: authentication is huggingface_hub's own
(`HF_TOKEN`, `hf auth login`).
"""

import copy
import os
import re
import tempfile
import tomllib
from pathlib import Path
from typing import Any, NoReturn

import msgspec

from console import declared, paths
from console.config.schema import (
    BACKENDS,
    KEY_ENTRY,
    NOTIFY_DESKTOP,
    SCHEMA,
    SECTIONS,
    SERVER_PYTHON_MODES,
    BillingSettings,
    Defaults,
    NotifySettings,
    ServerSettings,
    Settings,
    TrackioSettings,
    _default_namespace,
    describe_keys,
    markdown_table,
)
from console.inputs import MIB, read_user_file
from console.prices import PriceBook, shipped_price_book

__all__ = [
    "BACKENDS", "NOTIFY_DESKTOP", "SCHEMA", "SECTIONS", "SERVER_PYTHON_MODES", "BillingSettings", "Config",
    "ConfigError", "Defaults", "NotifySettings", "ServerSettings", "TrackioSettings", "describe_keys",
    "load", "markdown_table", "parse_value", "price_book", "save", "set_value", "unset_value",
]

CONFIG_MAX_BYTES = 1 * MIB
"""The config is a few KiB; a file (or device, or FIFO) named as one beyond this is not read."""
# Keys that look like they hold a credential are refused: auth is huggingface_hub's own.
_SECRET_WORDS = ("token", "secret", "password", "api_key", "apikey")


class ConfigError(ValueError):
    """A config file that cannot be used; the message is one line, ready to show."""


class Config(Settings):
    """The settings (:class:`console.config.schema.Settings`) and the file they were read from."""

    path: Path | None = None
    """The file this config was read from (None for pure defaults)."""
    _raw: dict[str, Any] = msgspec.field(default_factory=dict)
    """The parsed document it was read from."""
    _text: str | None = None
    """The text of the file this config was read from (None when there was no file)."""
    _unset: set[str] = msgspec.field(default_factory=set)
    """Keys put back to their defaults since it was read: their lines go at the next save."""

    def __eq__(self, other: object) -> bool:  # the settings, not where they were read from
        return isinstance(other, Config) and all(
            getattr(self, name) == getattr(other, name) for name in Settings.__struct_fields__
        )

    def to_toml_text(self) -> str:
        """The file to write: the text it was read from with only the changed keys edited.

        Comments, blank lines, order and keys the console does not know stay as they are; a key
        whose value did not change keeps its line as written; a key at its default that the file
        does not hold is not written; an unset key's line is removed."""
        import tomlkit

        if self._text is not None:
            doc = tomlkit.parse(self._text)
        else:  # read from a dict, or no file yet
            doc = tomlkit.document()
            doc.update(copy.deepcopy(self._raw))
        default = Config()
        for key in SCHEMA:
            section, _, name = key.rpartition(".")
            held = self._raw.get(section, {}) if section else self._raw
            value = _get_attr(self, key)
            if key in self._unset or value is None:
                _toml_remove(doc, section, name)
            elif name in held:
                try:
                    same = _check(key, held[name]) == value
                except TypeError:
                    same = False
                if not same:
                    _toml_put(doc, section, name, value)
            elif value != _get_attr(default, key):
                _toml_put(doc, section, name, value)
        held_keys = self._raw.get("keys", {})
        for action in held_keys:
            if action not in self.keys:
                _toml_remove(doc, "keys", action)
        for action, value in self.keys.items():
            try:
                same = action in held_keys and _check("keys.", held_keys[action]) == value
            except TypeError:
                same = False
            if not same:
                _toml_put(doc, "keys", action, value)
        return tomlkit.dumps(doc)



def _toml_put(doc: Any, section: str, name: str, value: Any) -> None:
    """Set `name` in the tomlkit document's top level or `[section]` (added at the end if missing)."""
    import tomlkit

    if not section:
        doc[name] = value
        return
    if section not in doc:
        doc.add(section, tomlkit.table())
    doc[section][name] = value


def _toml_remove(doc: Any, section: str, name: str) -> None:
    table = doc.get(section) if section else doc
    if table is not None and name in table:
        del table[name]


def namespace_is_set(cfg: Config) -> bool:
    """Whether the namespace was chosen (in the file, or given in code) rather than left at its
    default, the OS user name: on the hub an unchosen namespace is the token's user (`whoami`)."""
    return "namespace" in cfg._raw or cfg.namespace != _default_namespace()


def _get_attr(cfg: Config, key: str) -> Any:
    if _keymap_entry(key):
        return cfg.keys.get(key.removeprefix("keys."))
    obj: Any = cfg
    for part in key.split("."):
        obj = getattr(obj, part)
    return obj


def _set_attr(cfg: Config, key: str, value: Any) -> None:
    obj: Any = cfg
    parts = key.split(".")
    for part in parts[:-1]:
        obj = getattr(obj, part)
    setattr(obj, parts[-1], value)


def _where(path: Path | None) -> str:
    return str(path) if path else "config"


def from_dict(doc: dict[str, Any], path: Path | None = None) -> Config:
    """Validate a parsed TOML document into a Config (raises ConfigError on the first problem).

    The declared keys go to msgspec in one conversion (types, bounds, choices); the rules no type
    says (a URL's parts, a Hub id's `{tenant}`) run on what it kept; either's refusal becomes one
    line naming the key, the value and what the declaration expects."""
    where = _where(path)
    for section in SECTIONS:
        if section in doc and not isinstance(doc[section], dict):
            raise ConfigError(f"{where}: key '{section}': expected a table [{section}]")
    _refuse_secrets(doc, where, "")
    known = {name: value for name, value in doc.items() if name in Settings.__struct_fields__}
    try:
        settings = msgspec.convert({**known, "keys": {}}, Settings, strict=True)
    except msgspec.ValidationError as exc:
        key = _key_at(str(exc))
        _refuse(where, key, _value_at(doc, key))
    cfg = Config(path=path, _raw=copy.deepcopy(doc))
    for key, f in SCHEMA.items():
        section, _, name = key.rpartition(".")
        table = doc.get(section, {}) if section else doc
        if name in table:
            own = f.extra.get("check")
            value = _get_attr(settings, key)
            try:
                _set_attr(cfg, key, own(value) if own is not None and value is not None else value)
            except TypeError:
                _refuse(where, key, table[name])
    for action, value in doc.get("keys", {}).items():
        try:
            cfg.keys[action] = _check("keys.", value)
        except TypeError:
            _refuse(where, f"keys.{action}", value)
    return cfg


def _check(key: str, value: Any) -> Any:
    """`value` as the config keeps it for `key` (`keys.` for an entry of the `[keys]` table)."""
    return declared.check(KEY_ENTRY if key.startswith("keys.") else SCHEMA[key], value)


def _refuse(where: str, key: str, value: Any) -> NoReturn:
    """Raise the one-line ConfigError for `value` at `key`: what the key's declaration expects."""
    f = KEY_ENTRY if key.startswith("keys.") else SCHEMA.get(key)
    try:
        if f is not None:
            declared.check(f, value)
        what = declared.expected(f) if f is not None else "a value"
    except TypeError as exc:  # the key's own rule says more than its declaration's words
        what = str(exc)
    prefix = f"{where}: " if where else ""
    raise ConfigError(f"{prefix}key '{key}': expected {what}, got {_show(value)}")


_PATH_RE = r" - at `\$\.([\w.]+)"
"""Where a msgspec ValidationError points (compiled by `re` on the first error, not at import)."""


def _key_at(message: str) -> str:
    """The dotted key a msgspec ValidationError points at (`$.defaults.flavor` -> defaults.flavor)."""
    m = re.search(_PATH_RE, message)
    return m.group(1) if m else "?"


def _value_at(doc: dict[str, Any], key: str) -> Any:
    section, _, name = key.rpartition(".")
    table = doc.get(section, {}) if section else doc
    return table.get(name) if isinstance(table, dict) else table


def _refuse_secrets(doc: dict[str, Any], where: str, prefix: str) -> None:
    for key, value in doc.items():
        full = f"{prefix}{key}"
        if any(word in key.lower() for word in _SECRET_WORDS):
            raise ConfigError(
                f"{where}: key '{full}': the config never holds credentials; "
                "use HF_TOKEN or `hf auth login`"
            )
        if isinstance(value, dict):
            _refuse_secrets(value, where, f"{full}.")


_CREDENTIALS_RE = r"(://)[^/@\s]*@"
"""A URL's `user:password@` (compiled by `re` on the first error message, not at import)."""


def _show(value: Any) -> str:
    """A value for an error message: short, and a URL's `user:password@` never shown."""
    text = re.sub(_CREDENTIALS_RE, r"\1***@", repr(value))
    return text if len(text) <= 60 else text[:57] + "..."


def load(path: Path | str | None = None) -> Config:
    """Read the config at `path` (or the default location). A missing file means defaults."""
    p = Path(path).expanduser() if path else paths.default_config_path()
    try:
        data = read_user_file(p, max_bytes=CONFIG_MAX_BYTES)
    except FileNotFoundError:
        return Config(path=p)
    except OSError as exc:
        raise ConfigError(f"{p}: cannot be read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: byte {exc.start}: expected UTF-8 text") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: {_toml_error(exc, text)}") from None
    except RecursionError:  # a hostile file: arrays nested thousands deep
        raise ConfigError(f"{p}: arrays or tables nested too deeply (expected valid TOML)") from None
    cfg = from_dict(doc, p)
    cfg._text = text
    return cfg


def _toml_error(exc: tomllib.TOMLDecodeError, text: str) -> str:
    # Python 3.11's message is "Invalid value (at line 3, column 7)"; put the place first.
    msg = str(exc)
    if msg.endswith("(at end of document)"):
        lines = text.splitlines() or [""]
        head = msg[: -len(" (at end of document)")]
        return f"line {len(lines)}, column {len(lines[-1]) + 1} (end of file): {head} (expected valid TOML)"
    lineno = getattr(exc, "lineno", None)
    colno = getattr(exc, "colno", None)
    if lineno is None and "(at line " in msg:
        head, _, tail = msg.rpartition(" (at ")
        return f"{tail.rstrip(')')}: {head} (expected valid TOML)"
    if lineno is not None:
        base = getattr(exc, "msg", msg)
        return f"line {lineno}, column {colno}: {base} (expected valid TOML)"
    return f"{msg} (expected valid TOML)"


def save(cfg: Config, path: Path | str | None = None) -> Path:
    """Write the config atomically, the one writer of the file: the text it was read from with only
    the changed keys edited (:meth:`Config.to_toml_text`)."""
    p = Path(path).expanduser() if path else (cfg.path or paths.default_config_path())
    text = cfg.to_toml_text()
    doc = tomllib.loads(text)
    from_dict(doc, p)  # never write what we would refuse to read
    payload = text.encode("utf-8")
    # A symlinked config (dotfiles kept in a repo) is written through the link: replacing the link
    # with a file would silently fork the config from the file the user edits.
    target = Path(os.path.realpath(p)) if p.is_symlink() else p
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(target, payload)
    cfg.path, cfg._text, cfg._raw = p, text, doc
    cfg._unset.clear()
    return p


def atomic_write_bytes(path: Path, payload: bytes, mode: int = 0o600) -> None:
    """Write via a temp file in the same folder, fsync, then rename over `path`."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _keymap_entry(key: str) -> bool:
    """`keys.<binding id>`: one entry of the `[keys]` table."""
    return key.startswith("keys.") and bool(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", key[5:]))


def parse_value(key: str, text: str) -> Any:
    """Turn the text of `console config set KEY VALUE` into a checked value."""
    if not _keymap_entry(key) and key not in SCHEMA:
        raise ConfigError(f"unknown key '{key}'; known keys: {', '.join(SCHEMA)}")
    try:
        value: Any = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        value = text  # a bare word: treat as a string
    try:
        return _check(key, value)
    except TypeError:
        return _refuse("", key, value)


def set_value(cfg: Config, key: str, text: str) -> None:
    if _keymap_entry(key):
        cfg.keys[key.removeprefix("keys.")] = parse_value(key, text)
        return
    _set_attr(cfg, key, parse_value(key, text))
    cfg._unset.discard(key)


def unset_value(cfg: Config, key: str) -> None:
    if _keymap_entry(key):
        cfg.keys.pop(key.removeprefix("keys."), None)
        return
    if key not in SCHEMA:
        raise ConfigError(f"unknown key '{key}'; known keys: {', '.join(SCHEMA)}")
    default = Config()
    _set_attr(cfg, key, copy.deepcopy(_get_attr(default, key)))
    cfg._unset.add(key)


def price_book(cfg: Config) -> PriceBook:
    """The shipped prices, billed as the config says (`billing.granularity`)."""
    return shipped_price_book(cfg.billing.granularity)
