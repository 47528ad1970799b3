"""Verdicts of runs too small or too still to have learned: a one-row dataset is refused before
any training, and a run at learning rate 0 never passes, even when a short last batch's lower
loss looks like a fall."""

from __future__ import annotations

import json

import pytest
from training_helpers import DATA, EMBED, SFT, VALIDATE, script_env
from training_helpers import run_forked as run

pytestmark = pytest.mark.xdist_group("offline_forkserver")  # one worker imports the training stack once for them


def test_a_one_row_dataset_is_refused_by_the_validator_and_the_recipe(tmp_path):
    one = tmp_path / "one.jsonl"
    one.write_text((DATA / "acme.jsonl").read_text().splitlines()[0] + "\n")
    checked = run(VALIDATE, [str(one)], script_env(tmp_path))
    assert checked.returncode != 0, checked.stdout[-2000:]
    assert checked.last_line == "VERDICT: FAIL too_few_rows: 1 rows, at least 8 needed", checked.stdout[-2000:]
    argv = ["--dataset", str(one), "--base-model", "tiny-random", "--max-steps", "4", "--run-name", "one-row",
            "--trackio-project", "small"]  # fmt: skip
    trained = run(SFT, argv, script_env(tmp_path))
    assert trained.returncode == 2, trained.stdout[-3000:]
    assert trained.last_line == "VERDICT: FAIL bad_dataset: too_few_rows: 1 rows, at least 8 needed"


def test_a_bi_encoder_at_learning_rate_zero_fails_without_an_evaluation(tmp_path):
    """192 rows in batches of 8 with 40 steps, no held-out metric: the loss only moves with the
    batches; the rows of the short last batch must not fake a fall."""
    rows = (DATA / "stark.jsonl").read_text().splitlines()[:21]  # batches of 8, 8 and 5
    data = tmp_path / "stark21.jsonl"
    data.write_text("\n".join(rows) + "\n")
    argv = ["--kind", "bi", "--dataset", str(data), "--eval-strategy", "no", "--base-model", "tiny-random",
            "--max-steps", "12", "--learning-rate", "0", "--batch-size", "8", "--run-name", "still",
            "--trackio-project", "small"]  # fmt: skip
    result = run(EMBED, argv, script_env(tmp_path))
    assert result.returncode == 1, result.stdout[-3000:]
    assert result.last_line.startswith("VERDICT: FAIL zero_lr: "), result.last_line
    manifest = json.loads((tmp_path / "artifacts" / "still" / "manifest.json").read_text())
    assert manifest["failure"].startswith("zero_lr")
    assert manifest["short_batch_steps"] == [3, 6, 9, 12]  # left out of the loss's judgement


# the logged losses of that run (21 rows, batches of 8, 5 on each epoch's last step), learning rate 0
STILL_LOSSES = [2.4872, 2.5063, 1.9017, 2.6093, 2.6251, 1.9250, 2.5214, 2.5678, 2.0665, 2.7000, 2.6175, 1.8608]


def test_a_short_last_batch_does_not_fake_a_fall(run_rules):
    """Judged on the full batches only, that series rose; with its short batches it 'fell' 25%."""
    monitor = run_rules.LossMonitor()
    for step, loss in enumerate(STILL_LOSSES, start=1):
        monitor.observe(step, loss, 8.0, short=step % 3 == 0)
    passed, reason = monitor.verdict()
    assert not passed and reason.startswith("flat_loss: the loss rose 5.2% (mean of the first 1 logged steps 2.4872, "
                                            "best of the last 1 2.6175)"), reason
