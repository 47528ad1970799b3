"""The console's local TOML config: preferences (namespace, plan, backend, defaults), never the fleet.

Read with `tomllib`; written by editing the file's own text with `tomlkit`, so a save changes only
the keys that changed (comments, blank lines, order and keys the console does not know are kept, and
a key left at its default is not written), atomically (temp file, fsync, rename), so a crash
mid-save leaves the old file intact. Any problem is a
:class:`ConfigError` whose one-line message names the file, the line/column or key, and what was
expected; a file with an error is never rewritten. The config never holds a token: authentication is
huggingface_hub's own (`HF_TOKEN`, `hf auth login`).

Each key is declared once, as a field of its table's dataclass (:func:`setting`): its type, its
default, its check and, in the docstring under it, its description. :data:`SCHEMA` (the dotted keys
`console config set` takes), the file's reading and writing and `console config keys` are all read
off those declarations, and tests/core/test_docs.py holds the table of docs/configuration.md to
them. Why one module of over 500 lines: every key's rules in one place; split by table, one key's
rules would live apart from its neighbours' (one truth per setting).
"""

from __future__ import annotations

import copy
import getpass
import math
import os
import re
import tempfile
import tomllib
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from console import paths
from console.inputs import MIB, bucket_id_problem, is_label_name, read_user_file
from console.prices import (
    BILLING_GRANULARITIES,
    DEFAULT_TIMEOUT_BUFFER,
    DEFAULT_TIMEOUT_OVERHEAD_S,
    PLANS,
    SHIPPED_FLAVORS,
    PriceBook,
    shipped_price_book,
)

BACKENDS = ("local", "hub")
CONFIG_MAX_BYTES = 1 * MIB
"""The config is a few KiB; a file (or device, or FIFO) named as one beyond this is not read."""
SERVER_PYTHON_MODES = ("self", "uv", "auto")
_FLAVOR_NAMES = tuple(f.name for f in SHIPPED_FLAVORS)
# Keys that look like they hold a credential are refused: auth is huggingface_hub's own.
_SECRET_WORDS = ("token", "secret", "password", "api_key", "apikey")


class ConfigError(ValueError):
    """A config file that cannot be used; the message is one line, ready to show."""


def setting(default: Any = None, check: Callable[[Any], Any] | None = None, **kw: Any) -> Any:
    """A config key declared in its dataclass: its default and the check a value read from the
    file or typed in `console config set` goes through (a TypeError saying what was expected); the
    docstring under the field is its description. :data:`SCHEMA` is read off these."""
    meta = {"check": check}
    if "default_factory" in kw:
        return field(default_factory=kw["default_factory"], metadata=meta)
    return field(default=default, metadata=meta)


# -- the checks (each raises TypeError with what was expected) -------------------------------------


def _expect_str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("a string")
    return value


def _namespace(value: Any) -> str:
    s = _expect_str(value)
    ok = s and len(s) <= 96 and all(ch.isalnum() or ch in "-_." for ch in s)
    if not ok:
        raise TypeError("a user or org name (letters, digits, '-', '_', '.'; at most 96)")
    return s


