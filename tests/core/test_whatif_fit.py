"""`console whatif` and GPU memory, as a user runs it: a run that does not fit its flavor is
refused with the estimate and the cheapest flavor that fits; one that fits says how much it needs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def console(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True)


def test_an_8b_model_on_t4_small_is_refused_and_the_flavor_that_fits_is_named():
    r = console("whatif", "--model-b", "8", "--flavor", "t4-small")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("console: the run does not fit t4-small: LoRA of a 8B model needs ~26.9 GB")
    assert "the cheapest flavor that fits: l40sx1" in r.stderr
    assert r.stderr.rstrip().endswith("try --flavor l40sx1 or --unsloth")  # Unsloth: ~11.3 GB fits its 16 GB
    # the flavor it names fits, and says so
    ok = console("whatif", "--model-b", "8", "--flavor", "l40sx1")
    assert ok.returncode == 0, ok.stderr
    memory = next(line for line in ok.stdout.splitlines() if line.startswith("Memory:"))
    assert "~26.9 GB" in memory and "48 GB per GPU on l40sx1: fits" in memory


def test_unsloth_a_config_json_and_the_batch_change_the_answer(tmp_path):
    assert console("whatif", "--model-b", "8", "--flavor", "t4-small", "--unsloth").returncode == 0
    assert console("whatif", "--model-b", "8", "--flavor", "l4x1", "--batch-size", "1").returncode == 0
    config = tmp_path / "config.json"
    config.write_text(json.dumps({
        "model_type": "qwen2", "hidden_size": 896, "num_hidden_layers": 24, "intermediate_size": 4864,
        "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": True,
    }))  # fmt: skip
    r = console("whatif", "--json", "--model-b", "0.5", "--flavor", "t4-small", "--model-config", str(config))
    assert r.returncode == 0, r.stderr
    memory = json.loads(r.stdout)["memory"]["run"]
    assert memory["fits"] is True and memory["shape_source"] == "config.json"
    assert round(memory["params"] / 1e9, 2) == 0.49 and memory["dtype"] == "float16"  # a T4 has no bf16
    assert memory["cheapest_fitting_flavor"] == "t4-small"


def test_the_builder_model_is_checked_on_its_own_flavor():
    r = console("whatif", "--builder-model-b", "7", "--builder-full", "--builder-flavor", "a10g-large")
    assert r.returncode == 1
    assert "the builder model does not fit a10g-large: a full fine-tune of a 7B model" in r.stderr
    assert r.stderr.rstrip().endswith("try --builder-flavor a100-large")
    ok = console("whatif", "--json", "--builder-model-b", "7", "--builder-full", "--builder-flavor", "a100-large")
    data = json.loads(ok.stdout)
    assert data["memory"]["builder"]["method"] == "full" and data["memory"]["builder"]["fits"] is True
    assert data["builder_monthly_usd"] > 0


def test_a_full_fine_tune_above_7b_is_priced_with_a_warning_that_it_would_be_refused():
    r = console("whatif", "--builder-full", "--builder-model-b", "13", "--builder-flavor", "h200")
    assert r.returncode == 0, r.stderr
    assert ("warning: builder: a full fine-tune of a 13B model is refused: the reference mandates LoRA for models "
            "over 7B (§2); this prices a run that would not be sent") in r.stderr
    data = json.loads(console("whatif", "--json", "--method", "full", "--model-b", "13", "--flavor", "h200").stdout)
    assert data["warnings"] and data["warnings"][0].startswith("a full fine-tune of a 13B model is refused")
    assert console("whatif", "--builder-full", "--builder-model-b", "7").stderr == ""  # 7B: no warning
    # and where the flavor cannot hold it either, the warning still comes with the refusal
    refused = console("whatif", "--builder-full", "--builder-model-b", "13")
    assert refused.returncode == 1 and "warning: builder: a full fine-tune of a 13B model is refused" in refused.stderr


def test_a_model_config_that_counts_another_size_than_model_b_is_warned_with_both_numbers(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({
        "model_type": "llama", "hidden_size": 5120, "num_hidden_layers": 40, "intermediate_size": 13824,
        "num_attention_heads": 40, "num_key_value_heads": 40, "vocab_size": 32000,
    }))  # fmt: skip
    r = console("whatif", "--model-b", "7", "--flavor", "h200", "--model-config", str(config))
    assert r.returncode == 0, r.stderr
    assert "has 13.02B parameters by its config.json, but --model-b declares 7B" in r.stderr


def test_70b_on_four_a100s_is_costed_and_says_how_it_fits():
    """Reference §3: a100x4 "70B full / 100B+ LoRA", h200x2 "70B+"."""
    r = console("whatif", "--model-b", "70", "--flavor", "a100x4")
    assert r.returncode == 0, r.stderr
    memory = next(line for line in r.stdout.splitlines() if line.startswith("Memory:"))
    assert "layers split over 4 GPUs (device_map=auto): ~49.0 GB per GPU" in memory
    assert "80 GB per GPU on a100x4: fits" in memory
    assert "Per run:  14.70 h, $147.00" in r.stdout
    data = json.loads(console("whatif", "--json", "--model-b", "70", "--flavor", "h200x2").stdout)
    assert data["memory"]["run"]["fits"] and data["memory"]["run"]["gpus"] == 2
    assert data["memory"]["run"]["how"] == "layers split over 2 GPUs (device_map=auto)"
    assert data["memory"]["run"]["cheapest_fitting_flavor"] == "a100x4"


def test_a_grpo_fleet_costs_its_generation_and_a_reward_model_has_no_lm_head():
    sft = console("whatif", "--json", "--model-b", "3", "--flavor", "l4x1")
    grpo = console("whatif", "--model-b", "3", "--flavor", "l4x1", "--kind", "grpo")
    assert sft.returncode == 0 and grpo.returncode == 0, sft.stderr + grpo.stderr
    assert ("Work:     GRPO: 1,000 prompts x 3 epoch(s) x 4 completions x 2 (each generated, then trained on) "
            "= 24,000 SFT examples' time") in grpo.stdout.splitlines()
    grpo_json = json.loads(console("whatif", "--json", "--model-b", "3", "--flavor", "l4x1", "--kind", "grpo").stdout)
    assert grpo_json["cost_per_run_usd"] == pytest.approx(8 * json.loads(sft.stdout)["cost_per_run_usd"])
    assert grpo_json["kind"] == "grpo" and grpo_json["work_examples"] == 24000
    reward = json.loads(console("whatif", "--json", "--model-b", "3", "--flavor", "l4x1", "--kind", "reward").stdout)
    dpo = json.loads(console("whatif", "--json", "--model-b", "3", "--flavor", "l4x1", "--kind", "dpo").stdout)
    assert reward["memory"]["run"]["total_gb"] < dpo["memory"]["run"]["total_gb"]  # a score, not a vocabulary
