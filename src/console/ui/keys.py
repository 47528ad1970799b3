"""The key table: every binding of the TUI, as data.

The app, its panes and its forms take their `BINDINGS` from here; the `?` screen and
`docs/keys.md` are generated from the same lists, so the keys a user presses, the keys the help
shows and the keys the docs list cannot disagree.

Imports only Textual's bindings and key names: nothing in `console.ui` may be imported here (the
app and the help screen both read this module). The user's `[keys]` (binding id -> key(s)) is
checked by :func:`check_keymap` and handed to Textual's `App.set_keymap`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from textual.binding import Binding

APP: list[Binding] = [
    Binding("1", "show_tab('fleet')", "Fleet", tooltip="The tenant fleet", id="tab-fleet"),
    Binding("2", "show_tab('jobs')", "Jobs", tooltip="Jobs and their logs", id="tab-jobs"),
    Binding("3", "show_tab('costs')", "Costs", tooltip="Cost ledger", id="tab-costs", show=False),
    Binding(
        "4",
        "show_tab('training')",
        "Training",
        tooltip="Trackio curves of the selected job and the fleet's alerts",
        id="tab-training",
        show=False,
    ),
    Binding(
        "dollar_sign",
        "whatif",
        "What-if",
        tooltip="What-if explorer: the fleet's cost under other assumptions",
        id="whatif",
        show=False,
    ),
    # ? and q right after the tabs: the footer shows them even at 80 columns
    Binding("question_mark", "help", "Help", tooltip="All keys", id="help"),
    Binding("q", "quit", "Quit", tooltip="Quit the console", id="quit"),
    Binding("s", "submit", "Submit", tooltip="Submit a training job (form)", id="submit"),
    Binding("c", "cancel_job", "Cancel", tooltip="Cancel the selected job", id="cancel"),
    Binding("slash", "filter", "Filter", tooltip="Filter jobs (tenant:, stage:, label:)", id="filter"),
    Binding("x", "ssh", "Shell", tooltip="Open a shell in the selected job", id="ssh"),
    Binding("r", "reschedule", "Resched", tooltip="Edit the tenant's cron", id="reschedule"),
    Binding("p", "toggle_suspend", "Pause", tooltip="Suspend / resume the tenant's schedule", id="suspend"),
    Binding("t", "trigger", "Trigger", tooltip="Run the tenant's scheduled job now", id="trigger"),
    Binding("R", "rerun", "Rerun", tooltip="Run the selected job again", id="rerun"),
    Binding(
        "e", "expose_port", "Expose",
        tooltip="The selected running job's exposed URLs; expose one more port ($0.01/h)",
        id="expose", show=False,
    ),
    Binding(
        "i", "incident", "Incident",
        tooltip="Write the selected job's incident bundle (Markdown) and say where it is",
        id="incident", show=False,
    ),
    Binding(
        "v", "versions", "Versions",
        tooltip="The tenant's adapter versions, the live one marked; promote / roll back",
        id="versions", show=False,
    ),
    Binding(
        "b", "bulk", "Bulk",
        tooltip="Bulk cancel / suspend / resume / trigger by filter (preview, type the count)",
        id="bulk", show=False,
    ),
    Binding("f", "log('toggle_follow')", "Follow", tooltip="Follow the log on/off", id="follow", show=False),
    Binding("w", "log('toggle_wrap')", "Wrap", tooltip="Wrap log lines on/off", id="wrap", show=False),
    Binding("G", "log('jump_end')", "End", tooltip="Jump to the end of the log", id="end", show=False),
    Binding("T", "log('toggle_timestamps')", "Times", tooltip="Each log line's time on/off (UTC)", id="times",
            show=False),
    Binding("J", "log('jump_time')", "Jump to time", tooltip="Jump to the first log line at or after a time",
            id="jump-time", show=False),
    Binding("ctrl+s", "save_log", "Save log", tooltip="Save the full log to a file", id="save-log", show=False),
    Binding("ctrl+r", "refresh_now", "Refresh", tooltip="Refresh now", id="refresh", show=False),
    Binding(
        "ctrl+z", "suspend_process", "Suspend", tooltip="Suspend to the shell (`fg` comes back)",
        id="suspend-process", show=False,
    ),
]

MUTATING: dict[str, str] = {
    "submit": "submit",
    "cancel_job": "cancel",
    "reschedule": "reschedule",
    "toggle_suspend": "suspend/resume",
    "trigger": "trigger",
    "rerun": "rerun",
    "ssh": "open a shell",
    "expose_port": "expose a port",
    "bulk": "bulk action",
    "promote": "promote",  # the versions view's
    "rollback": "roll back",
}
"""App actions that change something (refused in read-only mode), and how a message names them:
`Read-only: <name> refused`, so each name is a whole phrase (no object left dangling)."""

LOG_PANE: list[Binding] = [
    # the same ids as the app's f / w / G: one `[keys]` entry moves both
    Binding("f", "toggle_follow", "Follow", tooltip="Follow the end of the log on/off", id="follow"),
    Binding("w", "toggle_wrap", "Wrap", tooltip="Wrap long lines on/off", id="wrap"),
    Binding("G,end", "jump_end", "End", tooltip="Jump to the end (resumes follow)", id="end", show=False),
    Binding("T", "toggle_timestamps", "Times", tooltip="Each line's time on/off (as the Jobs API stamped it, UTC)",
            id="times", show=False),
    Binding("J", "jump_time", "Jump to time", tooltip="Jump to the first line at or after a time (HH:MM, 30m, ISO)",
            id="jump-time", show=False),
    Binding("slash", "search", "Search", tooltip="Search the log", id="log-search"),
    Binding("ampersand", "filter", "Filter", tooltip="Show only the lines that match (/regex/; empty: every line)",
            id="log-filter", show=False),
    Binding("n", "next_match", "Next", tooltip="Next search match", id="log-next", show=False),
    Binding("N", "previous_match", "Prev", tooltip="Previous search match", id="log-previous", show=False),
    Binding("escape", "close_search", "Close search", id="log-close-search", show=False),
]

FLEET_TABLE: list[Binding] = [
    Binding("J", "past", "As of", tooltip="The fleet as it was at a time (HH:MM, 30m, 2h, ISO; UTC; empty: now)",
            id="fleet-past", show=False),
    Binding("escape", "present", "Now", tooltip="Back to the fleet as it is now", id="fleet-present", show=False),
]

JOBS_FILTER: list[Binding] = [
    Binding(
        "escape", "clear_filter", "Clear filter", tooltip="Clear the filter: every job again",
        id="clear-filter", show=False,
    ),
]

SUBMIT_FORM: list[Binding] = [
    Binding("escape", "cancel", "Cancel", tooltip="Close without submitting", id="form-cancel"),
    Binding("ctrl+s", "submit", "Submit", tooltip="Check the form and submit", id="form-submit"),
]

CONFIRM: list[Binding] = [
    Binding("y", "yes", "Yes", tooltip="Confirm", id="confirm-yes"),
    Binding("n,escape", "no", "No", tooltip="Cancel", id="confirm-no"),
]

BULK_DIALOG: list[Binding] = [
    Binding("escape", "cancel", "Close", tooltip="Close without doing anything", id="bulk-close"),
]

COSTS_PANE: list[Binding] = [
    Binding("w", "whatif", "What-if", tooltip="Open the what-if explorer", id="ledger-whatif"),
    Binding("U", "budget_undo", "Undo budget", tooltip="Resume the schedules the budget suspended",
            id="budget-undo", show=False),
]

WHATIF: list[Binding] = [
    Binding("escape", "close", "Close", tooltip="Close the what-if explorer", id="whatif-close"),
    Binding("ctrl+z", "reset", "Reset", tooltip="Back to the current fleet's assumptions", id="whatif-reset"),
]

RESCHEDULE_DIALOG: list[Binding] = [
    Binding("escape", "cancel", "Cancel", tooltip="Close without saving", id="reschedule-cancel"),
]

PROMPT: list[Binding] = [
    Binding("escape", "cancel", "Cancel", tooltip="Close without doing anything", id="prompt-cancel"),
]

VERSIONS: list[Binding] = [
    Binding("p", "promote", "Promote", tooltip="Make the highlighted version live (asks first)",
            id="versions-promote"),
    Binding("b", "rollback", "Roll back", tooltip="Move live back to the passing version before it (asks first)",
            id="versions-rollback"),
    Binding("escape,q", "close", "Close", tooltip="Close the versions view", id="versions-close"),
]

HELP: list[Binding] = [
    Binding("escape,q,question_mark", "close", "Close", tooltip="Close help", id="help-close"),
]

FOOTER: list[str] = [
    "help", "quit",
    "submit", "cancel", "ssh", "rerun",  # the selected job
    "reschedule", "suspend", "trigger",  # its tenant's schedule
    "filter", "follow", "wrap", "log-search", "ledger-whatif",
    "tab-fleet", "tab-jobs",  # the tab bar names its keys already
]
"""The footer's order (binding ids, most important first): the footer shows the keys on screen in
this order (the others after, in table order), as many as fit whole (:func:`footer_fit`), so at 80
columns it shows help, quit, the job's and the tenant's actions, and never half a key."""

PALETTE_WIDTH = 11
"""Columns of the footer's `^p palette` entry (its border, the key, a space, the word)."""


