"""The key table, read from the bindings themselves: for the `?` screen and docs/keys.md."""

from __future__ import annotations

from textual.binding import Binding


def _key_name(key: str) -> str:
    names = {"slash": "/", "question_mark": "?", "dollar_sign": "$", "escape": "esc", "enter": "enter"}
    return ", ".join(names.get(k.strip(), k.strip()) for k in key.split(","))


def key_table() -> list[tuple[str, str, str]]:
    """(key, what it does, where it works), app-wide keys first."""
    from console.ui.app import ConsoleApp
    from console.ui.screens.confirm import ConfirmScreen
    from console.ui.screens.submit import SubmitScreen
    from console.ui.widgets.jobs_pane import JobsPane
    from console.ui.widgets.log_pane import LogPane

    sources = [
        (ConsoleApp.BINDINGS, "everywhere"),
        (LogPane.BINDINGS, "log pane (tab to focus it)"),
        (JobsPane.BINDINGS, "jobs filter"),
        (SubmitScreen.BINDINGS, "submit form"),
        (ConfirmScreen.BINDINGS, "confirmations"),
    ]
    rows: list[tuple[str, str, str]] = []
    for bindings, where in sources:
        for b in bindings:
            if not isinstance(b, Binding):
                continue
            rows.append((_key_name(b.key), b.tooltip or b.description, where))
    rows += [
        ("up, down, pgup, pgdn", "Move in a table / scroll the log", "tables, log"),
        ("enter", "Fleet: show the tenant's jobs; Jobs: focus the log", "tables"),
        ("tab, shift+tab", "Move focus between panes", "everywhere"),
        ("ctrl+p", "Command palette: every action by name", "everywhere"),
    ]
    return rows


def markdown() -> str:
    lines = ["| Key | Action | Where |", "|---|---|---|"]
    for key, what, where in key_table():
        lines.append(f"| `{key}` | {what} | {where} |")
    return "\n".join(lines) + "\n"
