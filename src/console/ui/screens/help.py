"""`?`: every key, what it does, and where it works — generated from the bindings themselves."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from console.ui import keys
from console.ui.screens.dialog import Dialog


class HelpScreen(Dialog[None]):
    BINDINGS = keys.HELP

    def compose(self) -> ComposeResult:
        table = Table(box=None, expand=True, show_header=True, header_style="bold")
        table.add_column("Key", no_wrap=True, style="bold cyan")
        table.add_column("Action")
        table.add_column("Where", style="dim")
        for key, description, where in keys.key_table(getattr(self.app, "user_keys", None)):
            table.add_row(key, description, where)
        with VerticalScroll(id="help-dialog", classes="dialog"):
            yield Static("Keys (esc closes; ctrl+p opens the command palette)", id="help-title")
            yield Static(table)

    def action_close(self) -> None:
        self.dismiss(None)
