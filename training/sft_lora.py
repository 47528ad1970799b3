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
"""Supervised fine-tuning of a LoRA adapter for one tenant (TRL SFTTrainer + PEFT LoraConfig).

The same file runs on Hugging Face Jobs and on the console's embedded Jobs server, with the
`jobkit/` package beside it (a job ships the whole `training/` folder). This file is the recipe:
its arguments, the dataset's rows, the model and the trainer. The rules every run follows come
from `jobkit`:

* The dataset check is the validator's (`jobkit.dataset`, what `validate_dataset.py DATASET
  --method sft` runs): a dataset it fails is refused with its reason. Local JSON/JSONL files are
  checked in the preflight; Hub datasets (and Parquet/CSV files) once downloaded.
* Where the weights go, `HF_TOKEN`, Trackio and its alerts, the VERDICT line and the exit status
  (`jobkit.run`). The preflight (arguments, token, destination, a local dataset, the step estimate)
  runs on the standard library alone: torch is imported only after it passed.
* Output lines meant for machines (a log viewer, the console, an orchestrator):

      plan run=<name> base_model=<id> dataset=<d> format=<f> rows=<n> ... destination=<where>
      steps_total=<n>
      progress step=<i>/<n> loss=<x> lr=<x> grad_norm=<x> epoch=<x> elapsed=<s>s
      ALERT level=<INFO|WARN|ERROR> kind=<kind> step=<i> title="<t>": <text>
      saved adapter=<path-or-hf://repo>
      VERDICT: PASS run=<name> steps=<n> first_loss=<x> last_loss=<y> adapter=<where>
      VERDICT: FAIL <code>: <reason>

  The VERDICT line is always the last line printed; the exit status is 0 for PASS, 1 for a failed
  run and 2 for a run that refused to start. A run whose loss went NaN, whose gradients went to 0,
  that diverged or whose loss did not meaningfully fall fails (`nan_loss`, `zero_grad`,
  `diverged`, `flat_loss`) with an ERROR alert of that kind (training/README.md has the rule).

Offline mode: `--base-model tiny-random` builds a tiny LlamaForCausalLM (hidden 64, 2 layers) from
`LlamaConfig` and a byte-level BPE tokenizer trained on the dataset itself, so a real LoRA run
finishes on a laptop CPU in seconds with no network (use `--learning-rate 5e-3` to see the loss
fall). `--inject-nan-at-step N` (or `CONSOLE_INJECT_NAN_AT_STEP=N`) poisons the LoRA weights at
step N so the NaN alert path can be exercised for real.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# jobkit/ sits beside this file; Python puts a script's folder on sys.path, but not when the file
# is loaded by path (importlib), so make sure of it.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

try:
    from jobkit.dataset import ReadError, failure, needs_datasets, offending_rows, training_rows, validate
    from jobkit.run import (
        Destination,
        LossMonitor,
        Refusal,
        RefusingParser,
        add_destination_arguments,
        add_monitor_arguments,
        check_monitor_arguments,
        check_run_name,
        default_run_name,
        finish,
        inject_nan_step,
        monitor_callback,
        now_iso,
        pick_precision,
        quiet_libraries,
        resolve_destination,
        run_job,
        say,
        trainer_rules,
    )
except ImportError as e:  # the script was shipped without its folder: still end with a verdict
    print(f"VERDICT: FAIL missing_files: {e}; ship the whole training/ folder with the job", flush=True)
    sys.exit(2)

TINY_MODEL = "tiny-random"
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


# ----------------------------------------------------------------------------- arguments


def build_parser() -> argparse.ArgumentParser:
    p = RefusingParser(
        prog="sft_lora.py",
        description="SFT + LoRA fine-tuning of one tenant's adapter, reporting to Trackio.",
    )
    p.add_argument(
        "--base-model",
        required=True,
        help=f"Hub model id of the base model, or '{TINY_MODEL}' for the offline tiny Llama",
    )
    p.add_argument(
        "--dataset",
        required=True,
        help="Hub dataset id or local JSONL file (messages / text / prompt+completion rows)",
    )
    p.add_argument("--dataset-split", default="train", help="split of a Hub dataset")
    p.add_argument("--epochs", type=float, default=3.0, help="training epochs (default 3)")
    p.add_argument(
        "--max-steps",
        type=int,
        default=-1,
        help="stop after this many optimizer steps (overrides --epochs when > 0)",
    )
    p.add_argument("--learning-rate", type=float, default=2e-4, help="peak learning rate")
    p.add_argument("--lora-r", type=int, default=16, help="LoRA rank (default 16)")
    p.add_argument("--lora-alpha", type=int, default=32, help="LoRA alpha (default 32)")
    p.add_argument("--lora-dropout", type=float, default=0.05, help="LoRA dropout")
    p.add_argument(
        "--target-modules",
        default="all-linear",
        help="comma-separated module names to adapt, or 'all-linear' (default)",
    )
    add_destination_arguments(p)
    p.add_argument("--seed", type=int, default=42, help="random seed")
    p.add_argument("--max-length", type=int, default=1024, help="max tokens per example")
    p.add_argument("--batch-size", type=int, default=4, help="per-device batch size")
    p.add_argument("--grad-accum", type=int, default=1, help="gradient accumulation steps")
    p.add_argument(
        "--logging-steps",
        type=int,
        default=0,
        help="log every N steps (default: about 100 points per run, at least every step)",
    )
    p.add_argument("--warmup-ratio", type=float, default=0.0, help="learning-rate warmup ratio")
    p.add_argument(
        "--precision",
        choices=("auto", "bf16", "fp16", "fp32"),
        default="auto",
        help="auto: bf16 on GPUs that support it, fp16 on other GPUs, fp32 on CPU",
    )
    p.add_argument(
        "--gradient-checkpointing",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="trade compute for GPU memory (default: TRL's default, off for tiny-random)",
    )
    p.add_argument(
        "--packing", action="store_true", help="pack short examples into max-length blocks"
    )
    add_monitor_arguments(p)
    return p


# ----------------------------------------------------------------------------- preflight


@dataclass
class Plan:
    """Everything decided before torch is imported."""

    args: argparse.Namespace
    run_name: str
    dataset_is_local: bool  # checked in the preflight (a local JSON/JSONL file)
    rows: list[dict[str, Any]] | None  # the rows to train on, once checked
    fmt: str | None
    dest: Destination
    inject_nan_at: int | None
    steps_total: int | None = None


def checked_rows(dataset: str, split: str) -> tuple[str, list[dict[str, Any]]]:
    """The validator's check (`validate_dataset.py DATASET --method sft`), then the rows to train on.

    Raises Refusal with the validator's reason when the dataset fails it. Rows longer than
    --max-length are not refused: the trainer truncates them.
    """
    try:
        report = validate(dataset, "sft", None, split)
    except ReadError as e:
        raise Refusal("bad_dataset", f"unreadable: {e}") from None
    if not report.verdict()[0]:
        raise Refusal("bad_dataset", failure(report), details=offending_rows(report, 10))
    assert report.fmt is not None
    return report.fmt, training_rows(report)


def estimate_steps(rows: int, args: argparse.Namespace) -> int:
    """Optimizer steps the Trainer will run (no packing): the `steps_total=` line."""
    if args.max_steps and args.max_steps > 0:
        return int(args.max_steps)
    batches = math.ceil(rows / args.batch_size)
    per_epoch = max(1, math.ceil(batches / args.grad_accum))
    return max(1, math.ceil(args.epochs * per_epoch))


def preflight(argv: list[str] | None) -> Plan:
    """Argument, token, destination and dataset checks. Standard library only."""
    args = build_parser().parse_args(argv)
    for name in ("lora_r", "lora_alpha", "batch_size", "grad_accum", "max_length"):
        if getattr(args, name) <= 0:
            raise Refusal("bad_arguments", f"--{name.replace('_', '-')} must be positive")
    if args.epochs <= 0 and args.max_steps <= 0:
        raise Refusal("bad_arguments", "--epochs must be positive (or give --max-steps)")
    if not args.learning_rate >= 0:
        raise Refusal("bad_arguments", "--learning-rate must be >= 0")
    check_monitor_arguments(args)
    run_name = args.run_name or default_run_name(args.dataset, args.run_name_prefix)
    check_run_name(run_name)
    dest = resolve_destination(args, run_name)
    inject = inject_nan_step(args)

    try:
        local = not needs_datasets(args.dataset)
    except ReadError as e:
        raise Refusal("bad_dataset", f"unreadable: {e}") from None
    rows: list[dict[str, Any]] | None = None
    fmt: str | None = None
    if local:  # JSON / JSONL: checked now, with the standard library
        fmt, rows = checked_rows(args.dataset, args.dataset_split)

    plan = Plan(
        args=args,
        run_name=run_name,
        dataset_is_local=local,
        rows=rows,
        fmt=fmt,
        dest=dest,
        inject_nan_at=inject,
    )
    if rows is not None:
        plan.steps_total = estimate_steps(len(rows), args)
    return plan


# ----------------------------------------------------------------------------- training


def load_hub_dataset(plan: Plan) -> tuple[str, list[dict[str, Any]]]:
    """A Hub dataset (or a local Parquet/CSV file), read and checked after the preflight."""
    return checked_rows(plan.args.dataset, plan.args.dataset_split)


def row_texts(row: dict[str, Any]) -> list[str]:
    """Plain text of a normalized row (to train the offline tokenizer)."""
    out: list[str] = []
    for value in row.values():
        if isinstance(value, str):
            out.append(value)
        else:
            out.extend(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>" for m in value)
    return out


def build_tiny(
    rows: list[dict[str, Any]], max_length: int, seed: int, name_or_path: str
) -> tuple[Any, Any]:
    """A tiny LlamaForCausalLM and a byte-level BPE tokenizer trained on the dataset.

    `name_or_path` is where the base will be saved beside the adapter (it exists nowhere else);
    PEFT records it as the adapter's `base_model_name_or_path`.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<|pad|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1024,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator((t for r in rows for t in row_texts(r)), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|endoftext|>",
        eos_token="<|im_end|>",
        pad_token="<|pad|>",
        unk_token=None,
        model_max_length=max_length,
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=max(max_length, 128),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config)
    model.name_or_path = name_or_path
    return model, tokenizer


