"""The selected job's training curves: loss, learning rate and grad norm as sparklines, their
latest values, step / max steps as a progress bar, and the run's Trackio alerts.

Self-contained: construct it with a :class:`console.trackio_metrics.MetricsReader` and the Trackio project,
then call :meth:`MetricsPanel.show_job` (a `JobInfo` or a `JobRow`: anything with `labels` and a
stage) or :meth:`MetricsPanel.show_run` when the selected job changes. Reads happen in a thread
worker; while the job is active the panel re-reads every `poll_seconds` (one-shot timer re-armed
after each read, so reads never pile up) and skips the read while it is not on screen. Run names and
alert texts are untrusted: shown as plain `Text`, never markup.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import ProgressBar, Sparkline, Static

from console import levels
from console.jobs import clean_log_line
from console.stages import ACTIVE_STAGES
from console.trackio_metrics import Alert, MetricsReader, RunMetrics, downsample

LEVEL_STYLE = {levels.ERROR: "bold red", levels.WARN: "yellow", levels.INFO: "dim"}


def plain(text: object, style: str = "") -> Text:
    return Text(clean_log_line("" if text is None else str(text)), style=style, no_wrap=True,
                overflow="ellipsis")


def fmt_value(value: float | None, kind: str) -> str:
    if value is None:
        return "-"
    if not math.isfinite(value):
        return str(value).lower()
    if kind == "lr":
        return f"{value:.1e}"
    return f"{value:.4g}"


def alert_line(a: Alert, *, with_run: bool = False) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f"{a.level:<5} ", style=LEVEL_STYLE.get(a.level, ""))
    if with_run:
        text.append_text(plain(a.run, "bold"))
        text.append(" ")
    if a.step is not None:
        text.append(f"@{a.step} ", style="dim")
    text.append_text(plain(a.title))
    if a.text:
        text.append(": ")
        text.append_text(plain(a.text, "dim"))
    return text


class MetricsPanel(Vertical):
    """Sparklines, latest values, progress and alerts of one Trackio run."""

    DEFAULT_CSS = """
    MetricsPanel { height: auto; min-height: 6; padding: 0 1; }
    MetricsPanel .metrics-title { height: 1; text-style: bold; }
    MetricsPanel .metric-row { height: 1; }
    MetricsPanel .metric-name { width: 6; color: $text-muted; }
    MetricsPanel Sparkline { width: 1fr; height: 1; }
    MetricsPanel .metric-value { width: 10; text-align: right; }
    MetricsPanel #metrics-progress-row { height: 1; }
    MetricsPanel ProgressBar { width: 1fr; height: 1; }
    MetricsPanel #metrics-steps { width: auto; min-width: 12; padding-left: 1; }
    MetricsPanel #metrics-alerts { height: auto; max-height: 5; }
    MetricsPanel #metrics-status { height: 1; color: $text-muted; }
    """

    @dataclass
    class Loaded(Message):
        """A read finished: the run's metrics (also posted for the app to use, e.g. alert marks)."""

        run: str
        metrics: RunMetrics

    @dataclass
    class Failed(Message):
        """A read failed; `error` is one line."""

        run: str
        error: str

    def __init__(self, reader: MetricsReader, project: str, *, poll_seconds: float = 5.0,
                 max_alerts: int = 5, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.reader = reader
        self.project = project
        self.poll_seconds = poll_seconds
        self.max_alerts = max_alerts
        self.run_name: str | None = None
        self.job_id: str | None = None
        self.live = False
        self.metrics: RunMetrics | None = None
        self.reads = 0
        self._timer: Any = None

    def compose(self) -> ComposeResult:
        yield Static(plain("no job selected"), id="metrics-title", classes="metrics-title")
        for key, name in (("loss", "loss"), ("lr", "lr"), ("grad", "gnorm")):
            with Horizontal(classes="metric-row"):
                yield Static(name, classes="metric-name")
                yield Sparkline([], id=f"spark-{key}")
                yield Static("-", id=f"value-{key}", classes="metric-value")
        with Horizontal(id="metrics-progress-row"):
            # total=1, progress=0 while the run's length is unknown: an empty bar, not Textual's
            # animated "indeterminate" one (it would redraw all the time and suggest activity)
            yield ProgressBar(total=1, show_eta=False, show_percentage=False, id="metrics-progress")
            yield Static("", id="metrics-steps")
        yield Static("", id="metrics-alerts")
        yield Static("", id="metrics-status")

    # -- what the app calls

    def show_job(self, job: Any) -> None:
        """The selected job changed: a `JobInfo`, a `JobRow`, or None for no selection."""
        if job is None:
            self.show_run(None)
            return
        labels = getattr(job, "labels", None) or {}
        status = getattr(job, "status", None)
        stage = getattr(job, "stage", None) or getattr(status, "stage", "") or ""
        stage = str(getattr(stage, "value", stage))
        self.show_run(labels.get("run") or None, job_id=getattr(job, "id", None),
                      live=stage in ACTIVE_STAGES)

    def show_run(self, run: str | None, *, job_id: str | None = None, live: bool = False) -> None:
        """Show a Trackio run (None clears the panel); `live` keeps re-reading it."""
        changed = run != self.run_name
        self.run_name, self.job_id, self.live = run, job_id, live
        if changed:
            self.metrics = None
            self._draw(None)
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if run is None:
            self.query_one("#metrics-title", Static).update(
                plain("no Trackio run for this job (no run= label)" if job_id else "no job selected")
            )
            return
        self.load()

    def reload(self) -> None:
        if self.run_name is not None:
            self.load()

    # -- reading

    @work(thread=True, exclusive=True, group="trackio-metrics", exit_on_error=False,
          description="read Trackio metrics")
    def load(self) -> None:
        run = self.run_name
        if run is None:
            return
        try:
            metrics = self.reader.run_metrics(self.project, run)
        except Exception as exc:  # shown in the panel; the next poll retries
            self.post_message(self.Failed(run, clean_log_line(str(exc)).splitlines()[0][:200]
                                          if str(exc) else type(exc).__name__))
            return
        self.post_message(self.Loaded(run, metrics))

    def on_metrics_panel_loaded(self, message: Loaded) -> None:
        if message.run != self.run_name:
            return  # a read for a run no longer selected
        self.reads += 1
        self.metrics = message.metrics
        self._draw(message.metrics)
        self._arm()

    def on_metrics_panel_failed(self, message: Failed) -> None:
        if message.run != self.run_name:
            return
        self.query_one("#metrics-status", Static).update(plain(f"metrics: {message.error}", "red"))
        self._arm()

    def _arm(self) -> None:
        if self.live and self.poll_seconds > 0:
            if self._timer is not None:
                self._timer.stop()
            self._timer = self.set_timer(self.poll_seconds, self._poll)

    def _poll(self) -> None:
        self._timer = None
        if not self.live:
            return
        if not self._on_screen():
            self._arm()  # hidden (another tab, a modal on top): check again later, read nothing
            return
        self.load()

    def _on_screen(self) -> bool:
        try:
            return self.screen.is_current and self.region.area > 0
        except Exception:
            return False

    # -- drawing

    def _draw(self, m: RunMetrics | None) -> None:
        title = self.query_one("#metrics-title", Static)
        status = self.query_one("#metrics-status", Static)
        width = max(8, self.size.width - 18) if self.size.width else 60
        for key, series, latest in (
            ("loss", m.loss if m else [], m.latest_loss if m else None),
            ("lr", m.learning_rate if m else [], m.latest_learning_rate if m else None),
            ("grad", m.grad_norm if m else [], m.latest_grad_norm if m else None),
        ):
            self.query_one(f"#spark-{key}", Sparkline).data = downsample(series, width)
            style = "bold red" if latest is not None and not math.isfinite(latest) else ""
            self.query_one(f"#value-{key}", Static).update(Text(fmt_value(latest, key), style=style))
        bar = self.query_one("#metrics-progress", ProgressBar)
        steps = self.query_one("#metrics-steps", Static)
        alerts = self.query_one("#metrics-alerts", Static)
        if m is None:
            title.update(plain(f"run {self.run_name}" if self.run_name else "no job selected"))
            bar.update(total=1, progress=0)
            steps.update("")
            alerts.update("")
            status.update(plain("reading Trackio..." if self.run_name else ""))
            return
        head = plain(f"run {m.run}", "bold")
        if m.loss_trend():
            head.append(f"  loss {m.loss_trend()}", style="red" if m.loss_trend() in ("nan", "rising") else "dim")
        title.update(head)
        if m.max_steps:
            bar.update(total=m.max_steps, progress=min(m.step or 0, m.max_steps))
        else:
            bar.update(total=1, progress=0)
        steps.update(f"{m.step if m.step is not None else '-'}/{m.max_steps or '?'} steps")
        lines = [alert_line(a) for a in m.alerts[: self.max_alerts]]
        alerts.update(Text("\n").join(lines) if lines else "")
        if not m.found:
            status.update(plain(f"no metrics yet in {self.reader.description}"))
        else:
            status.update(plain(f"{len(m.loss)} points · {self.reader.description}"))