def footer_fit(entries: list[tuple[str, str, str]], width: int) -> tuple[list[int], bool]:
    """Which of the footer's `entries` (binding id, key shown, description) show in `width`
    columns, and whether the command palette's entry does: the entries in :data:`FOOTER` order,
    as many as fit whole (each takes its key, a space, its description and a gap), the palette's
    only when every entry fits beside it."""
    rank = {ident: i for i, ident in enumerate(FOOTER)}
    order = sorted(range(len(entries)), key=lambda i: (rank.get(entries[i][0], len(rank)), i))
    widths = [len(entries[i][1]) + (1 + len(entries[i][2]) if entries[i][2] else 0) + 1 for i in order]
    if sum(widths) <= width + 1 - PALETTE_WIDTH:
        return order, True
    used, shown = 0, []
    for i, w in zip(order, widths, strict=True):
        if used + w > width + 1:  # the last entry's gap may fall past the edge
            break
        used += w
        shown.append(i)
    return shown, False


SECTIONS: list[tuple[list[Binding], str]] = [
    (APP, "everywhere"),
    (LOG_PANE, "log pane (tab to focus it)"),
    (FLEET_TABLE, "fleet table"),
    (JOBS_FILTER, "jobs filter"),
    (SUBMIT_FORM, "submit form"),
    (CONFIRM, "confirmations"),
    (BULK_DIALOG, "bulk dialog"),
    (COSTS_PANE, "costs tab"),
    (WHATIF, "what-if"),
    (RESCHEDULE_DIALOG, "cron dialog"),
    (PROMPT, "prompts"),
    (VERSIONS, "versions view"),
    (HELP, "help"),
]
"""The bindings the key table lists, with where each set works."""

