"""The verdicts of GRPO (the reward must move and rise) and of a reward model (held-out pairwise
accuracy above chance), on hand-made series, and the built-in GRPO rewards on sample completions.
The GRPO series marked "observed" are the tiny model's on CPU (`grpo_lora.py`, massive.jsonl)."""

from __future__ import annotations

import sys

import pytest
from training_helpers import TRAINING

if str(TRAINING) not in sys.path:
    sys.path.insert(0, str(TRAINING))

from jobkit import rewards  # noqa: E402

# observed: --learning-rate 5e-2 --batch-size 8 --max-completion-length 6, 8 steps
RISING = [0.1915, 0.4049, 0.3845, 0.4574, 0.5475, 0.5338, 0.5299, 0.4984]
GRPO_LOSS = [2.2e-8, 0.0293, 0.0337, 0.0277, 0.0227, 0.0240, 0.0308, 0.0278]  # starts at ~0 and rises


def grpo(series: list[float]) -> rewards.RewardMonitor:
    monitor = rewards.RewardMonitor()
    for step, (value, loss) in enumerate(zip(series, GRPO_LOSS, strict=True), start=1):
        monitor.observe_metric(step, value)
        monitor.observe(step, loss, 0.5, learning_rate=1e-2)
    return monitor


def test_a_rising_reward_passes_whatever_grpos_loss_does():
    monitor = grpo(RISING)
    assert monitor.verdict() == (True, "")
    assert monitor.alerts == []  # a loss that rises from 0 is no divergence for GRPO


def test_a_reward_that_never_moved_fails_with_its_own_reason_even_with_zero_gradients():
    monitor = rewards.RewardMonitor()
    for step in range(1, 7):
        monitor.observe_metric(step, 0.0)
        monitor.observe(step, 0.0, 0.0, learning_rate=1e-2)  # nothing to learn: no gradient either
    passed, reason = monitor.verdict()
    assert not passed
    assert reason.startswith("reward_flat: the reward was 0.0000 on every logged step (6 steps): every "
                             "completion scored the same")


def test_a_reward_that_moves_but_does_not_rise_fails_reward_flat():
    passed, reason = grpo([0.5, 0.4, 0.6, 0.5, 0.45, 0.55, 0.5, 0.45]).verdict()
    assert not passed
    assert reason == ("reward_flat: the reward went from 0.5000 (mean of the first 1 logged steps) to 0.4500 "
                      "(mean of the last 1); a run that learns raises it by more than 0.01")


def test_no_reward_logged_fails_no_reward():
    monitor = rewards.RewardMonitor()
    monitor.observe(1, 0.0, 0.5, learning_rate=1e-2)
    assert monitor.verdict() == (False, "no_reward: no reward was logged")


def test_a_resumed_grpo_run_is_judged_from_its_first_reward():
    monitor = rewards.RewardMonitor()
    history = [{"step": s, "loss": 0.01, "reward": r} for s, r in enumerate(RISING[:5], start=1)]
    assert monitor.resume(history) == 5
    for step, value in enumerate(RISING[5:], start=6):
        monitor.observe_metric(step, value)
        monitor.observe(step, 0.02, 0.5)
    assert monitor.first_metric == RISING[0] and monitor.verdict() == (True, "")


@pytest.mark.parametrize(("accuracy", "pairs", "passed"), [(0.72, 32, True), (0.66, 32, False), (0.5, 400, False),
                                                            (0.56, 400, True)])  # fmt: skip
def test_a_reward_models_held_out_accuracy_must_beat_chance_by_two_standard_errors(accuracy, pairs, passed):
    monitor = rewards.AccuracyMonitor(eval_pairs=pairs)
    for step, loss in enumerate([0.69, 0.6, 0.5, 0.4, 0.3], start=1):
        monitor.observe(step, loss, 0.5, learning_rate=1e-3)
    monitor.observe_metric(5, accuracy)
    ok, reason = monitor.verdict()
    assert ok is passed
    if not passed:
        assert reason.startswith(f"at_chance: the held-out pairwise accuracy is {accuracy:.3f} on {pairs} pairs")


def test_the_built_in_rewards():
    answer = ["12", "12", "12", "12"]
    completions = ["12", " 12\nbecause", "it is 12.0", "twelve"]
    assert rewards.exact([], completions, answer) == [1.0, 0.0, 0.0, 0.0]
    assert rewards.numeric([], completions, answer) == [1.0, 1.0, 1.0, 0.0]
    assert rewards.format([], completions) == [1.0, 1.0, 0.0, 0.0]
    assert rewards.format([], ["12 units"]) == [0.5]
    conversational = [[{"role": "assistant", "content": "12"}]]
    assert rewards.numeric([], conversational, ["12"]) == [1.0]


def test_the_console_knows_the_same_built_in_rewards():
    from console import kinds

    assert kinds.REWARDS == rewards.BUILTIN
