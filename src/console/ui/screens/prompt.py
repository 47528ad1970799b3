"""A one-field form (e.g. where to save a log): enter accepts, escape cancels."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Static

from console.jobs import clean_log_line
from console.ui import keys
from console.ui.screens.dialog import Dialog


class PromptScreen(Dialog[str | None]):
    BINDINGS = keys.PROMPT

    def __init__(self, title: str, value: str = "", placeholder: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.value = value
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-dialog", classes="dialog"):
            yield Static(clean_log_line(self.title_text), id="prompt-title", markup=False)
            yield Input(self.value, placeholder=self.placeholder, id="prompt-input")
            yield Static("enter: ok   esc: cancel", classes="dialog-hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
