"""What a GRPO run and a reward model log beside the loss reaches the incident bundle's Trackio
section: the latest reward and KL, the latest held-out accuracy (from Trackio's own log rows)."""

from __future__ import annotations

from tests.ui.canned import job

from console.oncall.incident import IncidentFacts, render
from console.trackio_metrics import run_metrics_from_logs


def test_the_bundle_names_the_latest_reward_kl_and_held_out_accuracy():
    grpo_rows = [{"train/global_step": s, "train/loss": 0.01 * s, "train/reward": r, "train/kl": k}
                 for s, r, k in [(1, 0.19, 0.0), (2, 0.40, 0.73), (3, 0.52, 0.69)]]
    grpo = run_metrics_from_logs("recipes", "massive-1", grpo_rows)
    assert grpo.latest_method == (("reward", 0.52), ("KL", 0.69))
    text = render(IncidentFacts(job=job("a" * 24, "massive", "ERROR", 10.0, 2.0, kind="grpo"), metrics=grpo))
    assert "- Latest reward 0.52, KL 0.69" in text.splitlines()

    reward_rows = [{"train/global_step": 4, "train/loss": 0.3}, {"train/global_step": 4, "eval/accuracy": 0.81}]
    accuracy = run_metrics_from_logs("recipes", "cyberdyne-1", reward_rows)
    assert accuracy.latest_method == (("held-out accuracy", 0.81),)
    sft = run_metrics_from_logs("recipes", "acme-1", [{"train/global_step": 1, "train/loss": 2.0}])
    text = render(IncidentFacts(job=job("b" * 24, "acme", "ERROR", 10.0, 2.0), metrics=sft))
    assert sft.latest_method == () and "- Latest reward" not in text
