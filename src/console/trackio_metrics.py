"""Training metrics and alerts from Trackio, for the sparklines panel and the fleet's loss trends.

The training script reports to Trackio (``report_to="trackio"``, a project and a run name; the
console puts the run name on the job as the ``run`` label) and raises ``trackio.alert`` on NaN,
divergence and stalls. This module reads them back through trackio's own API:

* :class:`LocalTrackioReader` — the local store (a SQLite file per project under ``TRACKIO_DIR``;
  the embedded server gives its jobs ``TRACKIO_DIR = data_dir()/trackio``). Runs and alerts come
  from ``trackio.Api()``; per-step logs from ``trackio.sqlite_storage.SQLiteStorage.get_logs``
  (the public ``Api`` has no metric reader in trackio 0.43).
* :class:`SpaceTrackioReader` — the configured Trackio Space (``trackio.space_id``) for jobs on
  huggingface.co, through ``trackio.remote_client.RemoteClient`` (what ``trackio list/get --space``
  uses).

trackio is imported inside the functions that need it (it costs ~0.45 s and 50-66 MB), so importing
this module stays light. Every reader call blocks (disk or HTTP): call it from a thread worker.
Everything here — run names, alert titles and texts — is untrusted text; the UI renders it plain.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from console import paths
from console.levels import ERROR, INFO, LEVELS, WARN

# Metric names as the transformers Trackio callback logs them, then bare names (custom scripts).
LOSS_KEYS = ("train/loss", "loss")
LR_KEYS = ("train/learning_rate", "learning_rate", "lr")
GRAD_NORM_KEYS = ("train/grad_norm", "grad_norm")
STEP_KEYS = ("train/global_step", "global_step")
EPOCH_KEYS = ("train/epoch", "epoch")
ALERT_LEVELS = LEVELS
# At most this many points go to a sparkline: a terminal is ~80 cells wide.
SPARK_POINTS = 120
# The step rate is measured over at most this many of the last logged steps (not from the start:
# the first steps include warm-up).
RATE_POINTS = 50


class MetricsUnavailable(Exception):
    """Metrics cannot be read (no store, no Space configured, Space unreachable); says why."""


# ---------------------------------------------------------------------------------------------
# What a reader returns


@dataclass(frozen=True)
class Alert:
    """One Trackio alert (untrusted text: render as plain text)."""

    run: str
    title: str
    text: str
    level: str  # INFO | WARN | ERROR
    step: int | None
    timestamp: str
    project: str = ""

    @classmethod
    def from_trackio(cls, d: dict[str, Any], project: str = "") -> Alert:
        level = str(d.get("level") or INFO).upper()
        if level == "WARNING":
            level = WARN
        step = d.get("step")
        return cls(
            run=str(d.get("run") or d.get("run_name") or ""),
            title=str(d.get("title") or ""),
            text=str(d.get("text") or ""),
            level=level if level in ALERT_LEVELS else "INFO",
            step=int(step) if isinstance(step, (int, float)) and not isinstance(step, bool) else None,
            timestamp=str(d.get("timestamp") or ""),
            project=project,
        )


@dataclass(frozen=True)
class RunMetrics:
    """One run's curves, latest values, progress and alerts."""

    project: str
    run: str
    steps: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    learning_rate: list[float] = field(default_factory=list)
    grad_norm: list[float] = field(default_factory=list)
    latest_loss: float | None = None
    latest_learning_rate: float | None = None
    latest_grad_norm: float | None = None
    step: int | None = None
    max_steps: int | None = None
    """From the run's config (max_steps), else epochs x steps per epoch seen so far."""
    alerts: list[Alert] = field(default_factory=list)
    found: bool = True
    recent_steps: tuple[tuple[int, float], ...] = ()
    """The last logged steps as (step, Unix time Trackio logged it), oldest first, at most
    RATE_POINTS: what the step rate and the time of the last step are read from."""
    latest_method: tuple[tuple[str, float], ...] = ()
    """The latest values of what a method logs beside the loss (:data:`METHOD_KEYS`: GRPO's reward
    and KL, a reward model's held-out accuracy), as (name, value), in that order."""

    @property
    def last_step_at(self) -> float | None:
        """When the latest step was logged (Unix time), or None without timestamps."""
        return self.recent_steps[-1][1] if self.recent_steps else None

    @property
    def step_rate(self) -> float | None:
        """Steps per second over the recent steps (None with fewer than two, or no time between)."""
        if len(self.recent_steps) < 2:
            return None
        (s0, t0), (s1, t1) = self.recent_steps[0], self.recent_steps[-1]
        if t1 <= t0 or s1 <= s0:
            return None
        return (s1 - s0) / (t1 - t0)

    @property
    def progress(self) -> float | None:
        if self.step is None or not self.max_steps:
            return None
        return max(0.0, min(1.0, self.step / self.max_steps))

    def loss_trend(self) -> str:
        """falling | rising | flat | nan | '' — the last run's direction for the fleet pane."""
        if self.latest_loss is not None and not math.isfinite(self.latest_loss):
            return "nan"
        if len(self.loss) < 2:
            return ""
        n = max(1, len(self.loss) // 4)
        head = sum(self.loss[:n]) / n
        tail = sum(self.loss[-n:]) / n
        if head == 0:
            return "flat"
        change = (tail - head) / abs(head)
        if change < -0.02:
            return "falling"
        if change > 0.02:
            return "rising"
        return "flat"


def _first(row: dict[str, Any], keys: Sequence[str]) -> Any:
    for k in keys:
        if k in row and row[k] is not None:
            return row[k]
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _unix_time(value: Any) -> float | None:
    """A Trackio row's timestamp (ISO text or a datetime) as Unix time; None when unreadable."""
    from datetime import UTC, datetime

    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def downsample(values: Sequence[float], points: int = SPARK_POINTS) -> list[float]:
    """At most `points` values, each the mean of its bucket (keeps the curve's shape)."""
    if len(values) <= points:
        return list(values)
    out = []
    for i in range(points):
        lo = i * len(values) // points
        hi = max(lo + 1, (i + 1) * len(values) // points)
        chunk = values[lo:hi]
        out.append(sum(chunk) / len(chunk))
    return out


METHOD_KEYS = (("reward", ("train/reward", "reward")), ("KL", ("train/kl", "kl")),
               ("held-out accuracy", ("eval/accuracy", "eval_accuracy")))
"""What a method logs that says whether it learns, beside the loss: (name, its log keys)."""


def run_metrics_from_logs(
    project: str,
    run: str,
    logs: Sequence[dict[str, Any]],
    config: dict[str, Any] | None = None,
    alerts: Sequence[Alert] = (),
) -> RunMetrics:
    """Build the panel's view from Trackio log rows (one dict per step) and the run's config.

    Non-finite values (a NaN loss) are kept out of the curves — a sparkline cannot draw them — but
    the latest value shows them, since that is the news.
    """
    steps: list[int] = []
    loss: list[float] = []
    lr: list[float] = []
    grad: list[float] = []
    latest: dict[str, float | None] = {"loss": None, "lr": None, "grad": None}
    step: int | None = None
    last_epoch: float | None = None
    step_at_epoch: int | None = None
    timed: list[tuple[int, float]] = []
    method: dict[str, float] = {}
    for row in logs:
        for name, keys in METHOD_KEYS:
            if (v := _number(_first(row, keys))) is not None:
                method[name] = v
        s = _number(_first(row, STEP_KEYS))
        if s is None:
            s = _number(row.get("step"))
        if s is not None:
            if step is None or int(s) > step:
                at = _unix_time(row.get("timestamp"))
                if at is not None:
                    timed.append((int(s), at))
            step = int(s) if step is None else max(step, int(s))
        epoch = _number(_first(row, EPOCH_KEYS))
        if epoch is not None and s is not None and epoch > 0:
            last_epoch, step_at_epoch = epoch, int(s)
        for keys, series, name in ((LOSS_KEYS, loss, "loss"), (LR_KEYS, lr, "lr"),
                                   (GRAD_NORM_KEYS, grad, "grad")):
            v = _number(_first(row, keys))
            if v is None:
                continue
            latest[name] = v
            if math.isfinite(v):
                series.append(v)
                if name == "loss":
                    steps.append(int(s) if s is not None else len(steps))
    max_steps = None
    config = config or {}
    cfg_max = _number(config.get("max_steps"))
    if cfg_max is not None and cfg_max > 0:
        max_steps = int(cfg_max)
    else:
        epochs = _number(config.get("num_train_epochs"))
        if epochs and last_epoch and step_at_epoch:
            max_steps = max(1, round(epochs * step_at_epoch / last_epoch))
    return RunMetrics(
        project=project,
        run=run,
        steps=steps,
        loss=loss,
        learning_rate=lr,
        grad_norm=grad,
        latest_loss=latest["loss"],
        latest_learning_rate=latest["lr"],
        latest_grad_norm=latest["grad"],
        step=step,
        max_steps=max_steps,
        alerts=list(alerts),
        found=bool(logs),
        recent_steps=tuple(timed[-RATE_POINTS:]),
        latest_method=tuple((name, method[name]) for name, _ in METHOD_KEYS if name in method),
    )


# ---------------------------------------------------------------------------------------------
# Readers


class MetricsReader(Protocol):
    """What the sparklines panel and the fleet pane need; every call blocks."""

    description: str

    def runs(self, project: str) -> list[str]: ...

    def run_metrics(self, project: str, run: str) -> RunMetrics: ...

    def alerts(self, project: str, run: str | None = None) -> list[Alert]: ...


# trackio resolves TRACKIO_DIR once, when it is first imported. The console may read several
# stores in one process (the embedded server's, a test's), so reads point trackio's storage at the
# wanted folder for their duration, one read at a time.
_TRACKIO_LOCK = threading.RLock()


@contextmanager
def _trackio_dir(directory: Path) -> Iterator[Any]:
    with _TRACKIO_LOCK:
        import trackio
        import trackio.sqlite_storage as storage
        import trackio.utils as tutils

        saved = (storage.TRACKIO_DIR, tutils.TRACKIO_DIR)
        storage.TRACKIO_DIR = directory
        tutils.TRACKIO_DIR = directory
        try:
            yield trackio
        finally:
            storage.TRACKIO_DIR, tutils.TRACKIO_DIR = saved


def default_trackio_dir() -> Path:
    """Where the embedded server's jobs write Trackio (`TRACKIO_DIR` it gives them)."""
    return paths.data_dir() / "trackio"


class LocalTrackioReader:
    """The local Trackio store (one SQLite file per project in `directory`)."""

    def __init__(self, directory: Path | str | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_trackio_dir()
        self.description = f"Trackio store {self.directory}"

    def _exists(self, trackio: Any, project: str) -> bool:
        from trackio.sqlite_storage import SQLiteStorage

        return SQLiteStorage.get_project_db_path(project).exists()

    def _empty(self) -> bool:
        """No store at all (no folder, or nothing in it): nothing to read, and no reason to import
        trackio, which costs about 0.45 s and 50 MB the first time."""
        try:
            return not any(self.directory.iterdir())
        except OSError:
            return True

    def runs(self, project: str) -> list[str]:
        if self._empty():
            return []
        with _trackio_dir(self.directory) as trackio:
            if not self._exists(trackio, project):
                return []
            return [r.name for r in trackio.Api().runs(project)]

    def run_metrics(self, project: str, run: str) -> RunMetrics:
        if self._empty():
            return RunMetrics(project, run, found=False)
        with _trackio_dir(self.directory) as trackio:
            from trackio.sqlite_storage import SQLiteStorage

            if not self._exists(trackio, project):
                return RunMetrics(project, run, found=False)
            api = trackio.Api()
            run_obj = next((r for r in reversed(list(api.runs(project))) if r.name == run), None)
            if run_obj is None:
                return RunMetrics(project, run, found=False)
            logs = SQLiteStorage.get_logs(project, run, run_id=run_obj.id)
            config = run_obj.config
            alerts = [Alert.from_trackio(a, project) for a in run_obj.alerts()]
        return run_metrics_from_logs(project, run, logs, config, alerts)

    def alerts(self, project: str, run: str | None = None) -> list[Alert]:
        if self._empty():
            return []
        with _trackio_dir(self.directory) as trackio:
            if not self._exists(trackio, project):
                return []
            return [Alert.from_trackio(a, project) for a in trackio.Api().alerts(project, run=run)]


class SpaceTrackioReader:
    """A Trackio Space (`org/trackio`) on huggingface.co: where HF jobs' metrics outlive them."""

    def __init__(self, space_id: str, hf_token: str | None = None) -> None:
        self.space_id = space_id
        self.hf_token = hf_token
        self.description = f"Trackio Space {space_id}"
        self._client: Any = None

    def _remote(self) -> Any:
        if self._client is None:
            from trackio.remote_client import RemoteClient

            try:
                self._client = RemoteClient(self.space_id, hf_token=self.hf_token)
            except Exception as exc:
                raise MetricsUnavailable(f"Trackio Space {self.space_id}: {exc}") from None
        return self._client

    def _predict(self, *args: Any, api_name: str) -> Any:
        try:
            return self._remote().predict(*args, api_name=api_name)
        except MetricsUnavailable:
            raise
        except Exception as exc:
            raise MetricsUnavailable(f"Trackio Space {self.space_id}: {exc}") from None

    def runs(self, project: str) -> list[str]:
        records = self._predict(project, api_name="/get_runs_for_project") or []
        return [str(r["name"]) if isinstance(r, dict) else str(r) for r in records]

    def run_metrics(self, project: str, run: str) -> RunMetrics:
        logs = self._predict(project, run, api_name="/get_logs") or []
        summary = self._predict(project, run, api_name="/get_run_summary") or {}
        config = summary.get("config") if isinstance(summary, dict) else None
        return run_metrics_from_logs(project, run, logs, config, self.alerts(project, run))

    def alerts(self, project: str, run: str | None = None) -> list[Alert]:
        rows = self._predict(project, run, None, None, api_name="/get_alerts") or []
        return [Alert.from_trackio(a, project) for a in rows]


class NoMetricsReader:
    """Stands in when there is nowhere to read from; every answer is empty and says why."""

    def __init__(self, reason: str) -> None:
        self.description = reason

    def runs(self, project: str) -> list[str]:
        return []

    def run_metrics(self, project: str, run: str) -> RunMetrics:
        return RunMetrics(project, run, found=False)

    def alerts(self, project: str, run: str | None = None) -> list[Alert]:
        return []


def reader_for(cfg: Any, backend_kind: str | None = None) -> MetricsReader:
    """The reader for a config: the local store for the embedded server, the Space for HF."""
    kind = backend_kind or getattr(cfg, "backend", "local")
    space = getattr(getattr(cfg, "trackio", None), "space_id", None)
    if kind == "local":
        return LocalTrackioReader()
    if space:
        from huggingface_hub import get_token  # $HF_TOKEN, else the token `hf auth login` saved

        return SpaceTrackioReader(space, hf_token=get_token())
    return NoMetricsReader(
        "no Trackio Space configured (trackio.space_id): metrics of HF jobs die with their "
        "container; set one with `console config set trackio.space_id org/trackio`"
    )


def fleet_alerts(reader: MetricsReader, project: str, *, levels: Sequence[str] = (WARN, ERROR),
                 limit: int = 200) -> list[Alert]:
    """The fleet-wide alert list: WARN and ERROR alerts of a project, newest first."""
    wanted = {lv.upper() for lv in levels}
    out = [a for a in reader.alerts(project) if a.level in wanted]
    out.sort(key=lambda a: a.timestamp, reverse=True)
    return out[:limit]


def tenant_loss_trends(
    reader: MetricsReader, project: str, last_runs: dict[str, str]
) -> dict[str, RunMetrics]:
    """Each tenant's last run (tenant -> run name, from the jobs' `run` labels) with its curves."""
    return {tenant: reader.run_metrics(project, run) for tenant, run in last_runs.items() if run}


_BLOCKS = "▁▂▃▄▅▆▇█"


def spark_text(values: Sequence[float], width: int = 8) -> str:
    """A curve as block characters, for a table cell (a Sparkline widget cannot sit in a cell)."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return ""
    pts = downsample(finite, width)
    lo, hi = min(pts), max(pts)
    if hi == lo:
        return _BLOCKS[3] * len(pts)
    return "".join(_BLOCKS[min(7, int((v - lo) / (hi - lo) * 7.999))] for v in pts)
