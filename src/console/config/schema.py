"""Every key of the config, declared once: a typed field of its table's msgspec Struct.

A key's type, bounds and choices, its default and its description (``Meta(description=)``) are
its field; a rule a type cannot say is the field's ``Meta(extra={"check": ...})`` (see
:mod:`console.declared`). :data:`SCHEMA` (the dotted keys `console config set` takes), the file's
checks and their one-line messages, `console config keys` and the table of docs/configuration.md
(:func:`markdown_table`) are all read off these declarations.
"""

import getpass
import json
import re
import urllib.parse
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from console import declared
from console.declared import Declared
from console.inputs import bucket_id_problem, is_label_name
from console.labels import NAME_MAX
from console.prices import (
    BILLING_GRANULARITIES,
    DEFAULT_TIMEOUT_BUFFER,
    DEFAULT_TIMEOUT_OVERHEAD_S,
    HF_MAX_TIMEOUT_SECONDS,
    PLANS,
    SHIPPED_FLAVORS,
)

BACKENDS = ("local", "hub")
SERVER_PYTHON_MODES = ("self", "uv", "auto")
NOTIFY_DESKTOP = ("off", "osc9", "osc777")
BUDGET_ACTIONS = ("warn", "suspend")
_FLAVOR_NAMES = tuple(f.name for f in SHIPPED_FLAVORS)


# -- the rules a type cannot say (each returns the value to keep or raises TypeError) -------------


def _endpoint(s: str) -> str:
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


def _env_label(s: str) -> str:
    if not is_label_name(s):
        raise TypeError(ENV_LABEL)
    return s


_REPO_ID_RE = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")


def _hub_template(s: str) -> str:
    sample = s.replace("{tenant}", "tenant")
    if "{tenant}" not in s or not _REPO_ID_RE.fullmatch(sample) or "--" in sample or ".." in sample:
        raise TypeError(HUB_TEMPLATE)
    return s


def _bucket_id(s: str) -> str:
    if bucket_id_problem(s):
        raise TypeError("a bucket id like 'org/datasets-cache'")
    return s


_KEY_RE = re.compile(r"[^\s,]{1,40}")


def key_list(value: Any) -> str:
    """A `[keys]` entry: one key, "a,b", or a list of keys -> Textual's "a,b" form (the app checks
    each key's name and clashes when it starts)."""
    items = value if isinstance(value, list) else value.split(",") if isinstance(value, str) else [None]
    keys = [k.strip() if isinstance(k, str) else k for k in items]
    if not keys or len(keys) > 8 or not all(isinstance(k, str) and _KEY_RE.fullmatch(k) for k in keys):
        raise TypeError(KEY_LIST)
    return ",".join(keys)


SCHEDULING_AFTER_S = 1800
"""How long a job may wait in SCHEDULING before the on-call says so (not HF's default timeout)."""
ENV_LABEL = f"a label value (letters, digits, '-', '_'; at most {NAME_MAX}: HF refuses '.' in labels)"
HUB_TEMPLATE = 'a Hub model id with {tenant} in it, like "org/adapter-{tenant}"'
KEY_LIST = 'a key or a list of keys, e.g. "ctrl+q", "f1" or ["?", "f1"]'
_URL = "an http:// or https:// URL"
_Url = Annotated[str, Meta(pattern=r"^https?://\S*\Z", max_length=2048, extra={"expected": _URL})]


def _default_namespace() -> str:
    try:
        name = getpass.getuser()
    except Exception:  # no user name in this environment
        name = "local"
    return name or "local"


class Table(msgspec.Struct, kw_only=True):
    """A table of the config: mutable (`console config set` edits it), compared by value."""


