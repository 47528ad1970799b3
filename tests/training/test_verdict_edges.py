"""A run's verdict at the edges of each rule, the monitor's record in the manifest, and how a run
ends (`finish`): what is saved or pushed where, and the VERDICT line's text, for a passing run, a
failing one and a push that fails."""

from __future__ import annotations

import json
import math

import pytest


def monitor(run_rules, losses, grads=None, **kw):
    m = run_rules.LossMonitor(**kw)
    for i, loss in enumerate(losses, start=1):
        m.observe(i, loss, None if grads is None else grads[i - 1])
    return m


FALLING = [2.0, 1.8, 1.6, 1.4, 1.2, 1.0, 0.9, 0.8, 0.7, 0.6]


def test_no_logged_loss_fails(run_rules):
    assert run_rules.LossMonitor().verdict() == (False, "no_loss: no training loss was logged")


def test_a_gradient_norm_at_the_zero_threshold_counts_as_zero(run_rules):
    z = run_rules.ZERO_GRAD_NORM
    passed, reason = monitor(run_rules, FALLING, [1.0] * 8 + [z, z]).verdict()
    assert not passed and reason.startswith("zero_grad: the gradient norm is 0 on every logged step from step 9 to 10")
    assert monitor(run_rules, FALLING, [1.0] * 8 + [z * 10, z * 10]).verdict() == (True, "")


def test_zero_gradients_at_a_loss_of_exactly_zero_are_a_finished_run(run_rules):
    losses = [2.0, 1.5, 1.0, 0.5, 0.2, 0.1, 0.0, 0.0, 0.0, 0.0]
    assert monitor(run_rules, losses, [1.0] * 6 + [0.0] * 4).verdict() == (True, "")
    losses = [2.0, 1.9, 1.8, 1.5, 1.2, 1.0, 0.9, 0.5, 0.5, 0.5]
    passed, reason = monitor(run_rules, losses, [1.0] * 6 + [0.0] * 4).verdict()
    assert not passed and reason.startswith("zero_grad:")


def test_a_loss_at_exactly_the_divergence_factor_has_not_diverged(run_rules):
    # best 1.0, back up to exactly 2 x 1.0: not above the factor
    losses = [4.0, 3.0, 2.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]
    passed, reason = monitor(run_rules, losses, min_loss_drop=0).verdict()
    assert passed, reason
    losses = [4.0, 3.0, 2.0, 1.0, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5]
    passed, reason = monitor(run_rules, losses, min_loss_drop=0).verdict()
    assert not passed
    assert reason.startswith("diverged: the best of the last 2 logged steps 2.5000 is 2.50x the run's best 1.0000")


def test_giving_back_exactly_half_the_fall_is_diverged(run_rules):
    # start (mean of the first 2) 5.0, best 1.0: half the fall back is 3.0
    losses = [5.0, 5.0, 4.0, 1.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0]
    passed, reason = monitor(run_rules, losses, min_loss_drop=0).verdict()
    assert not passed and reason.startswith("diverged:")
    losses = [5.0, 5.0, 4.0, 1.0, 2.9, 2.9, 2.9, 2.9, 2.9, 2.9]
    passed, _ = monitor(run_rules, losses, min_loss_drop=0, divergence_factor=2.5).verdict()
    assert passed  # 2.9 - 1 < 0.5 x (5 - 1)


def test_a_watched_metric_that_rose_by_exactly_the_minimum_has_not_risen_enough(run_rules):
    m = monitor(run_rules, FALLING)
    m.watch_metric("ndcg", min_gain=0.25)
    m.observe_metric(0, 0.5)
    m.observe_metric(10, 0.75)
    passed, reason = m.verdict()
    assert not passed
    assert reason == ("metric_flat: the held-out ndcg went from 0.5000 before training to 0.7500 (step 10); a run "
                      "that learns raises it by more than 0.25")
    m.observe_metric(12, 0.76)
    assert m.verdict() == (True, "")


def test_a_loss_that_fell_exactly_the_minimum_passes_and_a_zero_minimum_checks_nothing(run_rules):
    losses = [1.0, 1.0, 0.99, 0.99, 0.99, 0.99, 0.99, 0.99, 0.99, 0.99]
    assert monitor(run_rules, losses, min_loss_drop=0.01).verdict() == (True, "")
    passed, reason = monitor(run_rules, losses, min_loss_drop=0.02).verdict()
    assert not passed and reason.startswith("flat_loss: the loss fell 1.0% ")
    assert monitor(run_rules, [1.0] * 10, min_loss_drop=0).verdict() == (True, "")


def test_a_flat_loss_at_chance_level_says_so(run_rules):
    chance = math.log(1000)
    passed, reason = monitor(run_rules, [chance] * 10, vocab_size=1000).verdict()
    assert not passed and ", chance level for 1000 tokens" in reason
    passed, reason = monitor(run_rules, [chance * 1.2] * 10, vocab_size=1000).verdict()
    assert not passed and "chance level" not in reason


def test_the_record_in_the_manifest(run_rules):
    m = monitor(run_rules, [2.0, 1.0, float("nan")])
    record = m.record()
    assert record["first_loss"] == 2.0 and record["best_loss"] == 1.0 and record["last_loss"] == 1.0
    assert [a["kind"] for a in record["alerts"]] == ["nan"]
    assert "metric" not in record
    json.dumps(record)  # it is JSON
    m = monitor(run_rules, FALLING)
    m.watch_metric("ndcg")
    m.observe_metric(0, 0.1)
    m.observe_metric(10, 0.9)
    record = m.record()
    assert (record["metric"], record["metric_first"], record["metric_last"]) == ("ndcg", 0.1, 0.9)
    assert record["metrics"] == [[0, 0.1], [10, 0.9]]
    inf = monitor(run_rules, [float("inf")])
    assert inf.record()["first_loss"] is None


