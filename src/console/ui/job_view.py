"""The job on screen: its streaming log, its cpu/memory samples, its details and its Trackio run.

`JobView` follows the job highlighted in the jobs table. Selecting a job restarts its log stream
(a thread worker, group "logs", fed to the log pane in batches with backpressure), its metrics
stream while it runs (group "metrics"), the details box and the Trackio panels. Each refresh
passes the new rows in (`row_refreshed`) so the log header's stage and the details stay current,
and the metrics panels switch between polling (running) and one last read (ended).

Must not import the app module (the app imports it) nor the server.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from textual.app import App
from textual.message import Message
from textual.worker import get_current_worker

from console.jobs import JobRow
from console.stages import ERROR, RUNNING, TERMINAL_STAGES
from console.ui.session import Session
from console.ui.streams import iterate_batches, iterate_cancellable
from console.ui.widgets.job_details import JobDetails
from console.ui.widgets.log_pane import LogPane

LOG_BACKLOG_LIMIT = 50_000
"""Lines waiting for the log pane beyond which the stream worker waits (backpressure)."""
LOG_PENDING_CHUNKS = 64
"""Network chunks of log lines read ahead of the pane before the stream's reader waits."""
TERMINAL = TERMINAL_STAGES


@dataclass
class MetricsSample(Message):
    """One cpu/memory sample of the job on screen, from its metrics stream."""

    job_id: str
    sample: dict[str, Any] = field(default_factory=dict)


class JobView:
    """What the log pane, the details box and the metrics panels show (see the module docstring)."""

    def __init__(self, app: App[Any], session: Session, *, stream_metrics: bool = True) -> None:
        self.app = app
        self.session = session
        self.stream_metrics = stream_metrics
        self.job_id: str | None = None
        """The job whose log is on screen."""
        self._metrics_live = False
        self._waiting: tuple[str, int, JobRow | None] | None = None
        """The job on screen whose streams wait for the backend to connect."""

    @property
    def log_pane(self) -> LogPane:
        return self.app.query_one(LogPane)

    def select(self, job_id: str | None, row: JobRow | None) -> None:
        """The jobs table highlighted `job_id`: show it everywhere, restarting the streams if new."""
        self.app.query_one(JobDetails).show(row)
        self._show_metrics(row)
        if job_id != self.job_id:
            self.open_log(job_id, row)

    def row_refreshed(self, rows: dict[str, JobRow]) -> None:
        """A refresh brought new rows: keep the log header and the details of the job on screen."""
        row = rows.get(self.job_id or "")
        if row is None:
            return
        self.log_pane.set_stage(row.stage)
        self.app.query_one(JobDetails).show(row)
        if (row.stage not in TERMINAL) != self._metrics_live:
            self._show_metrics(row)  # the run started or ended: poll, or read once more

    def _show_metrics(self, row: JobRow | None) -> None:
        from console import jobspec

        run = jobspec.trackio_run_name(row.id, row.labels) if row is not None else None
        live = row is not None and row.stage not in TERMINAL
        self._metrics_live = live
        from console.ui.widgets.training import MetricsPanel  # mounted after the first frame

        for panel in self.app.query(MetricsPanel):
            panel.show_run(run, job_id=row.id if row else None, live=live)

    def open_log(self, job_id: str | None, row: JobRow | None) -> None:
        """Show `job_id`'s log, streaming (the previous stream's lines are dropped)."""
        self.job_id = job_id
        label = f"{row.tenant} {row.kind}" if row else ""
        generation = self.log_pane.start(job_id, label, row.stage if row else "")
        if job_id is None:
            return
        reasons = getattr(self.app, "reasons", None)
        if reasons is not None and row is not None and row.stage == ERROR and job_id in reasons.known:
            self.log_pane.set_reason(reasons.known[job_id][1])
        if not self.session.connected:  # painted from the cache: the streams start once connected
            self._waiting = (job_id, generation, row)
            return
        self._start_streams(job_id, generation, row)

    def connected(self) -> None:
        """The backend is connected: start the streams of the job on screen, if they wait."""
        waiting, self._waiting = self._waiting, None
        if waiting is not None and waiting[0] == self.job_id:
            self._start_streams(*waiting)

    def _start_streams(self, job_id: str, generation: int, row: JobRow | None) -> None:
        self.app.run_worker(
            partial(self._stream_log, job_id, generation),
            thread=True,
            exclusive=True,
            group="logs",
            exit_on_error=False,
            description="stream the job's log",
        )
        if self.stream_metrics and row is not None and row.stage == RUNNING:
            self.app.run_worker(
                partial(self._stream_metrics, job_id),
                thread=True,
                exclusive=True,
                group="metrics",
                exit_on_error=False,
                description="stream the job's metrics",
            )

    def stream_failed(self, error: str) -> None:
        """The log stream's worker failed: the log pane says why."""
        self.log_pane.end(self.log_pane.generation, error)

    def show_sample(self, message: MetricsSample) -> None:
        self.log_pane.show_metrics(message.job_id, message.sample)

    def _stream_log(self, job_id: str, generation: int) -> None:
        worker = get_current_worker()
        pane = self.log_pane
        api, ns = self.session.api, self.session.namespace
        cancelled = lambda: worker.is_cancelled or pane.generation != generation  # noqa: E731
        chunked = getattr(api, "fetch_job_log_batches", None)
        if chunked is not None:  # the console's HfApi: lines in lists, a network chunk at a time
            stream = (
                _joined(chunks)
                # a network chunk (up to 64 KB) holds hundreds of lines: bound the chunks, not lines
                for chunks in iterate_batches(lambda: chunked(job_id=job_id, namespace=ns), cancelled,
                                              max_pending=LOG_PENDING_CHUNKS)
            )
        else:
            stream = ((lines, None) for lines in iterate_batches(
                lambda: api.fetch_job_logs(job_id=job_id, namespace=ns, follow=True), cancelled))
        for lines, stamps in stream:
            pane.feed(generation, lines, stamps)
            while pane.backlog() > LOG_BACKLOG_LIMIT and not worker.is_cancelled:
                time.sleep(0.01)  # backpressure: the UI drains in batches
        if not worker.is_cancelled and pane.generation == generation:
            pane.end(generation)

    def _stream_metrics(self, job_id: str) -> None:
        worker = get_current_worker()
        api, ns = self.session.api, self.session.namespace
        for sample in iterate_cancellable(
            lambda: api.fetch_job_metrics(job_id=job_id, namespace=ns, follow=True),
            lambda: worker.is_cancelled or self.job_id != job_id,
        ):
            if isinstance(sample, dict):
                self.app.post_message(MetricsSample(job_id, sample))


def _joined(chunks: list[list[str]]) -> tuple[list[str], list[str | None]]:
    """Network chunks of log lines as one list, with each line's time (`TimedLines.stamps`)."""
    lines: list[str] = []
    stamps: list[str | None] = []
    for chunk in chunks:
        lines.extend(chunk)
        stamps.extend(getattr(chunk, "stamps", None) or [None] * len(chunk))
    return lines, stamps