class Defaults(Table):
    """Defaults for new submissions."""

    flavor: Annotated[Literal[_FLAVOR_NAMES], Meta(  # type: ignore[valid-type]
        description="Hardware flavor for a training job (reference §3: l4x1 is the best $/perf for tenant "
        "adapters).",
        extra={"expected": "a known flavor (" + ", ".join(_FLAVOR_NAMES[:6]) + ", ...)"})] = "l4x1"
    timeout_buffer: Annotated[float, Meta(ge=1.0, le=5.0, description=(
        "Timeout = (estimated time + timeout_overhead_s) x this (reference: x 1.3)."))] = DEFAULT_TIMEOUT_BUFFER
    timeout_overhead_s: Annotated[int, Meta(ge=0, le=6 * 3600, description=(
        "Seconds added to every training estimate before the buffer: the environment install (~48 s "
        "for a cold `uv run`), model and dataset downloads, the Hub push."))] = DEFAULT_TIMEOUT_OVERHEAD_S
    env: Annotated[str, Meta(extra={"check": _env_label, "expected": ENV_LABEL}, description=(
        "The `env=` label put on every job the console starts (letters, digits, '-', '_': HF refuses "
        "'.' in labels)."))] = "dev"
    hub_model_id: Annotated[str, Meta(extra={"check": _hub_template, "expected": HUB_TEMPLATE},
        description=(
        "Where a tenant's adapter is pushed when neither the tenant nor the fleet file says: a Hub "
        'model id with {tenant} in it, e.g. "org/adapter-{tenant}". A run on HF Jobs with no '
        "destination is refused (its container's disk is thrown away)."))] | None = None
    datasets_cache: Annotated[str, Meta(extra={"check": _bucket_id}, description=(
        'A bucket (e.g. "org/datasets-cache") mounted read-write at /data in every run of a Hub '
        "dataset, with HF_DATASETS_CACHE=/data/datasets, so a run does not download its dataset again "
        "(the training reference: the container's own cache is thrown away with it). Created if "
        "missing. A fleet file's top-level `datasets_cache` overrides it; a Hub run without one is "
        "offered it in its confirmation."))] | None = None


class TrackioSettings(Table):
    """Where training metrics go."""

    project: Annotated[str, Meta(pattern=r"^[^/]{1,100}\Z", description=(
        "Trackio project the training scripts log to."),
        extra={"expected": "a project name (no '/', at most 100 characters)"})] = "console"
    space_id: Annotated[str, Meta(pattern=r"^[^/]+/[^/]+\Z", max_length=200, description=(
        "A HF Space (`org/trackio`) every run on HF Jobs logs to (fleet, form, rerun, trigger), so "
        "its metrics outlive the job's container; the console reads them back from it with "
        "huggingface_hub's login. Local runs "
        "use the server's own Trackio store."), extra={"expected": "a Space id like 'org/trackio'"})] | None = None


class ServerSettings(Table):
    """The embedded Jobs server (backend = "local")."""

    port: Annotated[int, Meta(ge=0, le=65535, description="Port on 127.0.0.1; 0 picks a free one.")] = 0
    max_running_jobs: Annotated[int, Meta(ge=1, le=64, description=(
        "Jobs running at once; the rest wait in SCHEDULING. Each job's OpenMP / MKL threads default "
        "to its share of the cores (the cores over this number)."))] = 2
    python: Annotated[Literal[SERVER_PYTHON_MODES], Meta(description=(  # type: ignore[valid-type]
        'How `uv run SCRIPT` commands run: "self" (the server\'s own Python environment), "uv" (real '
        'uv), "auto" (uv when installed, else self).'))] = "self"


class BillingSettings(Table):
    """How the console turns a job's running time into money."""

    granularity: Annotated[Literal[BILLING_GRANULARITIES], Meta(description=(  # type: ignore[valid-type]
        "minute: each job's running time rounded up to whole minutes, as HF Jobs bills (\"per minute "
        'while Starting/Running", reference §1); second: exact, to compare with a bill that is.'))] = "minute"


