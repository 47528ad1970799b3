"""Bulk actions by filter: an action and a filter, the preview of exactly what changes and what it
costs or saves, then the count typed to confirm.

The dialog plans with the function it is given (`console.oncall.plan_bulk` over the app's
backend), in a thread worker; it dismisses with (the plan, the typed count) only once
`console.oncall.check_confirmation` accepts the count, so what is applied is exactly what was
previewed. Changing the action or the filter throws the preview away.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, Static

from console.jobs import clean_log_line
from console.ui import keys
from console.ui.screens.dialog import Dialog

if TYPE_CHECKING:
    from console.oncall import BulkPlan

PREVIEW_ITEMS = 200
"""Items the preview lists (it scrolls) before "and N more" (the total counts them all)."""


class BulkScreen(Dialog["tuple[BulkPlan, str] | None"]):
    """Dismisses with (plan, typed count) once the count is right, or None."""

    BINDINGS = keys.BULK_DIALOG

    def __init__(self, planner: Callable[[str, str], BulkPlan], *, action: str = "cancel",
                 filter_text: str = "") -> None:
        super().__init__()
        self.planner = planner
        self.initial_action = action
        self.initial_filter = filter_text
        self.plan: BulkPlan | None = None
        self.planning = False
        self._asked_from: object = None
        """The widget that had the focus when the preview was asked for (the focus moves to the
        count only if it is still there: never away from where the user went meanwhile)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="bulk-dialog", classes="dialog"):
            yield Static(Text("Bulk action by filter", style="bold"))
            with Horizontal(classes="form-row"):
                yield Static("Action", classes="form-label")
                yield Input(self.initial_action, placeholder="cancel | suspend | resume | trigger",
                            id="bulk-action", compact=True)
            with Horizontal(classes="form-row"):
                yield Static("Filter", classes="form-label")
                yield Input(self.initial_filter, placeholder="tenant:acme label:env=dev stage:running",
                            id="bulk-filter", compact=True)
            with VerticalScroll(id="bulk-items"):
                yield Static(id="bulk-list")
            yield Static(Text("enter: preview what changes", style="dim"), id="bulk-preview")
            with Horizontal(classes="form-row"):
                yield Static("Count", classes="form-label")
                yield Input(placeholder="type the count shown to confirm", id="bulk-count", compact=True,
                            disabled=True)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Preview", id="preview")
                yield Button("Apply", variant="error", id="apply", disabled=True)
                yield Button("Close (esc)", id="close")

    def on_mount(self) -> None:
        self.query_one("#bulk-items", VerticalScroll).display = False
        self.query_one("#bulk-filter" if self.initial_filter else "#bulk-action", Input).focus()

    # -- preview

    def _request(self) -> tuple[str, str]:
        action = self.query_one("#bulk-action", Input).value.strip().lower()
        return action, self.query_one("#bulk-filter", Input).value.strip()

    def preview(self) -> None:
        if self.planning:
            return
        action, text = self._request()
        self.planning = True
        self._asked_from = self.focused
        self._say(Text(f"reading what {action or '?'} {text or '?'} matches...", style="dim"))

        def plan() -> None:
            try:
                result: BulkPlan | str = self.planner(action, text)
            except Exception as exc:  # BulkRefused (one line) or a failed read
                result = " ".join(str(exc).split())[:300] or type(exc).__name__
            self.app.call_from_thread(self._planned, (action, text), result)

        self.run_worker(plan, thread=True, group="bulk-plan", exit_on_error=False,
                        description="plan the bulk action")

    def _planned(self, request: tuple[str, str], result: BulkPlan | str) -> None:
        self.planning = False
        if request != self._request():  # changed while it was read: that preview is stale
            self._say(Text("the action or filter changed: enter to preview again", style="dim"))
            return
        if isinstance(result, str):
            self._set_plan(None)
            self._show_items(None)
            self._say(Text(clean_log_line(result), style="bold red"))
            return
        self._set_plan(result)
        listing = Text(no_wrap=True, overflow="ellipsis")  # one row per item: 8 of them in view
        for item in result.items[:PREVIEW_ITEMS]:
            target = item.target_id[-8:] if item.target == "job" else item.target_id
            listing.append(clean_log_line(f"{target} {item.tenant}"), style="bold")
            what = " ".join(item.what.split())  # the money first: a cut row keeps it
            listing.append(clean_log_line(f"  {item.money}  {what}") + "\n")
        if result.count > PREVIEW_ITEMS:
            listing.append(f"... and {result.count - PREVIEW_ITEMS} more\n", style="dim")
        listing.rstrip()
        self._show_items(listing if result.count else None)
        text = Text(clean_log_line(result.total_line()), style="bold")
        if result.count:
            text.append(f"\ntype {result.count} below to {result.action} exactly these", style="yellow")
        self._say(text)
        if result.count and self.focused is self._asked_from:
            self.query_one("#bulk-count", Input).focus()  # the next thing to do: type the count

    def _set_plan(self, plan: BulkPlan | None) -> None:
        self.plan = plan
        live = plan is not None and plan.count > 0
        count = self.query_one("#bulk-count", Input)
        count.disabled = not live
        if not live:
            count.value = ""
        self.query_one("#apply", Button).disabled = not live

    def _show_items(self, listing: Text | None) -> None:
        box = self.query_one("#bulk-items", VerticalScroll)
        box.display = listing is not None
        self.query_one("#bulk-list", Static).update(listing or "")
        box.scroll_home(animate=False)

    def _say(self, text: Text) -> None:
        self.query_one("#bulk-preview", Static).update(text)

    # -- confirm

    def apply(self) -> None:
        from console.oncall import BulkRefused, check_confirmation

        plan = self.plan
        if plan is None:
            self.preview()
            return
        typed = self.query_one("#bulk-count", Input).value.strip()
        try:
            check_confirmation(plan, typed)
        except BulkRefused as exc:  # said in the dialog, under the list (no toast over it)
            self._say(Text(clean_log_line(str(exc)), style="bold red"))
            self.app.bell()
            return
        self.dismiss((plan, typed))

    # -- events

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id in ("bulk-action", "bulk-filter") and self.plan is not None:
            self._set_plan(None)
            self._show_items(None)
            self._say(Text("the action or filter changed: enter to preview again", style="dim"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "bulk-count":
            self.apply()
        else:
            self.preview()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "preview":
            self.preview()
        elif event.button.id == "apply":
            self.apply()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
