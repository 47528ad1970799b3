"""Every GPU of a multi-GPU flavor, tested on CPU: the accelerate FSDP launch a full fine-tune
builds for its flavor (parsed by accelerate's own launcher), LoRA's placement by layers, and a real
full fine-tune of the tiny model sharded over two CPU processes by the recipe itself, whose log
still ends with exactly one VERDICT line."""

from __future__ import annotations

import json

import pytest
from training_helpers import DATA, SFT, TRAINING, run, script_env

ARGV = ["--base-model", "tiny-random", "--dataset", str(DATA / "builder.jsonl"), "--full", "--flavor", "h200x2"]


@pytest.fixture(scope="module")
def multigpu():
    import sys

    if str(TRAINING) not in sys.path:
        sys.path.insert(0, str(TRAINING))
    from jobkit import multigpu

    return multigpu


@pytest.mark.parametrize(("flavor", "gpus"), [("h200x2", 2), ("a100x4", 4), ("a100x8", 8)])
def test_a_full_fine_tune_on_a_multi_gpu_flavor_launches_one_fsdp_rank_per_gpu(multigpu, flavor, gpus):
    from accelerate.commands.launch import launch_command_parser

    command = multigpu.fsdp_launch_command("/console-training/sft_lora.py", ARGV, flavor, cuda=True, python="python")
    assert command[:3] == ["python", "-m", "accelerate.commands.launch"]
    parsed = launch_command_parser().parse_args(command[3:])
    assert parsed.num_processes == gpus and parsed.num_machines == 1 and parsed.use_fsdp
    assert parsed.fsdp_sharding_strategy == "FULL_SHARD" and parsed.fsdp_auto_wrap_policy == "TRANSFORMER_BASED_WRAP"
    assert parsed.fsdp_state_dict_type == "FULL_STATE_DICT" and parsed.mixed_precision == "bf16"
    assert parsed.fsdp_cpu_ram_efficient_loading == "true"  # rank 0 reads the weights, the others get shards
    assert parsed.training_script == "/console-training/sft_lora.py" and parsed.training_script_args == ARGV


def test_who_launches_and_how_lora_is_placed(multigpu, monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert multigpu.needs_launch("h200x2", full=True)
    assert not multigpu.needs_launch("h200x2", full=False)  # LoRA: one process, the layers split
    assert not multigpu.needs_launch("a100-large", full=True) and not multigpu.needs_launch(None, full=True)
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert not multigpu.needs_launch("h200x2", full=True)  # a rank does not launch again
    assert multigpu.lora_load_kwargs(4) == {"device_map": "auto"} and multigpu.lora_load_kwargs(1) == {}


def test_a_full_fine_tune_runs_sharded_over_two_processes_and_its_log_ends_with_one_verdict(tmp_path):
    """sft_lora.py --full --flavor h200x2 on a machine with no GPU: the recipe launches two CPU
    ranks under FSDP; only the first prints, saves the manifest and gives the verdict."""
    argv = [*ARGV, "--max-steps", "3", "--learning-rate", "5e-3", "--run-name", "sharded"]
    result = run(SFT, argv, script_env(tmp_path), cwd=tmp_path, timeout=400)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.lines
    assert any(line.startswith("launch: ") and "accelerate.commands.launch --num_processes 2" in line for line in lines)
    verdicts = [line for line in lines if line.startswith("VERDICT:")]
    assert verdicts == [lines[-1]] and lines[-1].startswith("VERDICT: PASS run=sharded steps=3 ")
    assert sum(line.startswith("train done steps=3") for line in lines) == 1  # the second rank is quiet
    out = tmp_path / "artifacts" / "sharded"
    assert (out / "model.safetensors").is_file()
    assert json.loads((out / "manifest.json").read_text())["training"] == "full"