class NotifySettings(Table):
    """On-call notifications (`console watch` and the app): which events, and where they go."""

    bell: Annotated[bool, Meta(description="Ring the terminal bell on each notification.")] = False
    desktop: Annotated[Literal[NOTIFY_DESKTOP], Meta(description=(  # type: ignore[valid-type]
        "A desktop notification by terminal escape: off | osc9 (iTerm2, WezTerm, kitty, Windows "
        "Terminal, foot) | osc777 (VTE terminals such as GNOME Terminal). Inside tmux they pass "
        "through only with `set -g allow-passthrough on`."))] = "off"
    webhook_url: Annotated[_Url, Meta(description=(
        "POST each notification here: Slack and Discord webhook URLs get their own message format, "
        "any other URL the event as a JSON object."))] | None = None
    webhook_urls: Annotated[list[_Url], Meta(max_length=20, description=(
        'More webhooks, as a list: ["https://hooks.slack.com/services/...", "https://example.com/hook"].'),
        extra={"expected": "a list of at most 20 http:// or https:// URLs"})] = msgspec.field(default_factory=list)
    webhook_timeout_s: Annotated[float, Meta(ge=0.5, le=60, description=(
        "Seconds one webhook POST may take before it is given up (it never holds up the console)."))] = 5.0
    stall_after_s: Annotated[int, Meta(ge=10, le=HF_MAX_TIMEOUT_SECONDS, description=(
        "A RUNNING job with no new log line, no new Trackio step and about-zero CPU for this long is "
        "stalled (and still billing)."))] = 600
    stall_cpu_pct: Annotated[float, Meta(ge=0, le=100, description=(
        "CPU use (percent of the job's machine, as the Jobs metrics report it) at or under which a "
        "job counts as idle."))] = 1.0
    scheduling_after_s: Annotated[int, Meta(ge=60, le=HF_MAX_TIMEOUT_SECONDS, description=(
        "A job waiting in SCHEDULING (no free machine of its flavor) longer than this is notified, "
        "once, with its flavor and how long it has waited."))] = SCHEDULING_AFTER_S
    schedule_failures: Annotated[int, Meta(ge=1, le=1000, description=(
        "A schedule whose runs failed this many times in a row is flagged (`console watch`, the TUI) "
        "and notified once, until one of its runs passes again."))] = 3
    stale_live_periods: Annotated[int, Meta(ge=0, le=1000, description=(
        "A scheduled tenant whose live adapter version is older than this many of its schedule's "
        "periods (its runs keep not becoming live) is flagged and notified once per live version; "
        "0: off."))] = 3
    osc52: Annotated[bool, Meta(description=(
        "Put an incident bundle's path on the terminal's clipboard (OSC 52) when one is written."))] = False


