"""What the action keys do, one readable function per action.

`jobs` (submit, cancel, rerun, save a log), `schedules` (reschedule, suspend/resume, trigger) and
`shell` (a shell in a running job) each hold functions that take the app. Every action follows the
same path, shared here: refuse in read-only mode, find what it applies to, ask when it costs money
or kills work (`confirm_then_run`), then make the blocking `HfApi` call in a thread worker
(group "actions") and report the outcome as a notification (`ActionDone`); a failure is reported
by the app's one worker-error handler.

Every confirmation of a training run (submit, rerun, trigger) names the same facts, from its
`jobspec.Submission`: tenant, dataset, destination, flavor, timeout with its rule, estimated cost
(`submission_details`).

Nothing here imports the app module (it imports these), the server or the training stack.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.message import Message

from console import jobspec
from console.inputs import format_duration
from console.jobspec import Submission, TrainingRequest
from console.prices import PriceBook
from console.ui import keys
from console.ui.base import ConsoleBase


@dataclass
class ActionDone(Message):
    """An action's outcome, shown as a notification; `refresh`: re-read the jobs and schedules."""

    text: str
    severity: str = "information"
    refresh: bool = True


def refuse_if_read_only(app: ConsoleBase, action: str) -> bool:
    """In read-only mode, or while the fleet tab shows the past (`J`), say that `action` is
    refused and return True."""
    from console.ui.past import refused_in_past

    what = keys.MUTATING.get(action, action)
    if refused_in_past(app, what):
        return True
    if not app.read_only:
        return False
    app.notify(
        f"Read-only: {what} refused (started with --read-only or read_only = true)",
        severity="warning",
        title="read-only",
    )
    return True


def fleet_requests(app: ConsoleBase) -> dict[str, TrainingRequest]:
    """tenant -> its request, for every tenant of the known fleet whose request is known."""
    return {t: row.request for t, row in app.refresher.fleet_rows.items() if row.request is not None}


def dataset_owners(app: ConsoleBase) -> dict[str, str]:
    """dataset -> the tenant that trains on it, from the known fleet (`jobspec.dataset_owners`)."""
    return jobspec.dataset_owners(fleet_requests(app).values())


def submission_details(sub: Submission, tenant: str, prices: PriceBook) -> list[str]:
    """What a confirmation of a run says: its warnings first (`Submission.warnings`), then tenant
    and flavor, dataset, where the weights go, the timeout with its rule, and the estimated time
    and cost."""
    kind = sub.labels.get("kind", "sft")
    timeout = f"timeout {format_duration(sub.timeout_seconds)}"
    return [
        *(f"warning: {w}" for w in sub.warnings),
        f"tenant {tenant}, {kind} on {sub.flavor} (${prices.price_per_hour(sub.flavor):.2f}/h)",
        f"dataset {sub.dataset}",
        f"weights to {sub.destination}",
        f"{timeout}: {sub.timeout_rule}" if sub.timeout_rule else timeout,
        f"estimated {format_duration(sub.estimate_hours * 3600)}, ${sub.estimate_usd:.2f} per run",
    ]


def run_in_worker(app: ConsoleBase, description: str, fn: Callable[[], str]) -> None:
    """Run a blocking API call in a thread worker; the text it returns comes back as a notification
    (its error, if any, through the app's worker-error handler, which names `description`)."""

    def call() -> None:
        app.post_message(ActionDone(fn()))

    app.run_worker(call, thread=True, group="actions", exit_on_error=False, description=description)


def confirm_then_run(
    app: ConsoleBase,
    question: str,
    details: list[str],
    *,
    yes_label: str,
    description: str,
    fn: Callable[[], str],
    declined: str,
) -> None:
    """Ask `question` (with `details`); on yes run `fn` as `run_in_worker` does, on no say `declined`."""

    def answered(yes: bool | None) -> None:
        if yes:
            run_in_worker(app, description, fn)
        else:
            app.notify(declined, timeout=3)

    from console.ui.screens.confirm import ConfirmScreen  # modal screens load on first use

    app.push_screen(ConfirmScreen(question, details, yes_label=yes_label), answered)
