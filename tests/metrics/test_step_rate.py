"""A run's step rate and the time of its last step, read from the timestamps Trackio keeps with
each logged step (what the timeout forecast and the stall detector rest on)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from console.trackio_metrics import RATE_POINTS, run_metrics_from_logs

T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def _rows(steps: int, every_s: float, start: datetime = T0) -> list[dict]:
    return [
        {"train/loss": 1.0 / s, "train/global_step": s,
         "timestamp": (start + timedelta(seconds=s * every_s)).isoformat()}
        for s in range(1, steps + 1)
    ]


def test_the_rate_is_measured_over_the_recent_steps_and_the_last_step_time_is_kept():
    warm_up = _rows(10, 5.0)  # slow first steps
    fast = [
        {"train/global_step": s, "timestamp": (T0 + timedelta(seconds=50 + (s - 10) * 0.5)).isoformat()}
        for s in range(11, 11 + RATE_POINTS)
    ]
    m = run_metrics_from_logs("p", "r", warm_up + fast, {"max_steps": 1000})
    assert len(m.recent_steps) == RATE_POINTS
    assert m.step_rate == pytest.approx(2.0)
    assert m.last_step_at == pytest.approx((T0 + timedelta(seconds=50 + RATE_POINTS * 0.5)).timestamp())


def test_repeated_steps_and_rows_without_timestamps_give_no_rate_rather_than_a_wrong_one():
    later = (T0 + timedelta(seconds=9)).isoformat()
    rows = _rows(1, 1.0) + [{"train/global_step": 1, "eval/loss": 2.0, "timestamp": later}]
    m = run_metrics_from_logs("p", "r", rows)
    assert m.step == 1 and m.step_rate is None and len(m.recent_steps) == 1
    bare = run_metrics_from_logs("p", "r", [{"train/global_step": s} for s in range(5)])
    assert bare.step == 4 and bare.step_rate is None and bare.last_step_at is None
    naive = run_metrics_from_logs("p", "r", [{"step": 1, "timestamp": "2026-12-03T12:00:00"},
                                             {"step": 3, "timestamp": "2026-12-03T12:00:04"}])
    assert naive.step_rate == pytest.approx(0.5)
