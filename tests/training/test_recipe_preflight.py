"""What the new recipes refuse before torch is imported, each with its named reason: a dataset the
validator fails for their method (one malformed sample per method), the sentence-transformers
rules of the reference (cached losses with gradient checkpointing, step evaluation without an
eval split), a full fine-tune that cannot fit its flavor, `--unsloth` where it cannot run, and the
Hub rules they share with sft_lora.py."""

from __future__ import annotations

import json
import tomllib

import pytest
from training_helpers import DATA, DPO, EMBED, KTO, RECIPES, SFT, VALIDATE, run, script_env

HEAVY = {"torch", "transformers", "trl", "peft", "datasets", "sentence_transformers"}


def imported(result) -> set[str]:
    return {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in result.stderr.splitlines() if "|" in line}


@pytest.mark.parametrize(
    ("script", "method", "dataset", "reason"),
    [
        (DPO, "dpo", "lumon.jsonl", "invalid_rows: 6 of 26 rows do not fit dpo (wrong_type=2, invalid_json=1, "
                                    "identical_pair=1, missing_key=1, empty_content=1); first: line 3: invalid_json"),
        (KTO, "kto", "vandelay.jsonl", "invalid_rows: 5 of 25 rows do not fit kto (missing_key=2, invalid_json=1, "
                                       "wrong_type=1, empty_content=1); first: line 3: invalid_json"),
        (EMBED, "embedding", "oscorp.jsonl", "invalid_rows: 6 of 26 rows do not fit embedding (missing_key=2, "
                                             "invalid_json=1, identical_pair=1, wrong_type=1, empty_content=1)"),
        (DPO, "dpo", "piedpiper.jsonl", "method_mismatch: kto rows do not fit dpo"),
        (EMBED, "embedding", "hooli.jsonl", "method_mismatch: preference rows do not fit embedding"),
    ],
)
def test_each_recipe_refuses_what_the_validator_fails_for_its_method(tmp_path, script, method, dataset, reason):
    extra = ["--kind", "bi"] if script == EMBED else []
    result = run(script, ["--base-model", "tiny-random", "--dataset", str(DATA / dataset), *extra],
                 script_env(tmp_path), python_flags=("-X", "importtime"))
    assert result.returncode == 2
    assert result.last_line.startswith(f"VERDICT: FAIL bad_dataset: {reason}"), result.last_line
    assert not imported(result) & HEAVY
    # the preflight job says the same
    check = run(VALIDATE, [str(DATA / dataset), "--method", method], script_env(tmp_path))
    assert check.returncode == 1 and reason.split(";")[0] in check.last_line


def test_the_samples_of_each_method_pass_its_preflight(tmp_path):
    for dataset, method in [("hooli", "dpo"), ("piedpiper", "kto"), ("stark", "embedding"),
                            ("tyrell", "embedding"), ("builder", "sft")]:
        result = run(VALIDATE, [str(DATA / f"{dataset}.jsonl"), "--method", method], script_env(tmp_path))
        assert result.returncode == 0, result.stdout


@pytest.mark.parametrize(
    ("extra", "code", "needle"),
    [
        (["--loss", "cached_mnrl", "--gradient-checkpointing"], "cached_loss_with_checkpointing",
         "the cached losses are incompatible with gradient checkpointing"),
        (["--eval-fraction", "0"], "eval_without_split", 'eval_strategy="steps" with no eval dataset fails the run'),
        (["--loss", "cosent"], "bad_arguments", "--loss cosent trains on scored_pair rows, and this data is triplet"),
        (["--loss", "bce"], "bad_arguments", "--loss 'bce' is not a bi-encoder loss"),
    ],
)
def test_sentence_transformers_rules_of_the_reference_are_refusals(tmp_path, extra, code, needle):
    argv = ["--kind", "bi", "--base-model", "tiny-random", "--dataset", str(DATA / "stark.jsonl"), *extra]
    result = run(EMBED, argv, script_env(tmp_path), python_flags=("-X", "importtime"))
    assert result.returncode == 2
    assert result.last_line.startswith(f"VERDICT: FAIL {code}: "), result.last_line
    assert needle in result.last_line
    assert not imported(result) & HEAVY


