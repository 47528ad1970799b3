"""Real CPU runs of the two reward recipes on the offline tiny model and their sample data:
GRPO (`grpo_lora.py`, prompts with verifiable rewards: the built-in ones and the tenant's own
module shipped beside its data) and reward modelling (`reward_lora.py`, preference pairs, a
one-score head). Each is checked as a user would: its reward or held-out accuracy in the log and
in Trackio, the KL, the adapter it saved, its manifest and its verdict; and one broken run per
new rule: a reward that never moves, a reward model left at chance. Each run is a few seconds in
a forked child (`forkserver.py`).
"""

from __future__ import annotations

import json
import re

import pytest
from training_helpers import DATA, GRPO, REWARD, parse_fields, read_trackio, script_env
from training_helpers import run_forked as run

pytestmark = pytest.mark.xdist_group("offline_forkserver")  # one worker imports the training stack once for them

PROGRESS = re.compile(r"^progress step=(\d+)/(\d+) loss=(\S+) .*reward=(\S+) kl=(\S+) ")


def grpo_args(name: str, rewards: str, lr: str = "5e-2", steps: int = 8) -> list[str]:
    return ["--base-model", "tiny-random", "--dataset", str(DATA / "massive.jsonl"), "--rewards", rewards,
            "--max-steps", str(steps), "--learning-rate", lr, "--batch-size", "8", "--max-completion-length", "6",
            "--lora-r", "8", "--run-name", name, "--trackio-project", "recipes"]  # fmt: skip


def test_a_grpo_adapter_raises_its_reward_with_the_tenants_own_reward_module(tmp_path):
    argv = grpo_args("massive-grpo", "numeric,format,massive_rewards.py")
    result = run(GRPO, argv, script_env(tmp_path))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.last_line.startswith("VERDICT: PASS "), result.last_line
    verdict = parse_fields(result.last_line)
    assert verdict["metric"] == "reward"
    assert float(verdict["metric_last"]) > float(verdict["metric_first"]) + 0.1
    plan = next(line for line in result.lines if line.startswith("plan "))
    assert "method=grpo " in plan and "format=prompt_answer rows=96 " in plan
    assert "rewards=numeric,format,massive_rewards.py generations=4 " in plan and "temperature=0.2" in plan

    progress = [m for m in map(PROGRESS.match, result.lines) if m]
    assert [int(m.group(1)) for m in progress] == list(range(1, 9))
    assert float(progress[0].group(5)) == 0 and max(float(m.group(5)) for m in progress) > 0  # KL from 0

    store = read_trackio(tmp_path, "recipes", "massive-grpo")
    logged = [row for row in store["logs"] if "train/reward" in row]
    assert len(logged) == 8 and all("train/kl" in row for row in logged)
    assert all("train/rewards/massive_rewards/mean" in row and "train/rewards/numeric/mean" in row for row in logged)
    assert store["alerts"] == []

    adapter = tmp_path / "artifacts" / "massive-grpo"
    assert verdict["adapter"] == str(adapter)
    assert (adapter / "adapter_model.safetensors").stat().st_size > 0
    assert (adapter / "base_model" / "model.safetensors").exists()
    manifest = json.loads((adapter / "manifest.json").read_text())
    assert (manifest["method"], manifest["verdict"], manifest["metric"]) == ("grpo", "PASS", "reward")


def test_a_grpo_run_whose_reward_never_moves_fails_with_its_own_reason(tmp_path):
    """`exact` alone: the tiny model never writes the exact answer, so every completion scores 0."""
    result = run(GRPO, grpo_args("massive-flat", "exact", steps=5), script_env(tmp_path))
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.last_line.startswith(
        "VERDICT: FAIL reward_flat: the reward was 0.0000 on every logged step (5 steps)"), result.last_line
    assert any(line.startswith("ALERT level=ERROR kind=reward_flat ") for line in result.lines)
    assert not (tmp_path / "artifacts" / "massive-flat" / "adapter_model.safetensors").exists()
    alerts = read_trackio(tmp_path, "recipes", "massive-flat")["alerts"]
    assert [a["title"] for a in alerts] == ["Run failed: the reward did not rise"]


def test_a_reward_module_that_is_not_there_is_refused_before_training(tmp_path):
    result = run(GRPO, grpo_args("massive-nomod", "numeric,missing.py"), script_env(tmp_path))
    assert result.returncode == 2
    assert result.last_line.startswith(
        "VERDICT: FAIL bad_reward: reward module missing.py not found beside the dataset")
    assert "model ready" not in result.stdout


def reward_args(name: str, lr: str, steps: int) -> list[str]:
    return ["--base-model", "tiny-random", "--dataset", str(DATA / "cyberdyne.jsonl"), "--max-steps", str(steps),
            "--learning-rate", lr, "--batch-size", "8", "--max-length", "128", "--lora-r", "8",
            "--run-name", name, "--trackio-project", "recipes"]  # fmt: skip


def test_a_reward_model_learns_to_rank_the_held_out_pairs(tmp_path):
    result = run(REWARD, reward_args("cyberdyne-rm", "5e-3", 8), script_env(tmp_path))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.last_line.startswith("VERDICT: PASS "), result.last_line
    verdict = parse_fields(result.last_line)
    assert verdict["metric"] == "accuracy" and float(verdict["metric_last"]) > 0.9
    assert float(verdict["last_loss"]) < float(verdict["first_loss"]) * 0.5
    assert "held out 32 pairs of 160 to judge the pairwise accuracy" in result.lines
    evals = [line for line in result.lines if line.startswith("eval step=")]
    assert evals[-1].startswith("eval step=8 accuracy=")  # the last step is always evaluated

    store = read_trackio(tmp_path, "recipes", "cyberdyne-rm")
    assert [row["eval/accuracy"] for row in store["logs"] if "eval/accuracy" in row][-1] > 0.9
    adapter = tmp_path / "artifacts" / "cyberdyne-rm"
    config = json.loads((adapter / "adapter_config.json").read_text())
    assert config["task_type"] == "SEQ_CLS" and config["r"] == 8
    assert (adapter / "adapter_model.safetensors").stat().st_size > 0
    manifest = json.loads((adapter / "manifest.json").read_text())
    assert (manifest["method"], manifest["verdict"], manifest["metric"]) == ("reward", "PASS", "accuracy")


def test_a_reward_model_left_at_chance_fails_at_chance(tmp_path):
    result = run(REWARD, reward_args("cyberdyne-still", "1e-9", 4), script_env(tmp_path))
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.last_line.startswith("VERDICT: FAIL at_chance: the held-out pairwise accuracy is "), result.last_line
    assert "on 32 pairs" in result.last_line and "a reward model that learned scores above 0.677" in result.last_line
    assert not (tmp_path / "artifacts" / "cyberdyne-still" / "adapter_model.safetensors").exists()
