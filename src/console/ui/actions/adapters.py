"""Adapter versions of the selected tenant: the versions view (`v`), promote (`p`) and roll back (`b`).

The same functions as `console adapters TENANT`: `adapters.check_promotable` refuses a version
that did not pass (its message, as is), `adapters.confirmation` words the question naming both
versions and their figures, `adapters.promote` moves the live tag. Read-only refuses a move
before anything else; the move runs in a thread worker (group "actions", its failure said by the
app's one handler) and the repo is read again after it, so the view and the fleet row show the
new live version.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from console.ui.actions import ActionDone, refuse_if_read_only
from console.ui.base import ConsoleBase

if TYPE_CHECKING:
    from console.adapters import AdapterVersion, Versions
    from console.ui.screens.versions import VersionsScreen


def versions(app: ConsoleBase) -> None:
    """Open the versions view of the selected tenant's adapter repo."""
    tenant = app.selected_tenant()
    if tenant is None:
        app.notify("Versions: no tenant selected", severity="warning")
        return
    repo = app.live.repo(tenant.tenant)
    if repo is None:
        app.notify(
            f"Versions: {tenant.tenant} has no adapter repo (its runs name no hub_model_id and the config "
            "has no defaults.hub_model_id)",
            severity="warning",
        )
        return
    from console.ui.screens.versions import VersionsScreen  # modal screens load on first use

    app.push_screen(VersionsScreen(tenant.tenant, repo, promote=partial(promote, app),
                                   rollback=partial(rollback, app)))


def promote(app: ConsoleBase, screen: VersionsScreen) -> None:
    """Make the highlighted version live, after a confirmation naming both versions."""
    if refuse_if_read_only(app, "promote"):
        return
    target = screen.selected()
    if screen.versions is None or target is None:
        app.notify("Promote: no version selected", severity="warning")
        return
    _move(app, screen, screen.versions, target, "Promote")


def rollback(app: ConsoleBase, screen: VersionsScreen) -> None:
    """Move live back to the passing version before it, after a confirmation naming both."""
    if refuse_if_read_only(app, "rollback"):
        return
    versions = screen.versions
    if versions is None:
        app.notify("Roll back: the versions are not read yet", severity="warning")
        return
    target = versions.previous_pass()
    if target is None:
        app.notify(f"Roll back: nothing to roll back to: no passing version of {versions.repo_id} before the live one",
                   severity="warning")
        return
    _move(app, screen, versions, target, "Roll back")


def _move(app: ConsoleBase, screen: VersionsScreen, versions: Versions, target: AdapterVersion, verb: str) -> None:
    from console.adapters import AdapterError, check_promotable, confirmation
    from console.adapters import promote as move_live

    try:
        check_promotable(versions, target)
    except AdapterError as exc:
        app.notify(f"{verb}: {exc}", severity="warning", timeout=8)
        return
    current = versions.live
    tenant = screen.tenant
    details = [
        f"tenant {tenant}: {target.run}, made by job {target.job_id or '(none named)'}, commit {target.commit}",
        f"now live: {current.describe() if current else 'nothing'}",
        f"then live: {target.describe()}",
        f"{versions.live_tag} is what serving loads; the other version stays in the repo",
    ]
    repo, api, live = versions.repo_id, app.api, app.live

    def answered(yes: bool | None) -> None:
        if not yes:
            app.notify(f"{verb}: not done", timeout=3)
            return
        marks = live.marks_for(tenant)

        def move() -> None:
            move_live(api, versions, target)
            app.post_message(live.read_message(api, repo, marks))
            app.post_message(ActionDone(f"{repo}: {versions.live_tag} -> {target.describe()}", refresh=False))

        app.run_worker(move, thread=True, group="actions", exit_on_error=False,
                       description=f"{verb} {target.run} of {tenant}")

    from console.ui.screens.confirm import ConfirmScreen

    app.push_screen(ConfirmScreen(confirmation(versions, target), details, yes_label=verb), answered)
