"""Reading a real training run's Trackio data back through trackio's own API."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from console.trackio_metrics import (
    Alert,
    LocalTrackioReader,
    NoMetricsReader,
    SpaceTrackioReader,
    downsample,
    fleet_alerts,
    reader_for,
    run_metrics_from_logs,
    tenant_loss_trends,
)


def test_importing_metrics_does_not_import_trackio_or_textual():
    code = "import sys, console.trackio_metrics; print('trackio' in sys.modules, 'textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_healthy_run_curves_latest_values_and_progress(trained_store):
    reader = LocalTrackioReader(trained_store.trackio_dir)
    assert set(reader.runs(trained_store.project)) == {trained_store.healthy, trained_store.poisoned}
    m = reader.run_metrics(trained_store.project, trained_store.healthy)
    assert m.found
    assert len(m.loss) == trained_store.steps
    assert len(m.learning_rate) == trained_store.steps and len(m.grad_norm) == trained_store.steps
    assert m.step == trained_store.steps and m.max_steps == trained_store.steps
    assert m.progress == 1.0
    assert m.latest_loss == m.loss[-1] and m.latest_loss < m.loss[0]
    assert m.loss_trend() == "falling"
    assert m.learning_rate[0] == pytest.approx(5e-3)
    assert m.alerts == []


def test_nan_run_raises_an_error_alert_that_the_reader_returns(trained_store):
    reader = LocalTrackioReader(trained_store.trackio_dir)
    m = reader.run_metrics(trained_store.project, trained_store.poisoned)
    assert m.latest_loss is not None and math.isnan(m.latest_loss)
    assert all(math.isfinite(v) for v in m.loss)  # the curve keeps only drawable points
    assert len(m.loss) == trained_store.nan_at - 1
    assert m.step == trained_store.nan_at and m.max_steps == trained_store.steps
    assert m.loss_trend() == "nan"
    [alert] = m.alerts
    assert alert.level == "ERROR" and alert.run == trained_store.poisoned
    assert "NaN" in alert.title and f"step={trained_store.nan_at}" in alert.text
    fleet = fleet_alerts(reader, trained_store.project)
    assert [a.run for a in fleet] == [trained_store.poisoned]


def test_fleet_loss_trends_per_tenant(trained_store):
    reader = LocalTrackioReader(trained_store.trackio_dir)
    trends = tenant_loss_trends(
        reader, trained_store.project,
        {"acme": trained_store.healthy, "initech": trained_store.poisoned, "hooli": "never-ran"},
    )
    assert trends["acme"].loss_trend() == "falling"
    assert trends["initech"].loss_trend() == "nan"
    assert not trends["hooli"].found and trends["hooli"].loss == []


def test_missing_store_or_project_reads_as_empty(tmp_path):
    reader = LocalTrackioReader(tmp_path / "nothing-here")
    assert reader.runs("console") == []
    assert reader.alerts("console") == []
    assert not reader.run_metrics("console", "r").found


def test_reading_an_empty_store_does_not_load_trackio(tmp_path):
    """A console whose jobs never wrote metrics stays ~50 MB lighter: trackio is not imported."""
    (tmp_path / "empty").mkdir()
    code = (
        "import sys\n"
        "from console.trackio_metrics import LocalTrackioReader\n"
        "for folder in sys.argv[1:]:\n"
        "    r = LocalTrackioReader(folder)\n"
        "    assert r.runs('console') == [] and r.alerts('console') == []\n"
        "    assert not r.run_metrics('console', 'acme-1').found\n"
        "print('trackio' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "none"), str(tmp_path / "empty")],
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"]


def test_reader_for_the_backend():
    class Cfg:
        backend = "hub"

        class trackio:
            space_id = None

    assert isinstance(reader_for(Cfg(), "local"), LocalTrackioReader)
    none = reader_for(Cfg(), "hub")
    assert isinstance(none, NoMetricsReader) and "trackio.space_id" in none.description
    Cfg.trackio.space_id = "org/trackio"
    space = reader_for(Cfg(), "hub")
    assert isinstance(space, SpaceTrackioReader) and space.space_id == "org/trackio"


def test_max_steps_from_epochs_when_the_run_is_epoch_based():
    logs = [{"train/loss": 2.0 - i * 0.1, "train/global_step": i + 1, "train/epoch": (i + 1) / 8,
             "step": i} for i in range(4)]
    m = run_metrics_from_logs("p", "r", logs, {"max_steps": -1, "num_train_epochs": 3})
    assert m.step == 4 and m.max_steps == 24 and m.progress == pytest.approx(4 / 24)


def test_alert_levels_are_normalised_and_text_kept_verbatim():
    a = Alert.from_trackio({"level": "warn", "title": "[red]x[/red]", "text": "\x1b[2J", "step": 3,
                            "run": "r", "timestamp": "t"})
    assert (a.level, a.title, a.text, a.step) == ("WARN", "[red]x[/red]", "\x1b[2J", 3)
    assert Alert.from_trackio({"level": "bogus"}).level == "INFO"


def test_downsample_keeps_shape_and_bounds():
    values = [float(i) for i in range(1000)]
    out = downsample(values, 100)
    assert len(out) == 100 and out[0] < out[-1] and out == sorted(out)
    assert downsample([1.0, 2.0], 100) == [1.0, 2.0]
