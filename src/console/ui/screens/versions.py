"""`v`: a tenant's adapter versions, newest first, the live one marked; promote and roll back.

Each row is a version as `console.adapters.list_versions` reads it (the same as `console adapters
TENANT`): commit, time, run, job, verdict (PASS, FAIL with its reason, partial), first -> last
loss, the held-out metric and, for a run under `promote = "on_eval"`, both evaluation scores.
Failed and partial versions are marked in red and yellow; the live one leads with `*`. The view
shows what the app already read at once, reads the repo again in a thread worker (`ui.live_versions`) and
redraws when that read, or the one after a move, comes back.

`p` promotes the highlighted version and `b` rolls back (`ui.actions.adapters`): each asks first,
naming both versions and their figures (`adapters.confirmation`); read-only refuses both, and a
version that did not pass is refused with `adapters.check_promotable`'s reason. Every text here
(run names, failure reasons, repo ids) is shown as plain text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Static

from console.adapters import evaluated
from console.jobs import clean_log_line
from console.ui import keys
from console.ui.screens.dialog import Dialog
from console.ui.widgets.jobs_table import plain

if TYPE_CHECKING:
    from console.adapters import AdapterVersion, Versions

VERDICT_STYLES = {"PASS": "green", "FAIL": "bold red", "partial": "yellow"}
COLUMNS = (
    ("commit", "  Commit", 10),
    ("verdict", "Verdict", 14),
    ("time", "Made (UTC)", 11),
    ("job", "Job", 8),
    ("run", "Run", None),
    ("loss", "Loss", 11),
    ("metric", "Metric", 12),
    ("eval", "Eval vs live", 20),
)
"""At 80 columns the view shows which version is live, its verdict, when it was made and by which
job, and the start of its run's name; the line under the table says the highlighted version
whole (its run name, reason, full job id, figures, its evaluation). The Run column is as wide as
the longest name; the evaluation (promote = "on_eval": its loss vs the live one's then, and
whether it was promoted) is last."""


def _made(v: AdapterVersion, *, year: bool = False) -> str:
    """When the version's commit was made, UTC: `12-01 03:00` (`2026-12-01 03:00` with `year`)."""
    stamp = v.time[:16].replace("T", " ")
    if len(stamp) < 16:
        return stamp or "-"
    return stamp if year else stamp[5:]


def version_cells(v: AdapterVersion) -> tuple[str, ...]:
    """A version's row as plain strings, in `COLUMNS` order (`*` before the live one's commit)."""
    loss = "-"
    if v.first_loss is not None and v.last_loss is not None:
        loss = f"{v.first_loss:.3g}->{v.last_loss:.3g}"
    metric = f"{v.metric} {v.metric_last:.3g}" if v.metric and v.metric_last is not None else "-"
    verdict = f"{v.verdict} {v.failure}" if v.failure else v.verdict
    if v.verdict == "partial" and v.steps is not None:  # killed or running: how far it got
        verdict = f"partial {v.steps}/{v.steps_total}" if v.steps_total else f"partial {v.steps}"
    return (
        f"{'*' if v.live else ' '} {v.short}",
        verdict,
        _made(v),
        v.job_id[-8:] if v.job_id else "-",
        v.run,
        loss,
        metric,
        evaluated(v.evaluation, short=True) if v.evaluation is not None else "-",
    )


def version_line(v: AdapterVersion) -> str:
    """The highlighted version in one sentence (the line under the table; it wraps at 80 columns)."""
    verdict = f"{v.verdict} ({v.failure})" if v.failure else v.verdict
    job = f"by job {v.job_id}" if v.job_id else "by no job it names"
    live = ", live" if v.live else ""
    scores = f"; {evaluated(v.evaluation)}" if v.evaluation is not None else ""
    return (f"{v.short} {v.run}: {verdict}{live}; made {_made(v, year=True)} UTC {job}, on {v.where}; "
            f"{v.figures()}{scores}")