def test_step_evaluation_without_a_split_is_fine_once_evaluation_is_off(embed_module, tmp_path, monkeypatch):
    monkeypatch.setenv("CONSOLE_ARTIFACTS_DIR", str(tmp_path))
    plan = embed_module.preflight(["--kind", "sparse", "--base-model", "tiny-random", "--dataset",
                                   str(DATA / "stark.jsonl"), "--eval-fraction", "0", "--eval-strategy", "no"])
    assert plan.eval_rows is None and len(plan.rows) == 192 and plan.loss == "splade_mnrl"
    kw = embed_module.training_arguments(plan, set(), bf16=False, fp16=False, cuda=False)
    assert kw["eval_strategy"] == "no" and "eval_steps" not in kw


def test_embedding_hub_runs_push_each_save_and_checkpoint_to_their_branch(embed_module, tmp_path, monkeypatch):
    monkeypatch.setenv("CONSOLE_ARTIFACTS_DIR", str(tmp_path))
    monkeypatch.setenv("HF_TOKEN", "hf_test_not_a_real_token")
    plan = embed_module.preflight(["--kind", "cross", "--base-model", "tiny-random", "--dataset",
                                   str(DATA / "tyrell.jsonl"), "--hub-model-id", "acme/reranker",
                                   "--trackio-space-id", "acme/trackio"])
    assert plan.loss == "bce" and plan.fmt == "scored_pair" and len(plan.eval_rows) == 16
    kw = embed_module.training_arguments(plan, set(), bf16=False, fp16=False, cuda=False)
    assert (kw["push_to_hub"], kw["hub_model_id"], kw["hub_strategy"]) == (True, "acme/reranker", "end")
    assert kw["hub_revision"] == f"runs/{plan.run_name}"
    assert (kw["save_strategy"], kw["save_steps"]) == ("steps", 0.1)
    assert (kw["report_to"], kw["trackio_space_id"], kw["eval_strategy"]) == (["trackio"], "acme/trackio", "steps")


@pytest.mark.parametrize("script", [DPO, KTO, EMBED])
def test_a_hub_push_without_a_token_fails_fast(tmp_path, script):
    extra = ["--kind", "bi"] if script == EMBED else []
    argv = ["--base-model", "tiny-random", "--dataset", str(DATA / "hooli.jsonl"), "--hub-model-id", "a/b", *extra]
    result = run(script, argv, script_env(tmp_path), python_flags=("-X", "importtime"))
    assert result.returncode == 2
    assert result.last_line.startswith("VERDICT: FAIL hf_token_missing: ")
    assert not imported(result) & HEAVY


QWEN25_7B = {
    "model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28, "intermediate_size": 18944,
    "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064, "hidden_act": "silu",
    "tie_word_embeddings": False,
}  # fmt: skip
LLAMA_2_13B = {
    "model_type": "llama", "hidden_size": 5120, "num_hidden_layers": 40, "intermediate_size": 13824,
    "num_attention_heads": 40, "num_key_value_heads": 40, "vocab_size": 32000, "hidden_act": "silu",
    "tie_word_embeddings": False,
}  # fmt: skip


def base_folder(tmp_path, name, config):
    base = tmp_path / name
    base.mkdir()
    (base / "config.json").write_text(json.dumps(config))
    return base


def test_a_full_fine_tune_that_cannot_fit_its_flavor_is_refused_with_the_one_that_fits(tmp_path):
    base = base_folder(tmp_path, "qwen-7b", QWEN25_7B)  # 7.62B: a "7B", so a full fine-tune is allowed
    argv = ["--base-model", str(base), "--dataset", str(DATA / "builder.jsonl"), "--full", "--flavor", "a10g-large"]
    result = run(SFT, argv, script_env(tmp_path), python_flags=("-X", "importtime"))
    assert result.returncode == 2
    last = result.last_line
    assert last.startswith(f"VERDICT: FAIL does_not_fit: a full fine-tune of {base} needs ~"), last
    assert "but a10g-large has 24 GB per GPU; the smallest flavor that fits: a100-large (80 GB per GPU" in last
    assert not imported(result) & HEAVY
    # the same model as a LoRA adapter fits a100-large too, but not a 24 GB GPU at batch 4 x 1024
    lora = run(SFT, [*argv[:4], "--flavor", "t4-small"], script_env(tmp_path))
    assert lora.last_line.startswith(f"VERDICT: FAIL does_not_fit: LoRA of {base} needs ~")


