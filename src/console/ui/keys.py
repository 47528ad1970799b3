"""The key table: every binding of the TUI, as data.

The app, its panes and its forms take their `BINDINGS` from here; the `?` screen and
`docs/keys.md` are generated from the same lists, so the keys a user presses, the keys the help
shows and the keys the docs list cannot disagree.

Imports only `textual.binding`: nothing in `console.ui` may be imported here (the app and the
help screen both read this module).
"""

from __future__ import annotations

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
        "i", "incident", "Incident",
        tooltip="Write the selected job's incident bundle (Markdown) and say where it is",
        id="incident", show=False,
    ),
    Binding(
        "b", "bulk", "Bulk",
        tooltip="Bulk cancel / suspend / resume / trigger by filter (preview, type the count)",
        id="bulk", show=False,
    ),
    Binding("f", "log('toggle_follow')", "Follow", tooltip="Follow the log on/off", id="follow", show=False),
    Binding("w", "log('toggle_wrap')", "Wrap", tooltip="Wrap log lines on/off", id="wrap", show=False),
    Binding("G", "log('jump_end')", "End", tooltip="Jump to the end of the log", id="end", show=False),
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
    "ssh": "open a shell in",
    "bulk": "bulk action",
}
"""App actions that change something (refused in read-only mode), and how a message names them."""

LOG_PANE: list[Binding] = [
    Binding("f", "toggle_follow", "Follow", tooltip="Follow the end of the log on/off"),
    Binding("w", "toggle_wrap", "Wrap", tooltip="Wrap long lines on/off"),
    Binding("G,end", "jump_end", "End", tooltip="Jump to the end (resumes follow)", show=False),
    Binding("slash", "search", "Search", tooltip="Search the log"),
    Binding("n", "next_match", "Next", tooltip="Next search match", show=False),
    Binding("N", "previous_match", "Prev", tooltip="Previous search match", show=False),
    Binding("escape", "close_search", "Close search", show=False),
]

JOBS_FILTER: list[Binding] = [
    Binding("escape", "clear_filter", "Clear filter", tooltip="Clear the filter: every job again", show=False),
]

SUBMIT_FORM: list[Binding] = [
    Binding("escape", "cancel", "Cancel", tooltip="Close without submitting"),
    Binding("ctrl+s", "submit", "Submit", tooltip="Check the form and submit"),
]

CONFIRM: list[Binding] = [
    Binding("y", "yes", "Yes", tooltip="Confirm"),
    Binding("n,escape", "no", "No", tooltip="Cancel"),
]

BULK_DIALOG: list[Binding] = [Binding("escape", "cancel", "Close", tooltip="Close without doing anything")]

HELP: list[Binding] = [Binding("escape,q,question_mark", "close", "Close", tooltip="Close help")]

SECTIONS: list[tuple[list[Binding], str]] = [
    (APP, "everywhere"),
    (LOG_PANE, "log pane (tab to focus it)"),
    (JOBS_FILTER, "jobs filter"),
    (SUBMIT_FORM, "submit form"),
    (CONFIRM, "confirmations"),
    (BULK_DIALOG, "bulk dialog"),
]
"""The bindings the key table lists, with where each set works."""

BUILT_IN: list[tuple[str, str, str]] = [
    ("up, down, pgup, pgdn", "Move in a table / scroll the log", "tables, log"),
    ("enter", "Fleet: show the tenant's jobs; Jobs: focus the log", "tables"),
    ("tab, shift+tab", "Move focus between panes", "everywhere"),
    ("ctrl+p", "Command palette: every action by name", "everywhere"),
]
"""Keys Textual's own widgets give, listed after the console's."""

_NAMES = {"slash": "/", "question_mark": "?", "dollar_sign": "$", "escape": "esc", "enter": "enter"}


def key_name(key: str) -> str:
    """A binding's key as a person types it: `slash` -> `/`, `G,end` -> `G, end`."""
    return ", ".join(_NAMES.get(k.strip(), k.strip()) for k in key.split(","))


def key_table() -> list[tuple[str, str, str]]:
    """(key, what it does, where it works), app-wide keys first."""
    rows = [
        (key_name(b.key), b.tooltip or b.description, where)
        for bindings, where in SECTIONS
        for b in bindings
    ]
    return rows + BUILT_IN


def markdown() -> str:
    lines = ["| Key | Action | Where |", "|---|---|---|"]
    for key, what, where in key_table():
        lines.append(f"| `{key}` | {what} | {where} |")
    return "\n".join(lines) + "\n"
