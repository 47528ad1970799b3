"""On-call actions: the incident bundle (`i`) and bulk actions by filter (`b`).

`i` writes the selected job's incident bundle with the same function as `console incident`
(`console.oncall.write_incident`: inspect, stage history, the last 200 log lines, cpu/mem,
Trackio summary and alerts, cost so far, labels, the command to reproduce) in a thread worker,
and says where the file is; with `notify.osc52` the path also goes to the terminal's clipboard.
It writes a local file only, so read-only mode allows it.

`b` opens the bulk dialog (`screens.bulk`): an action (cancel / suspend / resume / trigger) and
a filter, a preview of exactly what changes and its money (`console.oncall.plan_bulk`, read in a
worker), and the count typed to confirm; then `console.oncall.apply_bulk` acts on exactly the
previewed ids, in a worker. Read-only mode refuses it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from console.ui.actions import ActionDone, confirm_then_run, refuse_if_read_only
from console.ui.base import ConsoleBase

if TYPE_CHECKING:
    from console.oncall import BulkPlan


def incident(app: ConsoleBase) -> None:
    """Write the selected job's incident bundle (a worker) and say where it went."""
    job = app.selected_job()
    if job is None:
        app.notify("No job selected", severity="warning")
        return
    job_id = job.id
    session = app.session

    def write() -> None:
        from console.oncall import write_incident

        path = write_incident(
            session.api, job_id, namespace=session.namespace, reader=session.metrics_reader,
            project=session.cfg.trackio.project, prices=session.prices, now=session.clock(),
        )
        if session.cfg.notify.osc52:
            app.call_from_thread(_copy_path, app, path)
        app.post_message(ActionDone(f"Incident bundle for {job_id} written to {path}", refresh=False))

    app.notify(f"Writing the incident bundle of {job_id}...", timeout=3)
    app.run_worker(write, thread=True, group="actions", exit_on_error=False,
                   description=f"Incident bundle of {job_id}")


def _copy_path(app: ConsoleBase, path: Path) -> None:
    from console.oncall import clipboard_escape
    from console.oncall.escapes import for_terminal

    escape = clipboard_escape(path)
    watch = getattr(app, "oncall", None)  # the app's terminal writer (`watch.OnCallWatch`)
    if escape and watch is not None:
        watch.write_terminal(for_terminal(escape))


def bulk(app: ConsoleBase) -> None:
    """Open the bulk dialog on the jobs filter; apply what it confirms, in a worker."""
    if refuse_if_read_only(app, "bulk"):
        return
    session = app.session
    try:
        filter_text = app.jobs_table.job_filter.text.strip()
    except Exception:  # no jobs table (closing)
        filter_text = ""

    def plan(action: str, text: str) -> BulkPlan:  # the dialog's worker thread
        from console.oncall import plan_bulk

        return plan_bulk(
            session.api, action, text, namespace=session.namespace, prices=session.prices,
            now=session.clock(), read_only=app.read_only, reader=session.metrics_reader,
            project=session.cfg.trackio.project,
        )

    def confirmed(result: tuple[BulkPlan, str] | None) -> None:
        if result is None:
            app.notify("Bulk: nothing done", timeout=3)
            return
        chosen, typed = result
        _apply(app, chosen, typed)

    from console.ui.screens.bulk import BulkScreen  # modal screens load on first use

    app.push_screen(BulkScreen(plan, filter_text=filter_text), confirmed)


def _apply(app: ConsoleBase, plan: BulkPlan, typed: str) -> None:
    session = app.session

    def apply() -> None:
        from console.oncall import apply_bulk

        result = apply_bulk(session.api, plan, typed, namespace=session.namespace)
        failed = result.failed
        text = f"Bulk {plan.action}: {result.done} of {plan.count} done"
        if failed:
            text += f", {len(failed)} failed: " + "; ".join(o.message for o in failed[:3])
        app.post_message(ActionDone(text, severity="warning" if failed else "information"))

    app.run_worker(apply, thread=True, group="actions", exit_on_error=False,
                   description=f"Bulk {plan.action} of {plan.count}")


def budget_undo(app: ConsoleBase) -> None:
    """`U` on the Costs tab: resume the schedules the budget suspended (after a yes naming them);
    the budget warns, not suspends, for the rest of that month at that budget."""
    from console.oncall.budget import last_cut, undo
    from console.oncall.store import OnCallStore

    if refuse_if_read_only(app, "budget undo"):
        return
    store = OnCallStore()
    cut = last_cut(store)
    if cut is None:
        app.notify("The budget has suspended nothing", timeout=3)
        return

    def resume() -> str:
        done, resumed, problems = undo(app.api, store, namespace=app.namespace)
        said = f"Resumed {len(resumed)} of {len(done.schedules) if done else 0} schedule(s) the budget suspended"
        return said + ("; " + "; ".join(problems) if problems else "")

    details = [f"{s.tenant}: schedule {s.scheduled_job_id}, ${s.remaining_usd:,.2f} left this month"
               for s in cut.schedules]
    details.append(f"{cut.month} was projected ${cut.projection_usd:,.2f} against the ${cut.budget_usd:,.2f} budget; "
                   "it then warns instead of suspending again")
    confirm_then_run(app, f"Resume the {len(cut.schedules)} schedule(s) the budget suspended?", details,
                     yes_label="Resume", description="resume the budget's suspensions", fn=resume,
                     declined="The budget's suspensions stay")
