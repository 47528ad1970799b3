"""The run verdict on hand-made loss / grad-norm series, as a user sees it: the end of the log
(`ALERT level=ERROR kind=...` and the `VERDICT:` line), the exit status, the alert sent to Trackio
and whether weights were saved. The series marked "observed" are the tiny model's on CPU."""

from __future__ import annotations

import math

import pytest

# observed: --learning-rate 1e6 (1e3 is the same from step 3): chance level ln(959) from step 2
DEAD_LOSS = [6.8741] + [6.8659] * 11
DEAD_GRAD = [0.3958] + [0.0] * 11
# observed: --learning-rate 5e-3, 12 steps
FALLING_LOSS = [6.874, 6.800, 6.742, 6.713, 6.696, 6.683, 6.678, 6.656, 6.645, 6.620, 6.613, 6.599]
FALLING_GRAD = [0.396, 0.311, 0.253, 0.2, 0.165, 0.174, 0.171, 0.227, 0.25, 0.295, 0.288, 0.302]


class _Trainer:
    def __init__(self) -> None:
        self.saved: list[str] = []

    def save_model(self, path: str) -> None:
        self.saved.append(path)


@pytest.fixture
def trackio_alerts(monkeypatch):
    """What the run sends to trackio.alert (title, text, level name)."""
    import trackio

    sent: list[tuple[str, str, str]] = []
    monkeypatch.setattr(trackio, "alert", lambda title, text=None, level=None: sent.append((title, text, level.name)))
    return sent


@pytest.fixture
def end_of_run(run_rules, tmp_path, capsys, trackio_alerts):
    """Feed a series to a run's loss monitor, end the run; returns what the user sees."""

    def end(losses, grads=None, vocab_size=None, **thresholds):
        monitor = run_rules.LossMonitor(**thresholds)
        monitor.vocab_size = vocab_size
        grads = grads or [0.5] * len(losses)
        for step, (loss, grad) in enumerate(zip(losses, grads, strict=True), start=1):
            for alert in monitor.observe(step, loss, grad):
                run_rules.send_alert(alert)  # what the trainer callback does with them
            if monitor.should_stop:
                break
        dest = run_rules.Destination(tmp_path / "acme", tmp_path, None)
        trainer = _Trainer()
        steps = len(monitor.losses) + (monitor.nan_step is not None)
        code = run_rules.run_job(lambda: None, lambda _: run_rules.finish(trainer, dest, "acme", steps, monitor, {}))
        lines = capsys.readouterr().out.strip().splitlines()
        alerts = [line for line in lines if line.startswith("ALERT ")]
        return code, alerts, lines[-1], trainer.saved, list(trackio_alerts)

    return end


def test_a_flat_loss_fails_flat_loss(end_of_run):
    code, alerts, verdict, saved, sent = end_of_run([6.8741, 6.9033] + [6.8659] * 10)
    assert verdict == (
        "VERDICT: FAIL flat_loss: the loss fell 0.3% (mean of the first 2 logged steps 6.8887, "
        "best of the last 2 6.8659); a run that learns falls at least 1% "
        "run=acme steps=12 first_loss=6.8741 last_loss=6.8659"
    )
    assert code == 1 and saved == []
    assert alerts == [
        'ALERT level=ERROR kind=flat_loss step=12 title="Run failed: the loss did not fall": '
        + verdict.split("flat_loss: ")[1].split(" run=")[0]
    ]
    assert [(title, level) for title, _, level in sent] == [("Run failed: the loss did not fall", "ERROR")]


def test_a_loss_that_fell_only_a_little_fails_and_the_threshold_is_an_argument(end_of_run):
    code, alerts, verdict, _, _ = end_of_run([2.0] * 9 + [1.99])  # -0.5%
    assert code == 1 and verdict.startswith("VERDICT: FAIL flat_loss: the loss fell 0.5% ")
    code, alerts, verdict, _, _ = end_of_run([2.0] * 9 + [1.99], min_loss_drop=0.004)
    assert code == 0 and alerts == [] and verdict.startswith("VERDICT: PASS ")


def test_a_falling_loss_passes_without_an_alert(end_of_run):
    code, alerts, verdict, saved, sent = end_of_run(FALLING_LOSS, FALLING_GRAD)
    assert code == 0 and alerts == [] and sent == []
    assert verdict.startswith("VERDICT: PASS run=acme steps=12 first_loss=6.8740 last_loss=6.5990 ")
    assert len(saved) == 1


