"""The selected job's particulars beside its log (wide screens): labels, flavor, timing, message.

Lives at the top of `#metrics-panel`; the training-metrics widgets mount below it.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from console.inputs import format_duration
from console.jobs import JobRow, clean_log_line, format_cost
from console.ui.widgets.quiet import update_if_changed


class JobDetails(Static):
    DEFAULT_CSS = """
    JobDetails { height: auto; padding: 0 1; }
    """

    def show(self, row: JobRow | None) -> None:
        if row is None:
            self._set(Text("no job selected", style="dim"))
            return
        text = Text(no_wrap=False)
        text.append(f"{row.id}\n", style="bold")
        text.append(f"{row.stage}", style="bold")
        text.append(f" on {row.flavor}\n")
        ran = format_duration(row.running_seconds) if row.running_seconds is not None else "-"
        text.append(f"ran {ran}, cost {format_cost(row.cost_usd)}\n")
        if row.message:
            text.append(clean_log_line(row.message) + "\n", style="red")
        text.append("ssh available\n" if row.ssh_url else "no ssh\n", style="dim")
        for key, value in sorted(row.labels.items()):
            text.append(f"{clean_log_line(key)}=", style="dim")
            text.append(clean_log_line(value) + "\n")
        self._set(text)

    def _set(self, text: Text) -> None:
        # every refresh shows the selected job again, mostly unchanged; its lines wrap, so a
        # changed text may change its height: lay out whenever it changed
        update_if_changed(self, text)