BUILT_IN: list[tuple[str, str, str]] = [
    ("up, down, pgup, pgdn", "Move in a table / scroll the log", "tables, log"),
    ("enter", "Fleet: show the tenant's jobs; Jobs: focus the log", "tables"),
    ("tab, shift+tab", "Move focus between panes", "everywhere"),
    ("ctrl+p", "Command palette: every action by name", "everywhere"),
]
"""Keys Textual's own widgets give, listed after the console's."""

_NAMES = {"slash": "/", "question_mark": "?", "dollar_sign": "$", "ampersand": "&", "escape": "esc", "enter": "enter"}

RESERVED = frozenset({"tab", "shift+tab", "enter", "up", "down", "pageup", "pagedown", "ctrl+p", "ctrl+c"})
"""Keys Textual's own widgets need (focus, the tables, the command palette): never given to an
action; nor is ctrl+q (Textual's quit, which goes first) to any action but quit."""

_MODIFIERS = ("ctrl", "shift", "alt", "meta", "super", "hyper")


def key_name(key: str) -> str:
    """A binding's key as a person types it: `slash` -> `/`, `G,end` -> `G, end`."""
    return ", ".join(_NAMES.get(k.strip(), k.strip()) for k in key.split(","))


def binding_ids() -> list[str]:
    """Every id a `[keys]` entry may name, in table order."""
    seen: dict[str, None] = {}
    for bindings, _where in SECTIONS:
        for b in bindings:
            if b.id:
                seen.setdefault(b.id)
    return list(seen)


def _valid_key(key: str) -> bool:
    """A key Textual can deliver: a printable character, or a key name (f1, home, escape,
    question_mark), after modifiers such as ctrl+ and alt+."""
    from textual.keys import REPLACED_KEYS, Keys, key_to_character

    *mods, base = key.split("+")
    if any(m not in _MODIFIERS for m in mods) or not base:
        return False
    if len(base) == 1:
        return base.isprintable() and not base.isspace()
    base = REPLACED_KEYS.get(base, base)  # slash -> solidus
    return base in {k.value for k in Keys} or base == "space" or key_to_character(base) is not None


