"""The fleet as it was (`J` on the Fleet tab): ask for a time, derive the rows as of then, show them
marked as the past; `esc` (or `J` with no time) shows the present again.

The rows come from the local cache (`console.cache.past.runs_as_of`: each tenant's newest run
created by then, its stage as of then by `console.fleet.past`) and the Live cells from the live
versions the console saw (`console.cache.past.live_as_of`). Read in a thread worker; the app's
actions refuse while the past is shown (`console.ui.actions.refuse_if_read_only`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from console.inputs import parse_since

ConsoleBase = Any
"""The app (`console.ui.base.ConsoleBase`; not imported: its actions and the fleet table import this)."""

PROMPT = "Show the fleet as of (HH:MM, 30m, 2h, an ISO time; UTC; empty: now):"


def ask_past(app: ConsoleBase) -> None:
    from console.ui.screens.prompt import PromptScreen  # modal screens load on first use

    app.push_screen(PromptScreen(PROMPT, "", "03:00"), lambda text: show_past(app, text))


def show_past(app: ConsoleBase, text: str | None) -> datetime | None:
    """Show the fleet as of `text` (`parse_since`); no time: the present. The time asked, else None."""
    if text is None or not text.strip():
        back_to_present(app)
        return None
    now = app.clock()
    try:
        at = parse_since(text, now, field="time")
    except ValueError as exc:
        app.notify(str(exc), severity="error")
        return None
    if at > now:
        app.notify(f"time: {at:%Y-%m-%d %H:%M} UTC is in the future", severity="error")
        return None
    refresher = app.refresher
    scheduled = list(refresher.scheduled.values())
    outcomes = dict(refresher.outcomes)

    def derive() -> None:
        from console.cache.past import live_as_of, runs_as_of
        from console.fleet.past import fleet_as_of

        cache = app.session.cache
        jobs = runs_as_of(cache, at)
        rows = fleet_as_of(scheduled, jobs, at, prices=app.session.prices, outcomes=outcomes)
        live = live_as_of(cache, at)
        app.call_from_thread(_show, app, rows, at, live)

    app.run_worker(derive, thread=True, group="fleet-past", exclusive=True, exit_on_error=False,
                   description="derive the fleet as it was")
    return at


def _show(app: ConsoleBase, rows: list[Any], at: datetime, live: dict[str, Any]) -> None:
    table = app.fleet_table
    table.show_past(rows, at, live)
    app.notify(f"The fleet as of {at:%Y-%m-%d %H:%M} UTC ({len(rows)} rows, read-only); esc: now",
               title="as of", timeout=4)


def back_to_present(app: ConsoleBase) -> None:
    table = app.fleet_table
    if table.past is None:
        return
    table.show_present(list(app.refresher.fleet_rows.values()), app.clock())


def refused_in_past(app: ConsoleBase, what: str) -> bool:
    """While the fleet tab shows the past, say that `what` is refused and return True."""
    try:
        past = app.fleet_table.past if app.active_tab == "fleet" else None
    except Exception:  # noqa: BLE001 - no fleet tab mounted: the present
        return False
    if past is None:
        return False
    app.notify(f"The fleet as of {past:%H:%M} UTC is the past: {what} refused (esc: back to now)",
               severity="warning", title="as of")
    return True
