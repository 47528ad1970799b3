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
"""A tenant's reward model: LoRA on a one-score head (TRL RewardTrainer + PEFT LoraConfig, SEQ_CLS).

Reward modelling learns from preference pairs (`prompt` / `chosen` / `rejected` rows, text or chat
turns: what `validate_dataset.py DATASET --method reward` passes, the same rows as DPO) to score
an answer so that the chosen one scores above the rejected one: the reward component of an RLHF
pipeline. The base gets a one-output classification head (`AutoModelForSequenceClassification`,
num_labels=1); LoRA adapts the base and trains the head, and the adapter saved holds both.

`--eval-fraction` (default 0.2) of the pairs are held out; the held-out pairwise accuracy (the
share of held-out pairs whose chosen answer scores higher) is evaluated every quarter of the run
and at its end, logged to Trackio as `eval/accuracy`, and judged: a reward model whose last
held-out accuracy is not above chance (0.5) by two standard errors fails `at_chance`
(`jobkit.rewards`); its loss (-log sigmoid of the score margin, ln 2 = 0.693 at the start) must
fall as DPO's does.

Everything else is shared with `sft_lora.py` (`jobkit.recipe`): the arguments, the preflight
before torch is imported, Trackio, checkpoints pushed at every save, `--resume-from`, and the
last line:

    VERDICT: PASS run=<name> steps=<n> first_loss=<x> last_loss=<y> metric=accuracy metric_first=<a0>
                  metric_last=<a1> adapter=<where>
    VERDICT: FAIL <code>: <reason>
"""

from __future__ import annotations

import argparse
import random
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
    from jobkit import recipe, rewards
    from jobkit.models import TINY_MODEL
    from jobkit.recipe import Plan
    from jobkit.run import Refusal, run_job, say
except ImportError as e:  # the script was shipped without its folder: still end with a verdict
    print(f"VERDICT: FAIL missing_files: {e}; ship the whole training/ folder with the job", flush=True)
    sys.exit(2)

METHOD = "reward"
MIN_EVAL_PAIRS = 8


def build_parser() -> argparse.ArgumentParser:
    p = recipe.build_parser(
        "reward_lora.py",
        "A tenant's reward model (LoRA, one-score head) on preference pairs, reporting to Trackio.",
        learning_rate=5e-5,
        dataset_help="Hub dataset id or local JSONL file of prompt / chosen / rejected rows",
    )
    p.add_argument("--eval-fraction", type=float, default=0.2,
                   help="share of the pairs held out to judge the pairwise accuracy (default 0.2)")
    return p


def split(rows: list[dict[str, Any]], fraction: float, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(train, held out): a seeded shuffle, `fraction` of the pairs held out (at least one)."""
    order = list(rows)
    random.Random(seed).shuffle(order)
    held = max(1, round(len(order) * fraction))
    return order[held:], order[:held]


def preflight(argv: list[str] | None) -> Plan:
    plan = recipe.preflight(argv, build_parser(), METHOD)
    args = plan.args
    if not 0 < args.eval_fraction < 1:
        raise Refusal("bad_arguments", "--eval-fraction must be between 0 and 1")
    if args.unsloth:
        raise Refusal("bad_arguments", "--unsloth loads causal LMs; a reward model is a sequence classifier")
    if plan.rows is not None:
        held = max(1, round(len(plan.rows) * args.eval_fraction))
        if held < MIN_EVAL_PAIRS:
            raise Refusal("bad_dataset", f"{held} held-out pairs: at least {MIN_EVAL_PAIRS} are needed to tell an "
                                         "accuracy from chance (more rows, or a larger --eval-fraction)")
        # the steps count the training pairs only
        plan.steps_total = recipe.estimate_steps(len(plan.rows) - held, args)
    return plan


def load_model(plan: Plan, dtype: Any, torch: Any) -> tuple[Any, Any, bool]:
    """The base with a one-score head (num_labels=1): the tiny base is built (and saved beside the
    adapter) as the other recipes build it, then loaded back with the head."""
    from transformers import AutoModelForSequenceClassification

    args = plan.args
    if args.base_model == TINY_MODEL:
        causal, tokenizer, _ = recipe.build_model(plan, dtype, torch)
        name = str(plan.dest.output_dir / "base_model")
        del causal
    else:
        from transformers import AutoTokenizer

        say(f"loading base model {args.base_model} with a one-score head")
        name = args.base_model
        tokenizer = AutoTokenizer.from_pretrained(name)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
    try:
        model = AutoModelForSequenceClassification.from_pretrained(name, num_labels=1, dtype=dtype)
    except TypeError:  # transformers < 4.56 spells it torch_dtype
        model = AutoModelForSequenceClassification.from_pretrained(name, num_labels=1, torch_dtype=dtype)
    model.config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer, False


def config_class() -> Any:
    from trl import RewardConfig

    return RewardConfig


def make_trainer(
    plan: Plan, model: Any, tokenizer: Any, peft_config: Any, kwargs: dict[str, Any], callbacks: list[Any],
    monitor: rewards.AccuracyMonitor | None = None,
) -> Any:
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import RewardConfig, RewardTrainer

    args = plan.args
    assert plan.rows is not None and plan.steps_total is not None
    train_rows, held = split(plan.rows, args.eval_fraction, args.seed)
    if monitor is not None:
        monitor.eval_pairs = len(held)
    say(f"held out {len(held)} pairs of {len(plan.rows)} to judge the pairwise accuracy")
    config = RewardConfig(
        eval_strategy="steps",
        eval_steps=max(1, plan.steps_total // 4),
        per_device_eval_batch_size=args.batch_size,
        **kwargs,
    )

    class EvaluateAtTheEnd(TrainerCallback):
        """The last step is evaluated whatever eval_steps says: the verdict judges it."""

        def on_step_end(self, targs, state, control, **_: Any):  # type: ignore[no-untyped-def]
            if state.max_steps and state.global_step >= state.max_steps:
                control.should_evaluate = True

    return RewardTrainer(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(train_rows),
        eval_dataset=Dataset.from_list(held),
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[*callbacks, EvaluateAtTheEnd()],
    )


def train(plan: Plan, started: float) -> tuple[bool, str]:
    args = plan.args
    made: list[rewards.AccuracyMonitor] = []

    def new_monitor(ns: argparse.Namespace) -> rewards.AccuracyMonitor:
        made.append(rewards.AccuracyMonitor.from_args(ns))
        return made[-1]

    def trainer(plan: Plan, model: Any, tokenizer: Any, peft: Any, kwargs: dict[str, Any], cbs: list[Any]) -> Any:
        return make_trainer(plan, model, tokenizer, peft, kwargs, cbs, made[-1] if made else None)

    return recipe.train(plan, started, trainer, config_class, load_model=load_model, lora_task="SEQ_CLS",
                        new_monitor=new_monitor, eval_fraction=f"{args.eval_fraction:g}")


def main(argv: list[str] | None = None) -> int:
    started = time.time()
    return run_job(lambda: preflight(argv), lambda plan: train(plan, started))


if __name__ == "__main__":
    sys.exit(main())