def _normalize(keys: str) -> list[str]:
    from textual.keys import _character_to_key

    return [_character_to_key(k) if len(k) == 1 else k for k in (k.strip() for k in keys.split(","))]


class KeymapError(ValueError):
    """A `[keys]` entry the app refuses: `binding_id` names it, the message says why."""

    def __init__(self, binding_id: str, message: str) -> None:
        super().__init__(message)
        self.binding_id = binding_id


def check_keymap(keymap: dict[str, str]) -> dict[str, str]:
    """The user's `[keys]` (binding id -> "key,key"), in Textual's long key names (`?` ->
    `question_mark`), or :class:`KeymapError` for the first entry that names no binding, names a
    key Textual does not know, takes a key Textual's widgets need, or gives one key two actions
    where both would work."""
    known = binding_ids()
    out: dict[str, str] = {}
    for binding_id, value in keymap.items():
        if binding_id not in known:
            raise KeymapError(binding_id, f"no such action (ids: {', '.join(known)})")
        keys = _normalize(value)
        for key in keys:
            if not _valid_key(key):
                raise KeymapError(binding_id, f"{key!r} is not a key Textual knows (e.g. ctrl+q, f1, ?)")
            if key in RESERVED or (key == "ctrl+q" and binding_id != "quit"):
                raise KeymapError(binding_id, f"{key_name(key)!r} is Textual's own key")
        out[binding_id] = ",".join(keys)
    for bindings, where in SECTIONS:
        owner: dict[str, Binding] = {}
        for b in bindings:
            for key in _normalize(effective_key(b, out)):
                other = owner.get(key)
                if other is not None and other.id != b.id:
                    culprit = b.id if b.id in out else other.id
                    rival = other if culprit == b.id else b
                    raise KeymapError(
                        culprit or "",
                        f"{key_name(key)!r} is already {rival.description} ({where}, keys.{rival.id})",
                    )
                owner[key] = b
    return out


def user_keymap(cfg: Any) -> dict[str, str]:
    """The config's `[keys]`, checked (:func:`check_keymap`); a bad entry is a
    :class:`console.config.ConfigError` naming the file and the key."""
    from console.config import ConfigError

    try:
        return check_keymap(dict(cfg.keys))
    except KeymapError as exc:
        where = str(cfg.path) if cfg.path else "config"
        raise ConfigError(f"{where}: key 'keys.{exc.binding_id}': {exc}") from None


def check_theme(cfg: Any, available: Iterable[str]) -> str | None:
    """The config's `theme` when Textual has it (None: unset); else a ConfigError naming it."""
    from console.config import ConfigError

    names = sorted(available)
    if cfg.theme is None or cfg.theme in names:
        return cfg.theme
    where = str(cfg.path) if cfg.path else "config"
    raise ConfigError(f"{where}: key 'theme': expected one of {' | '.join(names)}, got {cfg.theme!r}")


def effective_key(binding: Binding, keymap: dict[str, str] | None = None) -> str:
    """The key(s) a binding answers to once the user's keymap is applied."""
    if keymap and binding.id and binding.id in keymap:
        return keymap[binding.id]
    return binding.key


def key_table(keymap: dict[str, str] | None = None) -> list[tuple[str, str, str]]:
    """(key, what it does, where it works), app-wide keys first; `keymap`: the user's keys."""
    rows = [
        (key_name(effective_key(b, keymap)), b.tooltip or b.description, where)
        for bindings, where in SECTIONS
        for b in bindings
    ]
    return rows + BUILT_IN


def markdown() -> str:
    """The default key table, with each binding's id (what a `[keys]` entry names)."""
    lines = ["| Key | Action | Where | Id |", "|---|---|---|---|"]
    ids = [b.id for bindings, _where in SECTIONS for b in bindings]
    for i, (key, what, where) in enumerate(key_table()):
        ident = f"`{ids[i]}`" if i < len(ids) and ids[i] else ""
        lines.append(f"| `{key}` | {what} | {where} | {ident} |")
    return "\n".join(lines) + "\n"
