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
"""Preference tuning of one tenant's LoRA adapter with KTO (TRL KTOTrainer + PEFT LoraConfig).

Kahneman-Tversky Optimization learns from unpaired thumbs-up / thumbs-down: each row is one
answer with a `label` (`prompt` / `completion` / `label` rows: what `validate_dataset.py DATASET
--method kto` passes; a dataset of one label class only is warned about, KTO wants both). The
reference model is the base with the adapter switched off.

Everything but the trainer is shared with `sft_lora.py` (`jobkit.recipe`): the same arguments,
the same preflight before torch is imported, the same Trackio reporting and alerts, and the same
last line:

    VERDICT: PASS run=<name> steps=<n> first_loss=<x> last_loss=<y> adapter=<where>
    VERDICT: FAIL <code>: <reason>

KTO estimates its KL term from mismatched pairs within a batch, so `--batch-size` must be at
least 2. `--desirable-weight` / `--undesirable-weight` balance the two classes (raise the rarer
one's so that weight x count is about equal).
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

METHOD = "kto"


def build_parser() -> argparse.ArgumentParser:
    p = recipe.build_parser(
        "kto_lora.py",
        "KTO of one tenant's LoRA adapter on answers labelled good / bad, reporting to Trackio.",
        learning_rate=5e-5,
        dataset_help="Hub dataset id or local JSONL file of prompt / completion / label rows",
    )
    p.add_argument("--beta", type=float, default=0.1, help="KTO beta (default 0.1)")
    p.add_argument("--desirable-weight", type=float, default=1.0, help="weight of label=true rows")
    p.add_argument("--undesirable-weight", type=float, default=1.0, help="weight of label=false rows")
    return p


def preflight(argv: list[str] | None) -> Plan:
    plan = recipe.preflight(argv, build_parser(), METHOD)
    args = plan.args
    if not args.beta > 0 or not args.desirable_weight > 0 or not args.undesirable_weight > 0:
        raise Refusal("bad_arguments", "--beta and the class weights must be positive")
    if args.batch_size < 2:
        raise Refusal("bad_arguments", "--batch-size must be at least 2: KTO's KL term pairs rows within a batch")
    return plan


def config_class() -> Any:
    from trl import KTOConfig

    return KTOConfig


def make_trainer(
    plan: Plan, model: Any, tokenizer: Any, peft_config: Any, kwargs: dict[str, Any], callbacks: list[Any]
) -> Any:
    from datasets import Dataset
    from trl import KTOConfig, KTOTrainer

    args = plan.args
    config = KTOConfig(
        beta=args.beta,
        desirable_weight=args.desirable_weight,
        undesirable_weight=args.undesirable_weight,
        **kwargs,
    )
    return KTOTrainer(
        model=model,
        args=config,
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