class VersionsScreen(Dialog[None]):
    """The versions of one tenant's adapter repo (see the module docstring)."""

    BINDINGS = keys.VERSIONS
    DEFAULT_CSS = """
    VersionsScreen { align: center middle; }
    #versions-dialog {
        width: 100%; max-width: 120; height: auto; max-height: 100%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    #versions-table { height: auto; max-height: 16; }
    #versions-status { height: auto; }
    #versions-detail { height: auto; }
    #versions-hint { color: $text-muted; }
    """

    def __init__(self, tenant: str, repo: str, *, promote: Callable[[VersionsScreen], None],
                 rollback: Callable[[VersionsScreen], None]) -> None:
        """`promote`, `rollback`: what `p` and `b` do, given this view (`ui.actions.adapters`)."""
        super().__init__()
        self.tenant = tenant
        self.repo = repo
        self._promote, self._rollback = promote, rollback
        self.versions: Versions | None = None
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="versions-dialog"):
            yield Static(id="versions-title")
            yield Static(id="versions-status")
            yield DataTable(id="versions-table", cursor_type="row", zebra_stripes=False)
            yield Static(id="versions-detail")
            yield Static(Text(self._hint()), id="versions-hint")

    def _hint(self) -> str:
        user = getattr(self.app, "user_keys", None)
        return "   ".join(f"{keys.key_name(keys.effective_key(b, user))}: {b.description.lower()}"
                          for b in keys.VERSIONS)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, label, width in COLUMNS:
            table.add_column(label, key=key, width=width)
        live = getattr(self.app, "live", None)
        if live is not None:
            self.show(live.known.get(self.repo), live.errors.get(self.repo), self.repo in live.missing,
                      reading=True)
            live.read_now(self.tenant, self.repo)
        table.focus()

    def show(self, versions: Versions | None, error: str | None = None, missing: bool = False, *,
             reading: bool = False) -> None:
        """Draw `versions` (None: not read, or could not be: `error`, `missing`), keeping the
        highlighted version (by commit) wherever it is now; the top one when it is gone."""
        title = Text(no_wrap=False)
        title.append(plain(f"{self.tenant}: {self.repo}", "bold"))
        if versions is not None:
            live = versions.live
            now = live.describe() if live else (versions.live_commit or "")[:8] or "none"
            title.append(plain(f"  {versions.live_tag}: {now}"))
        self.query_one("#versions-title", Static).update(title)
        if error:
            status = plain(error, "bold red")
        elif missing:
            status = plain(f"no adapter repo {self.repo} yet: no run of {self.tenant} pushed to it", "yellow")
        elif versions is None:
            status = plain("reading the repo ...", "dim")
        elif not versions.versions:
            status = plain("no versions yet", "dim")
        else:
            status = plain(("reading again ... " if reading else "")
                           + f"{len(versions.versions)} versions, newest first; * is live", "dim")
        self.query_one("#versions-status", Static).update(status)
        table = self.query_one(DataTable)
        keep = self.selected()  # read before the rows change: the version, by its commit
        self.versions, self.error = versions, error
        table.clear()
        for v in self._by_commit().values():  # newest first, one row per commit
            cells = version_cells(v)
            style = VERDICT_STYLES.get(v.verdict, "")
            bold = "bold" if v.live else ""
            table.add_row(
                plain(cells[0], bold), plain(cells[1], style), *(plain(cell) for cell in cells[2:4]),
                plain(cells[4], bold), *(plain(cell) for cell in cells[5:]), key=v.commit,
            )
        if keep is not None and keep.commit in self._by_commit():
            table.move_cursor(row=table.get_row_index(keep.commit), animate=False)
        self._show_detail()

    def _by_commit(self) -> dict[str, AdapterVersion]:
        return {v.commit: v for v in (self.versions.versions if self.versions else [])}

    def selected(self) -> AdapterVersion | None:
        """The highlighted version (None when there is none), by the commit its row is keyed by."""
        table = self.query_one(DataTable)
        if self.versions is None or not table.row_count or not 0 <= table.cursor_row < table.row_count:
            return None
        key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        return self._by_commit().get(key or "")

    def _show_detail(self) -> None:
        v = self.selected()
        # wrapped, not cut: the run name and the reason whole at 80 columns (plain text, never markup)
        self.query_one("#versions-detail", Static).update(Text(clean_log_line(version_line(v))) if v else "")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_detail()

    def action_promote(self) -> None:
        self._promote(self)

    def action_rollback(self) -> None:
        self._rollback(self)

    def action_close(self) -> None:
        self.dismiss(None)