class Trainer:
    def __init__(self, fail: Exception | None = None) -> None:
        self.saved: list[str] = []
        self.pushed: list[str] = []
        self.fail = fail

    def save_model(self, path: str) -> None:
        self.saved.append(path)

    def push_to_hub(self, commit_message: str, revision: str | None = None) -> None:
        if self.fail:
            raise self.fail
        self.pushed.append(commit_message)


def test_a_passing_run_saves_its_adapter_and_says_where(run_rules, tmp_path, capsys):
    dest = run_rules.Destination(tmp_path / "out", None, None)
    trainer = Trainer()
    passed, rest = run_rules.finish(trainer, dest, "acme-1", 10, monitor(run_rules, FALLING), {"tenant": "acme"})
    assert passed
    assert rest == f"run=acme-1 steps=10 first_loss=2.0000 last_loss=0.6000 adapter={tmp_path / 'out'}"
    assert trainer.saved == [str(tmp_path / "out")]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest == {"tenant": "acme", "adapter": str(tmp_path / "out"), "verdict": "PASS", "failure": None,
                        "promote": "manual"}
    assert f"saved adapter={tmp_path / 'out'}" in capsys.readouterr().out


def test_a_push_that_fails_fails_the_run_with_its_first_line(run_rules, tmp_path):
    dest = run_rules.Destination(tmp_path / "out", None, "org/adapter-acme")
    trainer = Trainer(fail=PermissionError("403 Forbidden\nyou cannot write to org"))
    passed, rest = run_rules.finish(trainer, dest, "acme-1", 10, monitor(run_rules, FALLING), {})
    assert not passed
    assert rest == "push_failed: PermissionError: 403 Forbidden run=acme-1 steps=10 first_loss=2.0000 last_loss=0.6000"


def test_a_failed_run_saves_no_weights_and_leaves_its_record_only_where_artifacts_are_kept(run_rules, tmp_path):
    flat = monitor(run_rules, [1.0] * 10)
    trainer = Trainer()
    dest = run_rules.Destination(tmp_path / "out", None, None)
    passed, rest = run_rules.finish(trainer, dest, "acme-1", 10, flat, {})
    assert not passed and rest.startswith("flat_loss: ") and rest.endswith(" run=acme-1 steps=10 first_loss=1.0000 "
                                                                            "last_loss=1.0000")
    assert trainer.saved == [] and not (tmp_path / "out" / "manifest.json").exists()
    kept = run_rules.Destination(tmp_path / "art", tmp_path, None)
    run_rules.finish(trainer, kept, "acme-1", 10, monitor(run_rules, [1.0] * 10), {})
    manifest = json.loads((tmp_path / "art" / "manifest.json").read_text())
    assert manifest["verdict"] == "FAIL" and manifest["failure"].startswith("flat_loss: ")
    assert trainer.saved == []


@pytest.mark.parametrize("kind", ["nan", "flat_loss"])
def test_a_failed_run_raises_its_alert_once(run_rules, kind):
    m = monitor(run_rules, [1.0] * 10 if kind == "flat_loss" else [1.0, float("nan")])
    first = m.conclude()
    assert m.conclude() == []
    assert [a.kind for a in first] == ([] if kind == "nan" else ["flat_loss"])


def test_a_resumed_run_is_judged_from_the_first_loss_of_the_run_it_resumes(run_rules):
    """A run resumed at step 32 of 40 logs 8 steps of its own; those 8 alone "fell 0.3%" and failed
    flat_loss although the run as a whole fell 9%: the checkpoint's log history counts."""
    history = [{"step": s, "loss": 6.87 - 0.018 * s, "grad_norm": 0.3, "learning_rate": 5e-3} for s in range(1, 33)]
    history.insert(5, {"step": 5, "eval_loss": 6.5})  # an evaluation entry has no training loss
    history.append({"step": 32, "train_runtime": 20.0})  # nor has the summary
    own = [6.2785, 6.2700, 6.2618, 6.2658, 6.2474, 6.2388, 6.2404, 6.2587]  # observed after the resume

    alone = monitor(run_rules, own)
    assert alone.verdict()[0] is False and alone.verdict()[1].startswith("flat_loss:")

    resumed = run_rules.LossMonitor()
    assert resumed.resume(history) == 32
    for step, loss in enumerate(own, start=33):
        resumed.observe(step, loss, 0.3, learning_rate=1e-4)
    assert resumed.verdict() == (True, "")
    assert resumed.first_loss == pytest.approx(6.852) and resumed.record()["first_loss"] == pytest.approx(6.852)


def test_the_alerts_of_a_resumed_runs_history_are_not_sent_again(run_rules):
    """Its stall was alerted by the run that logged it; the resumed run alerts only what is new."""
    history = [{"step": s, "loss": 2.0, "grad_norm": 0.3} for s in range(1, 41)]
    resumed = run_rules.LossMonitor(stall_patience=20)
    assert resumed.resume(history) == 40
    assert resumed.alerts == [] and resumed.stalled and not resumed.should_stop
    assert resumed.observe(41, 2.0, 0.3) == []  # still stalled: nothing new to say