def test_a_base_whose_config_counts_another_size_than_declared_is_refused_with_both_numbers(tmp_path):
    """The builder's job is told the size it was costed at (`--model-b`): a 13B Llama declared 7B
    ends before torch, and so does a full fine-tune of it, declared or not (LoRA above 7B)."""
    base = base_folder(tmp_path, "llama-13b", LLAMA_2_13B)
    argv = ["--base-model", str(base), "--dataset", str(DATA / "builder.jsonl"), "--full", "--flavor", "h200x8"]
    result = run(SFT, [*argv, "--model-b", "7"], script_env(tmp_path), python_flags=("-X", "importtime"))
    assert result.returncode == 2
    assert result.last_line.startswith(
        f"VERDICT: FAIL size_mismatch: {base} has 13.02B parameters by its config.json, but --model-b declares 7B"
    ), result.last_line
    assert "declare --model-b = 13" in result.last_line and not imported(result) & HEAVY
    undeclared = run(SFT, argv, script_env(tmp_path))
    assert undeclared.last_line.startswith(f"VERDICT: FAIL lora_required: {base} has 13.02B parameters"), (
        undeclared.last_line)
    # declared at its size, as LoRA: the size is said and the fit is checked on the real shape
    lora = run(SFT, [*argv[:4], "--flavor", "a100-large", "--model-b", "13", "--max-steps", "1", "--run-name", "x"],
               script_env(tmp_path))
    assert "size: 13.02B parameters by its config.json, --model-b 13 agrees" in lora.stdout
    assert "fit: 13.02B params, LoRA r=16" in lora.stdout


def test_unsloth_without_the_package_fails_at_start_with_one_line(tmp_path):
    argv = ["--base-model", "tiny-random", "--dataset", str(DATA / "acme.jsonl"), "--unsloth"]
    result = run(SFT, argv, script_env(tmp_path), python_flags=("-X", "importtime"))
    assert result.returncode == 2
    assert result.last_line.startswith("VERDICT: FAIL unsloth_unavailable: --unsloth needs the unsloth package")
    assert "never trains without it" in result.last_line
    assert not imported(result) & HEAVY
    assert [line for line in result.lines if not line.startswith("VERDICT")] == []  # nothing else said


def test_unsloth_installed_but_no_cuda_gpu_fails_before_any_model(tmp_path):
    """This machine has no GPU; a stand-in `unsloth` package gets past the install check, and the run
    still refuses before loading anything: Unsloth's kernels need CUDA."""
    fake = tmp_path / "site"
    (fake / "unsloth").mkdir(parents=True)
    (fake / "unsloth" / "__init__.py").write_text("raise ImportError('the stand-in is never imported')\n")
    argv = ["--base-model", "tiny-random", "--dataset", str(DATA / "hooli.jsonl"), "--unsloth", "--run-name", "u"]
    result = run(DPO, argv, script_env(tmp_path, PYTHONPATH=str(fake)))
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.last_line == (
        "VERDICT: FAIL unsloth_unavailable: --unsloth needs a CUDA GPU and this machine has none; a run that "
        "asked for Unsloth never trains without it: its timeout and memory estimate assumed it"
    )
    assert "building offline" not in result.stdout and "model ready" not in result.stdout


@pytest.mark.parametrize("script", RECIPES)
def test_every_recipe_carries_a_pep723_header(script):
    text = script.read_text()
    block = text.split("# /// script\n", 1)[1].split("# ///\n", 1)[0]
    meta = tomllib.loads("\n".join(line.removeprefix("# ") for line in block.splitlines()))
    names = {dep.split(">")[0].split("[")[0].strip() for dep in meta["dependencies"]}
    assert {"transformers", "datasets", "trackio", "torch", "tokenizers", "accelerate"} <= names
    assert ({"sentence-transformers"} if script == EMBED else {"trl", "peft"}) <= names
    assert all(">=" in dep for dep in meta["dependencies"])
