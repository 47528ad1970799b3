"""Edit a scheduled job's cron: the expression in words, its next runs and its $/month before ->
after (`console.oncall.reschedule_cost`, through the `cost` callable the action gives), before
saving."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Static

from console.cron import describe_cron, next_runs, normalize_cron, runs_per_month
from console.inputs import CostInputError
from console.jobs import clean_log_line
from console.ui import keys
from console.ui.screens.dialog import Dialog


def preview(expr: str, now: datetime, n: int = 3) -> tuple[str | None, Text]:
    """(normalized cron or None, the preview text: words, runs/month, next runs or the error)."""
    try:
        cron = normalize_cron(expr)
        words = describe_cron(cron)
        runs = next_runs(cron, n, after=now)
        rpm = runs_per_month(cron)
    except CostInputError as exc:
        return None, Text(str(exc), style="bold red")
    text = Text()
    text.append(f"{words}", style="bold")
    text.append(f"  ({rpm:.1f} runs/month)\n", style="dim")
    text.append("next: " + ", ".join(r.strftime("%a %b %d %H:%M") for r in runs) + " UTC")
    return cron, text


class RescheduleScreen(Dialog[str | None]):
    """Dismisses with the new cron expression, or None."""

    BINDINGS = keys.RESCHEDULE_DIALOG

    def __init__(
        self,
        tenant: str,
        current: str,
        clock: Callable[[], datetime] | None = None,
        cost: Callable[[str], str] | None = None,
    ) -> None:
        """`cost`: the line saying a cron's $/month before -> after (None: no cost line)."""
        super().__init__()
        self.tenant = tenant
        self.current = current
        self.clock = clock or (lambda: datetime.now(UTC))
        self.cost = cost

    def compose(self) -> ComposeResult:
        with Vertical(id="reschedule-dialog", classes="dialog"):
            yield Static(
                Text(clean_log_line(f"Reschedule {self.tenant} (now: {self.current})"), style="bold")
            )
            yield Input(
                self.current,
                placeholder="cron: m h dom mon dow, or weekly / daily",
                id="cron-input",
            )
            yield Static(id="cron-preview")
            if self.cost is not None:
                yield Static(id="cron-cost")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Save", variant="primary", id="save")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self._update(self.current)

    def _update(self, value: str) -> str | None:
        cron, text = preview(value, self.clock())
        self.query_one("#cron-preview", Static).update(text)
        if self.cost is not None:
            self.query_one("#cron-cost", Static).update(self._cost_text(cron))
        return cron

    def _cost_text(self, cron: str | None) -> Text:
        if cron is None or self.cost is None:
            return Text("")
        try:
            line = self.cost(cron)
        except Exception as exc:  # an estimate that cannot be made never blocks the edit
            return Text(clean_log_line(f"cost unknown: {exc}"), style="dim")
        style = "bold yellow" if "(+" in line else "green" if "(-" in line else ""
        return Text(clean_log_line(line), style=style)

    def on_input_changed(self, event: Input.Changed) -> None:
        self._update(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._save()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "save":
            self._save()
        else:
            self.dismiss(None)

    def _save(self) -> None:
        cron = self._update(self.query_one("#cron-input", Input).value)
        if cron is None:
            self.app.bell()  # refused: the preview line under the cron says why
            return
        self.dismiss(cron)

    def action_cancel(self) -> None:
        self.dismiss(None)