class Settings(Table):
    """The config's keys: the top level's, then one field per table."""

    namespace: Annotated[str, Meta(pattern=r"^[\w.-]{1,96}\Z", description=(
        "The HF user or org that jobs run under (and that `whoami` answers locally). Unset on the hub "
        "backend: the token's user, from `whoami`; one the token cannot use is refused."),
        extra={"expected": "a user or org name (letters, digits, '-', '_', '.'; at most 96)"},
    )] = msgspec.field(default_factory=_default_namespace)
    plan: Annotated[Literal[tuple(PLANS)], Meta(description=(  # type: ignore[valid-type]
        "free | pro | team | enterprise. Jobs need a paid plan."))] = "pro"
    seats: Annotated[int, Meta(ge=1, le=100_000, description=(
        "Seats on the plan; the plan floor is seats x the plan's price for team / enterprise."))] = 1
    backend: Annotated[Literal[BACKENDS], Meta(description=(  # type: ignore[valid-type]
        "local (the embedded Jobs server) or hub (huggingface.co)."))] = "local"
    endpoint: Annotated[str, Meta(extra={"check": _endpoint, "expected": _URL}, description=(
        "Override the backend's URL (e.g. a shared `console serve` on another port)."))] | None = None
    monthly_budget_usd: Annotated[float, Meta(ge=0, le=1e9, description=(
        "Warn when the month's projection exceeds this."))] | None = None
    budget_action: Annotated[Literal[BUDGET_ACTIONS], Meta(description=(  # type: ignore[valid-type]
        "warn: the month's projection passing `monthly_budget_usd` is an on-call event. suspend: the "
        "on-call watcher (the TUI's or `console watch`) suspends schedules, the most expensive this "
        "month first, until it fits, and says once what it suspended and why; `console budget undo` or "
        "`U` on the Costs tab resumes them, and the budget then warns instead for the rest of that "
        "month at that budget. Spent and running money and the plan's floor stay: when they alone pass "
        "the budget, every schedule is suspended and the event says the month still does not fit."))] = "warn"
    read_only: Annotated[bool, Meta(description="Refuse every action that changes anything.")] = False
    theme: Annotated[str, Meta(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}\Z", description=(
        "The TUI's colours: a Textual theme (textual-dark, textual-light, nord, gruvbox, dracula, "
        "tokyo-night, monokai, solarized-light, ...); unset is Textual's default."),
        extra={"expected": "a Textual theme name such as 'textual-dark', 'nord' or 'gruvbox'"})] | None = None
    keys: Annotated[dict[str, str], Meta(description=(
        'The `[keys]` table: a binding\'s id -> its key(s), e.g. `quit = "ctrl+q"`, '
        '`help = ["?", "f1"]` (ids in docs/keys.md); checked against the app\'s keys when it '
        "starts."))] = msgspec.field(default_factory=dict)
    defaults: Defaults = msgspec.field(default_factory=Defaults)
    trackio: TrackioSettings = msgspec.field(default_factory=TrackioSettings)
    server: ServerSettings = msgspec.field(default_factory=ServerSettings)
    billing: BillingSettings = msgspec.field(default_factory=BillingSettings)
    notify: NotifySettings = msgspec.field(default_factory=NotifySettings)


class _KeyEntry(msgspec.Struct):
    entry: Annotated[str | list[str], Meta(extra={"check": key_list, "expected": KEY_LIST})]


KEY_ENTRY: Declared = declared.declared(_KeyEntry)["entry"]
"""One entry of the `[keys]` table: a key, "a,b" or a list of keys."""
_TOP = declared.declared(Settings)
TABLES: dict[str, type[Table]] = {
    name: f.type for name, f in _TOP.items() if isinstance(f.type, type) and issubclass(f.type, Table)
}
"""The config's tables (`[defaults]`, ...) -> their Struct."""
SECTIONS = (*TABLES, "keys")
SCHEMA: dict[str, Declared] = {
    **{name: f for name, f in _TOP.items() if name not in SECTIONS},
    **{f"{table}.{name}": f for table, cls in TABLES.items() for name, f in declared.declared(cls).items()},
}
"""Every key of the config (dotted for a table's: `defaults.flavor`) -> its declaration, in the order
the docs list them."""


def check(key: str, value: Any) -> Any:
    """`value` as the config keeps it for `key`; a TypeError saying what was expected."""
    return declared.check(SCHEMA[key], value)


def describe_keys() -> list[tuple[str, str, str]]:
    """(key, default, description) for every known key — for `console config keys` and docs/configuration.md."""
    rows = []
    for key, f in SCHEMA.items():
        # as it is written in the file (TOML: "pro", false, 1.3)
        shown = "(your user name)" if key == "namespace" else "(unset)" if f.default is None else json.dumps(f.default)
        rows.append((key, shown, " ".join(f.doc.split())))
    rows.append(("keys.<id>", "(the key table)", _TOP["keys"].doc))
    return rows


def markdown_table() -> str:
    """The table of the config's keys in docs/configuration.md, one row per key of :func:`describe_keys`."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| key | default | meaning |", "| --- | --- | --- |"]
    for key, default, doc in describe_keys():
        shown = default if default.startswith("(") else f"`{default}`"
        lines.append(f"| `{key}` | {cell(shown)} | {cell(doc)} |")
    return "\n".join(lines)
