"""Pilot: the sparklines panel and the alert list in a small host app, fed by real training runs."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import ProgressBar, Sparkline, Static

from console.trackio_metrics import LocalTrackioReader
from console.ui.widgets.training import AlertList, MetricsPanel


def text_of(widget: Static) -> str:
    content = widget.content
    return content.plain if isinstance(content, Text) else str(content)


@dataclass
class FakeRow:  # the shape of the jobs pane's JobRow that the panel reads: id, labels, stage
    id: str
    labels: dict
    stage: str


class Host(App):
    def __init__(self, reader, project):
        super().__init__()
        self.reader, self.project = reader, project
        self.new_alerts: list = []

    def compose(self) -> ComposeResult:
        yield MetricsPanel(self.reader, self.project, poll_seconds=0.2, id="metrics")
        yield AlertList(self.reader, self.project, poll_seconds=0.2, id="alerts")

    def on_alert_list_new_alerts(self, message: AlertList.NewAlerts) -> None:
        self.new_alerts.extend(message.alerts)


async def wait_reads(pilot, widget, n: int, attr: str = "reads", timeout: float = 15.0) -> None:
    from tests.ui.conftest import wait_for

    await wait_for(pilot, lambda: getattr(widget, attr) >= n, timeout, f"{widget} to read {n} time(s)")


async def test_sparklines_fill_from_a_real_run_and_the_nan_alert_appears(trained_store):
    reader = LocalTrackioReader(trained_store.trackio_dir)
    app = Host(reader, trained_store.project)
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(MetricsPanel)
        alerts = app.query_one(AlertList)
        await wait_reads(pilot, alerts, 1)

        panel.show_job(FakeRow("job-1", {"run": trained_store.healthy, "tenant": "acme"}, "COMPLETED"))
        await wait_reads(pilot, panel, 1)
        for key in ("loss", "lr", "grad"):
            data = app.query_one(f"#spark-{key}", Sparkline).data
            assert data and len(data) == trained_store.steps  # 24 points fit the panel's width
        loss = app.query_one("#spark-loss", Sparkline).data
        assert loss[-1] < loss[0]
        assert text_of(app.query_one("#value-loss", Static)) == f"{panel.metrics.latest_loss:.4g}"
        bar = app.query_one("#metrics-progress", ProgressBar)
        assert bar.total == trained_store.steps and bar.progress == trained_store.steps
        assert text_of(app.query_one("#metrics-steps", Static)) == "24/24 steps"
        assert "falling" in text_of(app.query_one("#metrics-title", Static))
        assert text_of(app.query_one("#metrics-alerts", Static)) == ""

        panel.show_job(FakeRow("job-2", {"run": trained_store.poisoned}, "ERROR"))
        await wait_reads(pilot, panel, 2)
        assert text_of(app.query_one("#value-loss", Static)) == "nan"
        assert len(app.query_one("#spark-loss", Sparkline).data) == trained_store.nan_at - 1
        shown = text_of(app.query_one("#metrics-alerts", Static))
        assert "ERROR" in shown and "NaN/inf loss" in shown and f"step={trained_store.nan_at}" in shown
        assert text_of(app.query_one("#metrics-steps", Static)) == "12/24 steps"

        fleet = text_of(alerts)
        assert trained_store.poisoned in fleet and "NaN/inf loss" in fleet
        assert trained_store.healthy not in fleet
        assert alerts.by_run == {trained_store.poisoned: "ERROR"}

        panel.show_job(FakeRow("job-3", {"tenant": "x"}, "COMPLETED"))  # a job without a run label
        await pilot.pause()
        assert "no Trackio run" in text_of(app.query_one("#metrics-title", Static))
        assert app.query_one("#spark-loss", Sparkline).data == []


class GrowingReader:
    """A real store whose reads the test can count, and an alert with markup in its text."""

    def __init__(self, reader):
        self.inner = reader
        self.description = reader.description
        self.calls = 0

    def runs(self, project):
        return self.inner.runs(project)

    def run_metrics(self, project, run):
        self.calls += 1
        return self.inner.run_metrics(project, run)

    def alerts(self, project, run=None):
        return self.inner.alerts(project, run)


async def test_a_live_job_is_polled_and_a_finished_one_is_not(trained_store):
    reader = GrowingReader(LocalTrackioReader(trained_store.trackio_dir))
    app = Host(reader, trained_store.project)
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(MetricsPanel)
        panel.show_job(FakeRow("job-1", {"run": trained_store.healthy}, "RUNNING"))
        await wait_reads(pilot, panel, 3)  # re-read while running
        panel.show_job(FakeRow("job-1", {"run": trained_store.healthy}, "COMPLETED"))
        await wait_reads(pilot, panel, 4)
        calls = reader.calls
        alerts = app.query_one(AlertList)  # polls at the panel's pace: it shows polls go by
        await wait_reads(pilot, alerts, alerts.reads + 3)
        assert reader.calls == calls  # finished: no more polling


async def test_new_alerts_are_announced_and_untrusted_text_stays_plain(tmp_path):
    import subprocess
    import sys

    trackio_dir = tmp_path / "trackio"
    evil = "[bold red]pwn[/] \x1b[2J"
    code = (
        "import trackio\n"
        "trackio.init(project='p', name='evil-run')\n"
        "trackio.log({'train/loss': 1.0})\n"
        f"trackio.alert(title={evil!r}, text='[link=http://x]y[/link]', level=trackio.AlertLevel.WARN)\n"
        "trackio.finish()\n"
    )
    env = {"TRACKIO_DIR": str(trackio_dir), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin",
           "HF_HOME": str(tmp_path / "hf")}
    reader = LocalTrackioReader(trackio_dir)
    app = Host(reader, "p")
    async with app.run_test(size=(80, 24)) as pilot:
        alerts = app.query_one(AlertList)
        await wait_reads(pilot, alerts, 1)
        assert app.new_alerts == []  # the first read sets the baseline
        subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
        await wait_reads(pilot, alerts, alerts.reads + 2)
        assert [a.title for a in app.new_alerts] == [evil]
        shown = text_of(alerts)
        assert "[bold red]pwn[/]" in shown and "[link=http://x]y[/link]" in shown
        assert "\x1b" not in shown
