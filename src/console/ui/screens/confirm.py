"""A yes/no confirmation: the question, the facts that matter (job, tenant, cost), y / n."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Static

from console.jobs import clean_log_line
from console.ui import keys
from console.ui.screens.dialog import Dialog


class ConfirmScreen(Dialog[bool]):
    """Ask before anything that costs money or kills work. Dismisses True on yes."""

    BINDINGS = keys.CONFIRM

    def __init__(self, title: str, details: list[str], *, yes_label: str = "Yes") -> None:
        super().__init__()
        self.title_text = title
        self.details = details
        self.yes_label = yes_label

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog", classes="dialog"):
            # titles and details name tenants, jobs and flavors: untrusted text, shown inert
            yield Static(Text(clean_log_line(self.title_text), style="bold"), id="confirm-title")
            for line in self.details:
                yield Static(Text(clean_log_line(line)), classes="confirm-detail")
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self.yes_label} (y)", variant="error", id="yes")
                yield Button("No (n)", id="no")

    def on_mount(self) -> None:
        # answered by a key before it was mounted (`c` then `n`, typed at once): nothing to focus
        for button in self.query("#no").results(Button):
            button.focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_yes(self) -> None:
        self.dismiss(True)

    def action_no(self) -> None:
        self.dismiss(False)