def load_base(plan: Plan, dtype: Any) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    name = plan.args.base_model
    tokenizer = AutoTokenizer.from_pretrained(name)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if plan.fmt != "text" and not getattr(tokenizer, "chat_template", None):
        rows = plan.rows or []
        if rows and not isinstance(next(iter(rows[0].values())), str):
            tokenizer.chat_template = CHATML_TEMPLATE
    try:
        model = AutoModelForCausalLM.from_pretrained(name, dtype=dtype)
    except TypeError:  # transformers < 4.56 spells it torch_dtype
        model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=dtype)
    return model, tokenizer


def trainer_settings(
    plan: Plan, config_fields: set[str], *, bf16: bool, fp16: bool, cuda: bool
) -> dict[str, Any]:
    """Keyword arguments for `SFTConfig`: the recipe's, then the run rules (pure, testable).

    `config_fields` are the field names of the installed `SFTConfig` (they vary across
    transformers versions).
    """
    args = plan.args
    assert plan.steps_total is not None
    logging_steps = args.logging_steps or max(1, plan.steps_total // 100)
    kwargs: dict[str, Any] = dict(
        num_train_epochs=args.epochs,
        max_steps=args.max_steps if args.max_steps > 0 else -1,
        learning_rate=args.learning_rate,
        per_device_train_batch_size=args.batch_size,
        gradient_accumulation_steps=args.grad_accum,
        logging_steps=logging_steps,
        seed=args.seed,
        bf16=bf16,
        fp16=fp16,
        max_length=args.max_length,
        packing=args.packing,
        dataloader_num_workers=0,
        dataloader_pin_memory=cuda,
    )
    kwargs.update(trainer_rules(plan.dest, args, plan.run_name, config_fields))
    if args.warmup_ratio:
        if "warmup_ratio" in config_fields:  # transformers 4.x
            kwargs["warmup_ratio"] = args.warmup_ratio
        else:  # transformers 5: a float below 1 is a ratio
            kwargs["warmup_steps"] = args.warmup_ratio
    checkpointing = args.gradient_checkpointing
    if checkpointing is None and args.base_model == TINY_MODEL:
        checkpointing = False  # nothing to save on a 100k-parameter model, only time to lose
    if checkpointing is not None:
        kwargs["gradient_checkpointing"] = checkpointing
    return kwargs


def plan_line(plan: Plan) -> str:
    args = plan.args
    rows = len(plan.rows) if plan.rows is not None else "?"
    return (
        f"plan run={plan.run_name} base_model={args.base_model} dataset={args.dataset} "
        f"format={plan.fmt or '?'} rows={rows} epochs={args.epochs:g} max_steps={args.max_steps} "
        f"batch_size={args.batch_size} lr={args.learning_rate:g} lora_r={args.lora_r} "
        f"trackio_project={args.trackio_project} destination={plan.dest.where}"
    )


def train(plan: Plan, started: float) -> tuple[bool, str]:
    """Run the training; returns (passed, VERDICT line tail)."""
    args = plan.args
    say(plan_line(plan))
    if plan.steps_total is not None:
        say(f"steps_total={plan.steps_total}")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if not plan.dataset_is_local:
        say(f"loading dataset {args.dataset} split={args.dataset_split}")
        plan.fmt, plan.rows = load_hub_dataset(plan)
        plan.steps_total = estimate_steps(len(plan.rows), args)
        say(f"dataset format={plan.fmt} rows={len(plan.rows)}")
        say(f"steps_total={plan.steps_total}")
    assert plan.rows is not None and plan.fmt is not None and plan.steps_total is not None

    import torch  # heavy imports start here, after every check passed
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import PrinterCallback, set_seed
    from trl import SFTConfig, SFTTrainer

    quiet_libraries()
    set_seed(args.seed)
    bf16, fp16, dtype = pick_precision(args.precision)

    t0 = time.monotonic()
    if args.base_model == TINY_MODEL:
        if not os.environ.get("OMP_NUM_THREADS"):
            # 64-wide matrices gain nothing from threads, and several demo jobs share the CPU
            torch.set_num_threads(1)
        say(f"building offline base model {TINY_MODEL} (LlamaForCausalLM hidden=64 layers=2)")
        base_dir = plan.dest.output_dir / "base_model"
        model, tokenizer = build_tiny(plan.rows, args.max_length, args.seed, str(base_dir))
        # the base exists nowhere else: keep it beside the adapter so the adapter can be loaded
        model.save_pretrained(base_dir)
        tokenizer.save_pretrained(base_dir)
    else:
        say(f"loading base model {args.base_model}")
        model, tokenizer = load_base(plan, dtype)
    n_params = sum(p.numel() for p in model.parameters())
    say(f"model ready params={n_params} vocab={len(tokenizer)} in {time.monotonic() - t0:.1f}s")

    target: str | list[str] = args.target_modules.strip()
    if target != "all-linear":
        target = [t.strip() for t in target.split(",") if t.strip()]
    lora = LoraConfig(
        r=args.lora_r,
        lora_alpha=args.lora_alpha,
        lora_dropout=args.lora_dropout,
        target_modules=target,
        task_type="CAUSAL_LM",
    )
    config_kwargs = trainer_settings(
        plan,
        {f.name for f in dataclasses.fields(SFTConfig)},
        bf16=bf16,
        fp16=fp16,
        cuda=torch.cuda.is_available(),
    )
    monitor = LossMonitor.from_args(args)
    monitor.vocab_size = len(tokenizer)  # a dead run's loss sits at ln(vocab)
    callback = monitor_callback(monitor, steps_total=plan.steps_total, inject_nan_at=plan.inject_nan_at)
    trainer = SFTTrainer(
        model=model,
        args=SFTConfig(**config_kwargs),
        train_dataset=Dataset.from_list(plan.rows),
        processing_class=tokenizer,
        peft_config=lora,
        callbacks=[callback],
    )
    trainer.remove_callback(PrinterCallback)  # the progress lines replace its dict dumps
    trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    say(f"lora r={args.lora_r} alpha={args.lora_alpha} trainable_params={trainable}")
    result = trainer.train()
    steps = int(trainer.state.global_step)
    train_seconds = time.monotonic() - callback.started
    say(f"train done steps={steps} train_runtime={train_seconds:.1f}s")

    train_loss = float(result.training_loss)
    info: dict[str, Any] = {
        "run_name": plan.run_name,
        "base_model": args.base_model,
        "dataset": args.dataset,
        "dataset_format": plan.fmt,
        "rows": len(plan.rows),
        "method": "sft",
        "lora_r": args.lora_r,
        "lora_alpha": args.lora_alpha,
        "target_modules": target,
        "learning_rate": args.learning_rate,
        "epochs": args.epochs,
        "max_steps": args.max_steps,
        "batch_size": args.batch_size,
        "seed": args.seed,
        "steps": steps,
        "steps_total": callback.steps_total,
        **monitor.record(),
        "train_loss": train_loss if math.isfinite(train_loss) else None,
        "trackio_project": args.trackio_project,
        "trackio_space_id": args.trackio_space_id,
        "hub_model_id": plan.dest.hub_model_id,
        "started_at": now_iso(started),
        "finished_at": now_iso(),
        "duration_s": round(time.time() - started, 2),
        "train_seconds": round(train_seconds, 2),
    }
    return finish(trainer, plan.dest, plan.run_name, steps, monitor, info)


def main(argv: list[str] | None = None) -> int:
    started = time.time()
    return run_job(lambda: preflight(argv), lambda plan: train(plan, started))


if __name__ == "__main__":
    sys.exit(main())
