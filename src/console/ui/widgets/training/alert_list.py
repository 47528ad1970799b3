"""The fleet-wide Trackio alert list: WARN and ERROR alerts of every run, newest first.

Construct with a :class:`console.trackio_metrics.MetricsReader` and the project; it reads in a thread
worker every `poll_seconds` (one-shot timer re-armed after each read). Alerts that appear after the
first read are announced with :class:`AlertList.NewAlerts` (the app can `notify` them or mark the
jobs whose `run` label matches); :attr:`AlertList.by_run` maps run name to its worst level. Alert
text is untrusted: plain `Text` only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import work
from textual.message import Message
from textual.widgets import Static

from console import levels
from console.trackio_metrics import Alert, MetricsReader, fleet_alerts
from console.ui.widgets.training.sparklines import alert_line, plain

_RANK = {level: rank for rank, level in enumerate(levels.LEVELS)}


class AlertList(Static):
    """WARN / ERROR alerts across the fleet's runs."""

    DEFAULT_CSS = """
    AlertList { height: auto; max-height: 8; padding: 0 1; }
    """

    @dataclass
    class NewAlerts(Message):
        """Alerts not seen by an earlier read (never posted for the first read)."""

        alerts: list[Alert]

    @dataclass
    class Loaded(Message):
        alerts: list[Alert]

    @dataclass
    class Failed(Message):
        error: str

    def __init__(self, reader: MetricsReader, project: str, *, poll_seconds: float = 15.0,
                 max_lines: int = 6, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(plain("alerts: reading Trackio..."), id=id, classes=classes)
        self.reader = reader
        self.project = project
        self.poll_seconds = poll_seconds
        self.max_lines = max_lines
        self.alerts: list[Alert] = []
        self.by_run: dict[str, str] = {}
        self.reads = 0
        self._seen: set[tuple[str, str, str, str]] | None = None
        self._timer: Any = None

    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, group="trackio-alerts", exit_on_error=False,
          description="read Trackio alerts")
    def load(self) -> None:
        try:
            alerts = fleet_alerts(self.reader, self.project)
        except Exception as exc:
            self.post_message(self.Failed(str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__))
            return
        self.post_message(self.Loaded(alerts))

    def on_alert_list_loaded(self, message: Loaded) -> None:
        self.reads += 1
        self.alerts = message.alerts
        keys = {(a.run, a.timestamp, a.title, a.text) for a in message.alerts}
        if self._seen is not None:
            fresh = [a for a in message.alerts if (a.run, a.timestamp, a.title, a.text) not in self._seen]
            if fresh:
                self.post_message(self.NewAlerts(fresh))
        self._seen = keys
        worst: dict[str, str] = {}
        for a in message.alerts:
            if a.run not in worst or _RANK.get(a.level, 0) > _RANK.get(worst[a.run], 0):
                worst[a.run] = a.level
        self.by_run = worst
        if not message.alerts:
            self.update(plain("no WARN/ERROR alerts", "dim"))
        else:
            lines = [alert_line(a, with_run=True) for a in message.alerts[: self.max_lines]]
            more = len(message.alerts) - len(lines)
            if more > 0:
                lines.append(Text(f"... {more} more", style="dim"))
            self.update(Text("\n").join(lines))
        self._arm()

    def on_alert_list_failed(self, message: Failed) -> None:
        self.update(plain(f"alerts: {message.error}", "red"))
        self._arm()

    def _arm(self) -> None:
        if self.poll_seconds > 0:
            if self._timer is not None:
                self._timer.stop()
            self._timer = self.set_timer(self.poll_seconds, self.load)
