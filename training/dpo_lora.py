# /// script
# requires-python = ">=3.10"
# dependencies = [
#     "trl>=0.20",
#     "peft>=0.15",
#     "transformers>=4.56",
#     "datasets>=3.0",
#     "trackio>=0.40",
#     "torch>=2.4",
#     "tokenizers>=0.20",
#     "accelerate>=1.0",
# ]
# ///
"""Preference tuning of one tenant's LoRA adapter with DPO (TRL DPOTrainer + PEFT LoraConfig).

Direct Preference Optimization learns from pairs: for each prompt a chosen and a rejected answer
(`prompt` / `chosen` / `rejected` rows, text or chat turns: what `validate_dataset.py DATASET
--method dpo` passes). No reward model; the reference model is the base itself with the adapter
switched off, so LoRA costs no second copy of the weights.

Everything but the trainer is shared with `sft_lora.py` (`jobkit.recipe`): the same arguments
(`--base-model tiny-random` offline, `--hub-model-id`, `--run-name`, `--trackio-project`,
`--trackio-space-id`, `--flavor`, `--unsloth`...), the same preflight before torch is imported
(HF_TOKEN, destination, the validator's check, the GPU-memory fit), the same Trackio reporting
and alerts, and the same last line:

    VERDICT: PASS run=<name> steps=<n> first_loss=<x> last_loss=<y> adapter=<where>
    VERDICT: FAIL <code>: <reason>

The DPO loss starts at ln 2 = 0.693 (the policy equals the reference) and falls as the adapter
prefers the chosen answers; a run whose loss does not fall by 1% fails `flat_loss`. `--beta`
(default 0.1) is how far the policy may move from the reference.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

# jobkit/ sits beside this file; Python puts a script's folder on sys.path, but not when the file
# is loaded by path (importlib), so make sure of it.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

try:
    from jobkit import recipe
    from jobkit.recipe import Plan
    from jobkit.run import Refusal, run_job
except ImportError as e:  # the script was shipped without its folder: still end with a verdict
    print(f"VERDICT: FAIL missing_files: {e}; ship the whole training/ folder with the job", flush=True)
    sys.exit(2)

METHOD = "dpo"


def build_parser() -> argparse.ArgumentParser:
    p = recipe.build_parser(
        "dpo_lora.py",
        "DPO of one tenant's LoRA adapter on preference pairs, reporting to Trackio.",
        learning_rate=5e-5,
        dataset_help="Hub dataset id or local JSONL file of prompt / chosen / rejected rows",
    )
    p.add_argument("--beta", type=float, default=0.1, help="DPO beta: the KL penalty's weight (default 0.1)")
    return p


def preflight(argv: list[str] | None) -> Plan:
    plan = recipe.preflight(argv, build_parser(), METHOD)
    if not plan.args.beta > 0:
        raise Refusal("bad_arguments", "--beta must be positive")
    return plan


def config_class() -> Any:
    from trl import DPOConfig

    return DPOConfig


def make_trainer(
    plan: Plan, model: Any, tokenizer: Any, peft_config: Any, kwargs: dict[str, Any], callbacks: list[Any]
) -> Any:
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    return DPOTrainer(
        model=model,
        args=DPOConfig(beta=plan.args.beta, **kwargs),
        train_dataset=Dataset.from_list(plan.rows),
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=callbacks,
    )


def train(plan: Plan, started: float) -> tuple[bool, str]:
    return recipe.train(plan, started, make_trainer, config_class, beta=f"{plan.args.beta:g}")


def main(argv: list[str] | None = None) -> int:
    started = time.time()
    return run_job(lambda: preflight(argv), lambda plan: train(plan, started))


if __name__ == "__main__":
    sys.exit(main())