def _choice(options: tuple[str, ...]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if not isinstance(value, str) or value not in options:
            raise TypeError("one of " + " | ".join(options))
        return value

    return check


def _int_range(lo: int, hi: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise TypeError(f"a whole number from {lo} to {hi}")
        return value

    return check


def _float_range(lo: float, hi: float) -> Callable[[Any], float]:
    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"a number from {lo:g} to {hi:g}")
        v = float(value)
        if not math.isfinite(v) or not lo <= v <= hi:
            raise TypeError(f"a number from {lo:g} to {hi:g}")
        return v

    return check


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("true or false")
    return value


def _endpoint(value: Any) -> str:
    s = _expect_str(value)
    if not (s.startswith("http://") or s.startswith("https://")) or len(s) > 2048:
        raise TypeError("an http:// or https:// URL")
    if any(ch.isspace() or not ch.isprintable() for ch in s):
        raise TypeError("an http:// or https:// URL with no spaces, newlines or control characters")
    parts = urllib.parse.urlsplit(s)
    if "@" in parts.netloc:
        raise TypeError("a URL without user:password@ (the token goes in `hf auth login` or "
                        "HF_TOKEN, never in the config)")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if not parts.hostname or port == 0:
        raise TypeError("an http:// or https:// URL with a host and a port from 1 to 65535")
    return s.rstrip("/")


def _flavor(value: Any) -> str:
    if not isinstance(value, str) or value not in _FLAVOR_NAMES:
        raise TypeError("a known flavor (" + ", ".join(_FLAVOR_NAMES[:6]) + ", ...)")
    return value


def _env_label(value: Any) -> str:
    s = _expect_str(value)
    if not is_label_name(s):
        raise TypeError("a label value (letters, digits, '-', '_'; at most 63: HF refuses '.' in labels)")
    return s


_REPO_ID_RE = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")


def _hub_template(value: Any) -> str:
    s = _expect_str(value)
    sample = s.replace("{tenant}", "tenant")
    if "{tenant}" not in s or not _REPO_ID_RE.fullmatch(sample) or "--" in sample or ".." in sample:
        raise TypeError('a Hub model id with {tenant} in it, like "org/adapter-{tenant}"')
    return s


def _bucket_id(value: Any) -> str:
    s = _expect_str(value)
    if bucket_id_problem(s):
        raise TypeError("a bucket id like 'org/datasets-cache'")
    return s


def _space_id(value: Any) -> str:
    s = _expect_str(value)
    parts = s.split("/")
    if len(parts) != 2 or not all(parts) or len(s) > 200:
        raise TypeError("a Space id like 'org/trackio'")
    return s


def _webhook(value: Any) -> str:
    s = _expect_str(value)
    if not (s.startswith("http://") or s.startswith("https://")) or len(s) > 2048 or any(
        ch.isspace() for ch in s
    ):
        raise TypeError("an http:// or https:// URL")
    return s


def _webhooks(value: Any) -> list[str]:
    if not isinstance(value, list) or len(value) > 20:
        raise TypeError("a list of at most 20 http:// or https:// URLs")
    return [_webhook(v) for v in value]


_THEME_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def _theme(value: Any) -> str:
    s = _expect_str(value)
    if not _THEME_RE.fullmatch(s):
        raise TypeError("a Textual theme name such as 'textual-dark', 'nord' or 'gruvbox'")
    return s


_KEY_RE = re.compile(r"[^\s,]{1,40}")


def _key_list(value: Any) -> str:
    """A `[keys]` entry: one key, "a,b", or a list of keys -> Textual's "a,b" form (the app checks
    each key's name and clashes when it starts)."""
    items = value if isinstance(value, list) else value.split(",") if isinstance(value, str) else None
    if items is None:
        items = [None]
    keys = [k.strip() if isinstance(k, str) else k for k in items]
    if not keys or len(keys) > 8 or not all(isinstance(k, str) and _KEY_RE.fullmatch(k) for k in keys):
        raise TypeError('a key or a list of keys, e.g. "ctrl+q", "f1" or ["?", "f1"]')
    return ",".join(keys)


def _project(value: Any) -> str:
    s = _expect_str(value)
    if not s or len(s) > 100 or "/" in s:
        raise TypeError("a project name (no '/', at most 100 characters)")
    return s



@dataclass
class Defaults:
    """Defaults for new submissions."""

    flavor: str = setting("l4x1", _flavor)
    """Hardware flavor for a training job (reference §3: l4x1 is the best $/perf for tenant adapters)."""
    timeout_buffer: float = setting(DEFAULT_TIMEOUT_BUFFER, _float_range(1.0, 5.0))
    """Timeout = (estimated time + timeout_overhead_s) x this (reference: x 1.3)."""
    timeout_overhead_s: int = setting(DEFAULT_TIMEOUT_OVERHEAD_S, _int_range(0, 6 * 3600))
    """Seconds added to every training estimate before the buffer: the environment install (~48 s
    for a cold `uv run`), model and dataset downloads, the Hub push."""
    env: str = setting("dev", _env_label)
    """The `env=` label put on every job the console starts."""
    hub_model_id: str | None = setting(None, _hub_template)
    """Where a tenant's adapter is pushed when neither the tenant nor the fleet file says: a Hub
    model id with {tenant} in it, e.g. "org/adapter-{tenant}". A run on HF Jobs with no
    destination is refused (its container's disk is thrown away)."""
    datasets_cache: str | None = setting(None, _bucket_id)
    """A bucket (e.g. "org/datasets-cache") mounted read-write at /data in every run of a Hub
    dataset, with HF_DATASETS_CACHE=/data/datasets, so a run does not download its dataset again
    (the training reference: the container's own cache is thrown away with it). Created if missing."""


@dataclass
class TrackioSettings:
    """Where training metrics go."""

    project: str = setting("console", _project)
    """Trackio project the training scripts log to."""
    space_id: str | None = setting(None, _space_id)
    """A HF Space (`org/trackio`) every run on HF Jobs logs to (fleet, form, rerun, trigger), so its
    metrics outlive the job's container; the console reads them back from it. Local runs use the
    server's own Trackio store."""


@dataclass
class ServerSettings:
    """The embedded Jobs server (backend = "local")."""

    port: int = setting(0, _int_range(0, 65535))
    """Port on 127.0.0.1; 0 picks a free one."""
    max_running_jobs: int = setting(2, _int_range(1, 64))
    """Jobs running at once; the rest wait in SCHEDULING. Each job's OpenMP / MKL threads default
    to its share of the cores (the cores over this number)."""
    python: str = setting("self", _choice(SERVER_PYTHON_MODES))
    """How `uv run SCRIPT` commands run: "self" (the server's own Python environment), "uv" (real uv),
    "auto" (uv when installed, else self)."""


@dataclass
class BillingSettings:
    """How the console turns a job's running time into money."""

    granularity: str = setting("minute", _choice(BILLING_GRANULARITIES))
    """minute: each job's running time rounded up to whole minutes, as HF Jobs bills ("per minute
    while Starting/Running", reference §1); second: exact, to compare with a bill that is."""


NOTIFY_DESKTOP = ("off", "osc9", "osc777")


@dataclass
class NotifySettings:
    """On-call notifications (`console watch` and the app): which events, and where they go."""

    bell: bool = setting(False, _bool)
    """Ring the terminal bell on each notification."""
    desktop: str = setting("off", _choice(NOTIFY_DESKTOP))
    """A desktop notification by terminal escape: off | osc9 (iTerm2, WezTerm, kitty, Windows
    Terminal, foot) | osc777 (VTE terminals such as GNOME Terminal). Inside tmux they pass through
    only with `set -g allow-passthrough on`."""
    webhook_url: str | None = setting(None, _webhook)
    """POST each notification here: Slack and Discord webhook URLs get their own message format,
    any other URL the event as a JSON object."""
    webhook_urls: list[str] = setting(check=_webhooks, default_factory=list)
    """More webhooks, as a list: ["https://hooks.slack.com/services/...", "https://example.com/hook"]."""
    webhook_timeout_s: float = setting(5.0, _float_range(0.5, 60))
    """Seconds one webhook POST may take before it is given up (it never holds up the console)."""
    stall_after_s: int = setting(600, _int_range(10, 7 * 86400))
    """A RUNNING job with no new log line, no new Trackio step and about-zero CPU for this long is
    stalled (and still billing)."""
    stall_cpu_pct: float = setting(1.0, _float_range(0, 100))
    """CPU use (percent of the job's machine, as the Jobs metrics report it) at or under which a
    job counts as idle."""
    scheduling_after_s: int = setting(1800, _int_range(60, 7 * 86400))
    """A job waiting in SCHEDULING (no free machine of its flavor) longer than this is notified,
    once, with its flavor and how long it has waited."""
    schedule_failures: int = setting(3, _int_range(1, 1000))
    """A schedule whose runs failed this many times in a row is flagged (`console watch`, the TUI)
    and notified once, until one of its runs passes again."""
    stale_live_periods: int = setting(3, _int_range(0, 1000))
    """A scheduled tenant whose live adapter version is older than this many of its schedule's
    periods (its runs keep not becoming live) is flagged and notified once per live version; 0: off."""
    osc52: bool = setting(False, _bool)
    """Put an incident bundle's path on the terminal's clipboard (OSC 52) when one is written."""


@dataclass
class Config:
    namespace: str = setting(check=_namespace, default_factory=lambda: _default_namespace())
    """The HF user or org that jobs run under (and that `whoami` answers locally). Unset on the hub
    backend: the token's user, from `whoami`; one the token cannot use is refused."""
    plan: str = setting("pro", _choice(tuple(PLANS)))
    """free | pro | team | enterprise. Jobs need a paid plan."""
    seats: int = setting(1, _int_range(1, 100_000))
    """Seats on the plan; the plan floor is seats x the plan's price for team / enterprise."""
    backend: str = setting("local", _choice(BACKENDS))
    """local (the embedded Jobs server) or hub (huggingface.co)."""
    endpoint: str | None = setting(None, _endpoint)
    """Override the backend's URL (e.g. a shared `console serve` on another port)."""
    monthly_budget_usd: float | None = setting(None, _float_range(0, 1e9))
    """Warn when the month's projection exceeds this."""
    budget_action: str = setting("warn", _choice(("warn", "suspend")))
    """What the month's projection passing `monthly_budget_usd` does: warn (an on-call event), or
    suspend schedules, the most expensive this month first, until it fits (said once; `console
    budget undo` or `U` on the Costs tab resumes them)."""
    read_only: bool = setting(False, _bool)
    """Refuse every action that changes anything."""
    theme: str | None = setting(None, _theme)
    """The TUI's colours: a Textual theme (textual-dark, textual-light, nord, gruvbox, dracula,
    tokyo-night, monokai, solarized-light, ...); unset is Textual's default."""
    keys: dict[str, str] = field(default_factory=dict)
    """The `[keys]` table: a binding's id -> its key(s), e.g. `quit = "ctrl+q"`,
    `help = ["?", "f1"]` (ids in docs/keys.md); checked against the app's keys when it starts."""
    defaults: Defaults = field(default_factory=Defaults)
    trackio: TrackioSettings = field(default_factory=TrackioSettings)
    server: ServerSettings = field(default_factory=ServerSettings)
    billing: BillingSettings = field(default_factory=BillingSettings)
    notify: NotifySettings = field(default_factory=NotifySettings)
    path: Path | None = field(default=None, compare=False)
    """The file this config was read from (None for pure defaults)."""
    _raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    _text: str | None = field(default=None, compare=False, repr=False)
    """The text of the file this config was read from (None when there was no file)."""
    _unset: set[str] = field(default_factory=set, compare=False, repr=False)
    """Keys put back to their defaults since it was read: their lines go at the next save."""

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
        for key, check in SCHEMA.items():
            section, _, name = key.rpartition(".")
            held = self._raw.get(section, {}) if section else self._raw
            value = _get_attr(self, key)
            if key in self._unset or value is None:
                _toml_remove(doc, section, name)
            elif name in held:
                try:
                    same = check(held[name]) == value
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
                same = action in held_keys and _key_list(held_keys[action]) == value
            except TypeError:
                same = False
            if not same:
                _toml_put(doc, "keys", action, value)
        return tomlkit.dumps(doc)


SECTIONS = ("defaults", "trackio", "server", "billing", "notify", "keys")


def _declared(cls: type, prefix: str = "") -> dict[str, Callable[[Any], Any]]:
    return {f"{prefix}{f.name}": f.metadata["check"] for f in fields(cls) if f.metadata.get("check")}


_TABLES: dict[str, type] = {f.name: f.default_factory for f in fields(Config) if f.name in SECTIONS[:-1]}  # type: ignore[misc]
SCHEMA: dict[str, Callable[[Any], Any]] = {
    **_declared(Config),
    **{key: check for section, cls in _TABLES.items() for key, check in _declared(cls, f"{section}.").items()},
}
"""Every key of the config (dotted for a table's: `defaults.flavor`) -> its check, read off the
declared settings, in the order the docs list them."""


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


def _default_namespace() -> str:
    try:
        name = getpass.getuser()
    except Exception:  # no user name in this environment
        name = "local"
    return name or "local"


def namespace_is_set(cfg: Config) -> bool:
    """Whether the namespace was chosen (in the file, or given in code) rather than left at its
    default, the OS user name: on the hub an unchosen namespace is the token's user (`whoami`)."""
    return "namespace" in cfg._raw or cfg.namespace != _default_namespace()


# ---------------------------------------------------------------------------------------------
# Validation: one table of every known key, its type and its rule.




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


def _known_values(cfg: Config) -> dict[str, Any]:
    return {key: _get_attr(cfg, key) for key in SCHEMA}


def _where(path: Path | None) -> str:
    return str(path) if path else "config"


def from_dict(doc: dict[str, Any], path: Path | None = None) -> Config:
    """Validate a parsed TOML document into a Config (raises ConfigError on the first problem)."""
    cfg = Config(path=path)
    where = _where(path)
    for section in SECTIONS:
        if section in doc and not isinstance(doc[section], dict):
            raise ConfigError(f"{where}: key '{section}': expected a table [{section}]")
    _refuse_secrets(doc, where, "")
    for key, check in SCHEMA.items():
        section, _, name = key.rpartition(".")
        table = doc.get(section, {}) if section else doc
        if name not in table:
            continue
        value = table[name]
        try:
            checked = check(value)
        except TypeError as exc:
            raise ConfigError(
                f"{where}: key '{key}': expected {exc}, got {_show(value)}"
            ) from None
        _set_attr(cfg, key, checked)
    for action, value in doc.get("keys", {}).items():
        try:
            cfg.keys[action] = _key_list(value)
        except TypeError as exc:
            raise ConfigError(
                f"{where}: key 'keys.{action}': expected {exc}, got {_show(value)}"
            ) from None
    cfg._raw = copy.deepcopy(doc)
    return cfg


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


_CREDENTIALS_RE = re.compile(r"(://)[^/@\s]*@")


def _show(value: Any) -> str:
    """A value for an error message: short, and a URL's `user:password@` never shown."""
    text = _CREDENTIALS_RE.sub(r"\1***@", repr(value))
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
    if _keymap_entry(key):
        try:
            value: Any = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            value = text
        try:
            return _key_list(value)
        except TypeError as exc:
            raise ConfigError(f"key '{key}': expected {exc}, got {_show(value)}") from None
    if key not in SCHEMA:
        raise ConfigError(f"unknown key '{key}'; known keys: {', '.join(SCHEMA)}")
    try:
        value: Any = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        value = text  # a bare word: treat as a string
    try:
        return SCHEMA[key](value)
    except TypeError as exc:
        raise ConfigError(f"key '{key}': expected {exc}, got {_show(value)}") from None


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


def describe_keys() -> list[tuple[str, str, str]]:
    """(key, default, description) for every known key — for `console config keys` and docs/configuration.md."""
    import json

    default = Config()
    rows = []
    for key in SCHEMA:
        section, _, name = key.rpartition(".")
        owner = getattr(default, section) if section else default
        doc = _attr_doc(type(owner), name)
        value = _get_attr(default, key)
        # as it is written in the file (TOML: "pro", false, 1.3)
        shown = "(your user name)" if key == "namespace" else "(unset)" if value is None else json.dumps(value)
        rows.append((key, shown, doc))
    rows.append(("keys.<id>", "(the key table)", _attr_doc(Config, "keys")))
    return rows


def _attr_doc(cls: type, name: str) -> str:
    """The docstring under a dataclass field, read from the source (kept next to the field)."""
    import ast
    import inspect

    try:
        tree = ast.parse(inspect.getsource(cls))
    except (OSError, TypeError):
        return ""
    body = tree.body[0].body  # type: ignore[attr-defined]
    for i, node in enumerate(body):
        target = getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == name and i + 1 < len(body):
            nxt = body[i + 1]
            if isinstance(nxt, ast.Expr) and isinstance(getattr(nxt, "value", None), ast.Constant):
                return " ".join(str(nxt.value.value).split())
    return ""


def price_book(cfg: Config) -> PriceBook:
    """The shipped prices, billed as the config says (`billing.granularity`)."""
    return shipped_price_book(cfg.billing.granularity)