def test_a_noisy_falling_loss_whose_last_step_spikes_passes(end_of_run):
    # the mean of the last fifth (2.25) is above the first fifth's (2.10) and the last loss is
    # 2.5x the best: judged by the best of the last window, the run learned
    noisy = [2.0, 2.2, 1.8, 1.7, 1.6, 1.5, 1.5, 1.4, 1.3, 3.2]
    code, alerts, verdict, saved, _ = end_of_run(noisy)
    assert code == 0 and verdict.startswith("VERDICT: PASS "), verdict
    assert alerts == [] and len(saved) == 1


def test_zero_grad_norms_from_step_2_fail_zero_grad(end_of_run):
    code, alerts, verdict, saved, sent = end_of_run(DEAD_LOSS, DEAD_GRAD, vocab_size=959)
    assert verdict == (
        "VERDICT: FAIL zero_grad: the gradient norm is 0 on every logged step from step 2 to 12 "
        "(11 steps): the weights no longer change; loss 6.8659, chance level for 959 tokens "
        "run=acme steps=12 first_loss=6.8741 last_loss=6.8659"
    )
    assert code == 1 and saved == []
    assert len(alerts) == 1
    assert alerts[0].startswith('ALERT level=ERROR kind=zero_grad step=12 title="Run failed: zero gradients": ')
    assert [(title, level) for title, _, level in sent] == [("Run failed: zero gradients", "ERROR")]


def test_zero_grad_norms_fail_even_after_the_loss_fell(end_of_run):
    losses = [3.0, 2.5, 2.0, 1.8, 1.7, 1.7, 1.7, 1.7, 1.7, 1.7]
    grads = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.0, 0.0]
    code, _, verdict, saved, _ = end_of_run(losses, grads)
    assert code == 1 and saved == []
    assert verdict.startswith("VERDICT: FAIL zero_grad: the gradient norm is 0 on every logged step from step 9 to 10 ")


def test_a_diverged_run_fails_with_an_error_alert_after_its_warning(end_of_run):
    losses = [4.0, 2.0, 1.0, 2.5, 3.0, 4.0, 4.5, 5.0, 5.0, 5.5]
    code, alerts, verdict, saved, sent = end_of_run(losses, divergence_patience=2)
    assert code == 1 and saved == []
    assert verdict.startswith(
        "VERDICT: FAIL diverged: the best of the last 2 logged steps 5.0000 is 5.00x the run's best 1.0000 (step 3) "
    )
    assert [a.split(" title=")[0] for a in alerts] == [
        "ALERT level=WARN kind=divergence step=5",
        "ALERT level=ERROR kind=diverged step=10",
    ]
    assert [level for _, _, level in sent] == ["WARN", "ERROR"]


def test_a_nan_loss_fails_nan_loss_with_its_one_error_alert(end_of_run):
    code, alerts, verdict, saved, sent = end_of_run([6.87, 6.80, math.nan, 6.7], [0.4, 0.3, math.nan, 0.3])
    assert verdict == (
        "VERDICT: FAIL nan_loss: loss became NaN/inf at step 3 run=acme steps=3 first_loss=6.8700 last_loss=6.8000"
    )
    assert code == 1 and saved == []
    assert alerts == ['ALERT level=ERROR kind=nan step=3 title="NaN/inf loss": loss is nan at step 3; training stopped']
    assert [level for _, _, level in sent] == ["ERROR"]


def test_a_smoke_run_of_a_few_steps_is_too_short_to_call_flat(end_of_run):
    code, alerts, verdict, _, _ = end_of_run([6.871, 6.870, 6.871, 6.870])  # default lr, 4 steps
    assert code == 0 and alerts == [] and verdict.startswith("VERDICT: PASS ")
    code, _, verdict, _, _ = end_of_run([6.8741, 6.8659, 6.8659], [0.4, 0.0, 0.0])  # but not dead
    assert code == 1 and verdict.startswith("VERDICT: FAIL zero_grad: ")


def test_the_verdict_alert_is_sent_once(run_rules, trackio_alerts):
    monitor = run_rules.LossMonitor()
    for step, (loss, grad) in enumerate(zip(DEAD_LOSS, DEAD_GRAD, strict=True), start=1):
        monitor.observe(step, loss, grad)
    first = monitor.conclude()
    assert [(a.kind, a.level) for a in first] == [("zero_grad", "ERROR")]
    assert monitor.conclude() == []
    assert [a.kind for a in monitor.alerts] == ["zero_grad"]  # the manifest's alerts
