"""What the TRL recipes share (`sft_lora.py`, `dpo_lora.py`, `kto_lora.py`): their arguments, the
preflight, the GPU-memory fit, the base model and the trainer settings.

A recipe is then its trainer: :func:`train` runs the same steps for each (the `plan` line, the
dataset, the base, LoRA or the whole model, the monitor, the trainer, the end of the run) and asks
the recipe's `make_trainer` for the TRL trainer of its method.

* Preflight (standard library only, well under a second): the arguments, `HF_TOKEN` and the
  destination (`jobkit.run`), `--unsloth` without the package, a local dataset checked by the
  validator for the recipe's method, the step estimate, and with `--flavor` whether the run fits
  that flavor's GPU (`jobkit.vram`, from `config.json`; refused `does_not_fit`, naming the
  smallest flavor that fits).
* Training: torch is imported only then. `--unsloth` without a CUDA GPU is refused at once; on a
  GPU the fit is checked again against the device's real memory.

Standard library only at import time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from validate_dataset import ReadError, failure, needs_datasets, offending_rows, training_rows, validate

from jobkit import multigpu, vram
from jobkit.hub_runs import open_run, trained_on
from jobkit.models import (
    TINY_CAUSAL_CONFIG,
    TINY_MODEL,
    build_tiny_causal_lm,
    check_base_model,
    check_unsloth_installed,
    load_causal_lm,
    load_unsloth,
    require_cuda,
)
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
    fetch_checkpoint,
    finish,
    inject_nan_step,
    monitor_callback,
    now_iso,
    pick_precision,
    quiet_libraries,
    resolve_destination,
    say,
    trainer_rules,
)

TINY_VOCAB = 1024  # the tiny tokenizer's vocabulary is trained up to this size


# ----------------------------------------------------------------------------- arguments


def build_parser(prog: str, description: str, *, learning_rate: float, dataset_help: str) -> RefusingParser:
    """The arguments every TRL recipe takes (a recipe adds its method's own)."""
    p = RefusingParser(prog=prog, description=description)
    p.add_argument(
        "--base-model",
        required=True,
        help=f"Hub model id of the base model, or '{TINY_MODEL}' for the offline tiny Llama",
    )
    p.add_argument("--dataset", required=True, help=dataset_help)
    p.add_argument("--dataset-split", default="train", help="split of a Hub dataset")
    p.add_argument("--epochs", type=float, default=3.0, help="training epochs (default 3)")
    p.add_argument(
        "--max-steps",
        type=int,
        default=-1,
        help="stop after this many optimizer steps (overrides --epochs when > 0)",
    )
    p.add_argument(
        "--learning-rate", type=float, default=learning_rate, help=f"peak learning rate (default {learning_rate:g})"
    )
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
        "--unsloth",
        action="store_true",
        help="load the base with Unsloth (~2x faster, 4-bit for LoRA); needs the unsloth package and a "
        "CUDA GPU, and refuses to start without them",
    )
    p.add_argument(
        "--flavor",
        default=None,
        help="the HF Jobs flavor the run is on: refuse to start when the run cannot fit its GPU memory",
    )
    p.add_argument(
        "--model-b",
        type=float,
        default=None,
        help="the base model's declared size in billions (what the run was costed at): refuse to start "
        "when the base's config.json counts a different size",
    )
    add_monitor_arguments(p)
    return p


# ----------------------------------------------------------------------------- preflight


@dataclass
class Plan:
    """Everything decided before torch is imported."""

    args: argparse.Namespace
    method: str  # the validator's method: sft | dpo | kto | grpo | reward
    run_name: str
    dataset_is_local: bool  # checked in the preflight (a local JSON/JSONL file)
    rows: list[dict[str, Any]] | None  # the rows to train on, once checked
    fmt: str | None
    dest: Destination
    inject_nan_at: int | None
    full: bool = False  # a full fine-tune (the builder model) instead of LoRA
    steps_total: int | None = None
    fit: vram.Estimate | None = None
    script: str = ""
    """The recipe file and its arguments, which a sharded run launches again on every GPU."""
    argv: list[str] = dataclasses.field(default_factory=list)

    @property
    def artifact(self) -> str:
        return "model" if self.full else "adapter"


def checked_rows(dataset: str, split: str, method: str) -> tuple[str, list[dict[str, Any]]]:
    """The validator's check (`validate_dataset.py DATASET --method <method>`), then the rows.

    Raises Refusal with the validator's reason when the dataset fails it. Rows longer than
    --max-length are not refused: the trainer truncates them.
    """
    try:
        report = validate(dataset, method, None, split)
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
    # GRPO samples each prompt --num-generations times, and its batch counts completions
    batches = math.ceil(rows * getattr(args, "num_generations", 1) / args.batch_size)
    per_epoch = max(1, math.ceil(batches / args.grad_accum))
    return max(1, math.ceil(args.epochs * per_epoch))


def preflight(argv: list[str] | None, parser: argparse.ArgumentParser, method: str, *, full: bool = False) -> Plan:
    """Argument, token, destination, dataset and fit checks. Standard library only."""
    args = parser.parse_args(argv)
    full = full or bool(getattr(args, "full", False))
    for name in ("lora_r", "lora_alpha", "batch_size", "grad_accum", "max_length"):
        if getattr(args, name) <= 0:
            raise Refusal("bad_arguments", f"--{name.replace('_', '-')} must be positive")
    if args.epochs <= 0 and args.max_steps <= 0:
        raise Refusal("bad_arguments", "--epochs must be positive (or give --max-steps)")
    if not args.learning_rate >= 0:
        raise Refusal("bad_arguments", "--learning-rate must be >= 0")
    if args.flavor is not None and args.flavor not in vram.FLAVOR_GPUS:
        raise Refusal("bad_arguments", f"--flavor {args.flavor!r} is not a GPU flavor ({', '.join(vram.FLAVOR_GPUS)})")
    check_monitor_arguments(args)
    run_name = args.run_name or default_run_name(args.dataset, args.run_name_prefix)
    check_run_name(run_name)
    dest = resolve_destination(args, run_name)
    inject = inject_nan_step(args)
    if args.unsloth:
        check_unsloth_installed()
    checked = check_base_model(args.base_model)  # a missing base fails here, in seconds, not at loading
    if args.base_model != TINY_MODEL:
        say(f"base model {args.base_model}: {checked}")

    try:
        local = not needs_datasets(args.dataset)
    except ReadError as e:
        raise Refusal("bad_dataset", f"unreadable: {e}") from None
    rows: list[dict[str, Any]] | None = None
    fmt: str | None = None
    if local:  # JSON / JSONL: checked now, with the standard library
        fmt, rows = checked_rows(args.dataset, args.dataset_split, method)

    plan = Plan(
        args=args,
        method=method,
        run_name=run_name,
        dataset_is_local=local,
        rows=rows,
        fmt=fmt,
        dest=dest,
        inject_nan_at=inject,
        full=full,
        script=str(Path(__file__).resolve().parent.parent / parser.prog),
        argv=list(sys.argv[1:] if argv is None else argv),
    )
    if rows is not None:
        plan.steps_total = estimate_steps(len(rows), args)
    if args.model_b is not None and not args.model_b > 0:
        raise Refusal("bad_arguments", "--model-b must be positive")
    config = None
    if args.flavor is not None or args.model_b is not None or full:
        config = model_config(args.base_model)
        check_size(plan, config)
    if args.flavor is not None:
        if config is None:
            say(f"fit: not checked before loading (no config.json for {args.base_model} yet)")
        else:
            gb = vram.per_gpu_gb(args.flavor)
            plan.fit = check_fit(plan, config, gb, args.flavor)
    return plan


def check_size(plan: Plan, config: dict[str, Any] | None) -> None:
    """Refuse a base whose `config.json` counts another size than `--model-b` declares
    (`size_mismatch`, both numbers), or a full fine-tune of a model over 7B by its real count
    (`lora_required`); say the count when it is known (`jobkit.vram.size_problem`)."""
    args = plan.args
    params = vram.counted_params(config) if args.base_model != TINY_MODEL else None
    if params is None:
        if args.model_b is not None and args.base_model != TINY_MODEL:
            say(f"size: unknown (not a Llama, Mistral or Qwen config.json); --model-b {args.model_b:g} as declared")
        return
    why = vram.size_problem(args.model_b, params, base=args.base_model, declared_as="--model-b", full=plan.full)
    if why:
        disagrees = args.model_b is not None and not vram.size_agrees(args.model_b, params)
        raise Refusal("size_mismatch" if disagrees else "lora_required", why)
    say(f"size: {params / 1e9:.2f}B parameters by its config.json"
        + (f", --model-b {args.model_b:g} agrees" if args.model_b is not None else ""))


# ----------------------------------------------------------------------------- GPU memory


def model_config(base_model: str) -> dict[str, Any] | None:
    """The base's `config.json` as a dict: the tiny model's shape, a local folder's file, or the
    Hub's (fetched with huggingface_hub, no weights); None when it cannot be read."""
    if base_model == TINY_MODEL:
        return {**TINY_CAUSAL_CONFIG, "vocab_size": TINY_VOCAB}
    path = Path(base_model).expanduser()
    if path.is_dir():
        file = path / "config.json"
        try:
            return json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
    try:
        from huggingface_hub import hf_hub_download

        return json.loads(Path(hf_hub_download(base_model, "config.json")).read_text(encoding="utf-8"))
    except Exception:  # offline, gated, not a model repo: the GPU check after loading still runs
        return None


SEQUENCES = {"sft": 1, "dpo": 2, "kto": 2, "grpo": 1, "reward": 2}
"""Sequences per example of the batch (GRPO's batch counts completions: one sequence each)."""


def fit_estimate(plan: Plan, config: dict[str, Any], flavor: str | None, gpus: int | None = None) -> vram.Estimate:
    """The run's GPU-memory estimate on `flavor` (its dtype depends on the GPU) over its GPUs (or
    `gpus`: the devices the job sees), per GPU."""
    args = plan.args
    method = "full" if plan.full else "lora"
    checkpointing = args.gradient_checkpointing
    if checkpointing is None:
        checkpointing = args.base_model != TINY_MODEL  # TRL's default is on; off for the tiny base
    setup = vram.Setup(
        method=method,
        dtype=vram.training_dtype(flavor, method, unsloth=args.unsloth),
        batch_size=args.batch_size,
        seq_len=args.max_length,
        sequences_per_example=SEQUENCES.get(plan.method, 1),
        lora_r=args.lora_r,
        lora_dropout=args.lora_dropout > 0,
        gradient_checkpointing=bool(checkpointing) or args.unsloth,
        unsloth=args.unsloth,
        gpus=gpus or vram.gpu_count(flavor),
    )
    return vram.estimate(vram.ModelShape.from_config(config, params=vram.counted_params(config)), setup)


def check_fit(
    plan: Plan, config: dict[str, Any], gpu_gb: float, where: str, flavor: str | None = None, gpus: int | None = None
) -> vram.Estimate | None:
    """Refuse (`does_not_fit`) a run whose estimate exceeds `gpu_gb`, naming the smallest flavor
    whose GPU holds it; print the `fit` line when it fits (None: the config has no shape to read)."""
    flavor = flavor or plan.args.flavor
    try:
        est = fit_estimate(plan, config, flavor, gpus)
    except (vram.ConfigError, ValueError) as e:
        say(f"fit: not checked ({e})")
        return None
    if est.fits(gpu_gb):
        say(f"fit: {est.describe()} <= {gpu_gb:g} GB per GPU on {where}")
        return est
    per_gpu = {name: vram.per_gpu_gb(name) for name in vram.FLAVOR_GPUS}
    best = vram.smallest_fitting(lambda name: fit_estimate(plan, config, name), per_gpu)
    hint = (
        f"the smallest flavor that fits: {best[0]} ({per_gpu[best[0]]:g} GB per GPU, "
        f"~{best[1].total_gb:.1f} GB needed{' per GPU' if best[1].setup.gpus > 1 else ''}{best[1].spread()})"
        if best
        else "no flavor holds it, all its GPUs counted"
    )
    what = "a full fine-tune" if plan.full else "LoRA"
    raise Refusal(
        "does_not_fit",
        f"{what} of {plan.args.base_model} needs ~{est.total_gb:.1f} GB of GPU memory"
        f"{' per GPU' + est.spread() if est.setup.gpus > 1 else ''} "
        f"({est.breakdown()}) but {where} has {gpu_gb:g} GB per GPU; {hint} "
        "(or lower --batch-size / --max-length)",
    )


def check_device_fit(plan: Plan, torch: Any) -> None:
    """On a CUDA GPU, the estimate against the device's own memory (a flavor's name can be wrong)."""
    if not torch.cuda.is_available():
        return
    config = model_config(plan.args.base_model)
    if config is None:
        try:
            from transformers import AutoConfig

            config = AutoConfig.from_pretrained(plan.args.base_model).to_dict()
        except Exception as e:
            say(f"fit: not checked ({type(e).__name__}: {e})")
            return
    props = torch.cuda.get_device_properties(0)
    gpus = torch.cuda.device_count()
    where = f"this GPU ({props.name})" if gpus == 1 else f"these {gpus} GPUs ({props.name})"
    plan.fit = check_fit(plan, config, props.total_memory / vram.GB, where, plan.args.flavor, gpus)


# ----------------------------------------------------------------------------- training


def trainer_settings(
    plan: Plan, config_fields: set[str], *, bf16: bool, fp16: bool, cuda: bool
) -> dict[str, Any]:
    """Keyword arguments for the recipe's TRL config: the recipe's, then the run rules (pure,
    testable). `config_fields` are the field names of the installed config class (they vary
    across versions; empty means all)."""
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
    if args.unsloth:
        checkpointing = False  # Unsloth's own ("unsloth") checkpointing is on the model already
    if checkpointing is not None:
        kwargs["gradient_checkpointing"] = checkpointing
    return kwargs


def plan_line(plan: Plan, **extra: Any) -> str:
    args = plan.args
    rows = len(plan.rows) if plan.rows is not None else "?"
    training = "full" if plan.full else f"lora_r={args.lora_r}"
    more = "".join(f" {k}={v}" for k, v in extra.items())
    return (
        f"plan run={plan.run_name} method={plan.method} base_model={args.base_model} dataset={args.dataset} "
        f"format={plan.fmt or '?'} rows={rows} epochs={args.epochs:g} max_steps={args.max_steps} "
        f"batch_size={args.batch_size} lr={args.learning_rate:g} training={training}{more} "
        f"unsloth={'yes' if args.unsloth else 'no'} trackio_project={args.trackio_project} "
        f"destination={plan.dest.where}"
    )


def lora_target(args: argparse.Namespace) -> str | list[str]:
    target = args.target_modules.strip()
    if target == "all-linear":
        return target
    return [t.strip() for t in target.split(",") if t.strip()]


def build_model(plan: Plan, dtype: Any, torch: Any) -> tuple[Any, Any, bool]:
    """(model, tokenizer, has_adapter): the tiny base (saved beside the weights), Unsloth's
    loader, or a Hub base."""
    args = plan.args
    assert plan.rows is not None
    if args.unsloth:
        say(f"loading base model {args.base_model} with Unsloth ({'full' if plan.full else '4-bit + LoRA'})")
        model, tokenizer = load_unsloth(
            args.base_model,
            max_length=args.max_length,
            full=plan.full,
            lora_r=args.lora_r,
            lora_alpha=args.lora_alpha,
            lora_dropout=args.lora_dropout,
            target_modules=lora_target(args),
            seed=args.seed,
        )
        return model, tokenizer, not plan.full
    if args.base_model == TINY_MODEL:
        if not os.environ.get("OMP_NUM_THREADS"):
            # 64-wide matrices gain nothing from threads, and several demo jobs share the CPU
            torch.set_num_threads(1)
        say(f"building offline base model {TINY_MODEL} (LlamaForCausalLM hidden=64 layers=2)")
        base_dir = plan.dest.output_dir / "base_model"
        model, tokenizer = build_tiny_causal_lm(plan.rows, args.max_length, args.seed, str(base_dir))
        if not plan.full:
            # the base exists nowhere else: keep it beside the adapter so the adapter can be loaded
            # (a full fine-tune saves the whole model instead)
            model.save_pretrained(base_dir)
            tokenizer.save_pretrained(base_dir)
        return model, tokenizer, False
    say(f"loading base model {args.base_model}")
    chat = plan.fmt != "text" and any(isinstance(v, list) for v in plan.rows[0].values())
    # LoRA on several GPUs: the layers split over them (a full fine-tune is sharded by its ranks)
    placement = {} if plan.full else multigpu.lora_load_kwargs(torch.cuda.device_count())
    if placement:
        say(f"placing {args.base_model} over {torch.cuda.device_count()} GPUs by layers (device_map=auto)")
    model, tokenizer = load_causal_lm(args.base_model, dtype, needs_chat_template=chat, **placement)
    return model, tokenizer, False


MakeTrainer = Callable[[Plan, Any, Any, Any, dict[str, Any], list[Any]], Any]
"""(plan, model, tokenizer, peft_config or None, config kwargs, callbacks) -> a TRL trainer."""


def train(
    plan: Plan,
    started: float,
    make_trainer: MakeTrainer,
    config_class: Callable[[], Any],
    *,
    load_model: Callable[[Plan, Any, Any], tuple[Any, Any, bool]] | None = None,
    lora_task: str = "CAUSAL_LM",
    new_monitor: Callable[[argparse.Namespace], LossMonitor] | None = None,
    **line: Any,
) -> tuple[bool, str]:
    """Run a TRL recipe; returns (passed, VERDICT line tail). `config_class()` imports and returns
    the recipe's TRL config class (`SFTConfig`...), whose fields decide which settings apply;
    `line` adds the recipe's own fields to the `plan` line. A recipe may load its own model
    (`load_model`, as :func:`build_model`: the reward model's one-score head), give LoRA its task
    (`lora_task`) and judge the run with its own monitor (`new_monitor(args)`)."""
    args = plan.args
    if multigpu.needs_launch(args.flavor, plan.full):  # one process per GPU, FSDP: they print the rest
        return multigpu.run_ranks(multigpu.fsdp_launch_command(plan.script, plan.argv, args.flavor), say)
    say(plan_line(plan, **line))
    if plan.steps_total is not None:
        say(f"steps_total={plan.steps_total}")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    resume = fetch_checkpoint(plan.dest, args.resume_from)  # a missing checkpoint is refused before torch
    import torch  # heavy imports start here, after every check passed

    if args.unsloth:
        require_cuda(torch.cuda.is_available())
    check_device_fit(plan, torch)
    if not plan.dataset_is_local:
        say(f"loading dataset {args.dataset} split={args.dataset_split}")
        plan.fmt, plan.rows = checked_rows(args.dataset, args.dataset_split, plan.method)
        plan.steps_total = estimate_steps(len(plan.rows), args)
        say(f"dataset format={plan.fmt} rows={len(plan.rows)}")
        say(f"steps_total={plan.steps_total}")
    assert plan.rows is not None and plan.fmt is not None and plan.steps_total is not None
    revisions = trained_on(args.base_model, args.dataset)

    from peft import LoraConfig
    from transformers import PrinterCallback, set_seed

    quiet_libraries()
    set_seed(args.seed)
    bf16, fp16, dtype = pick_precision(args.precision, full=plan.full)

    t0 = time.monotonic()
    model, tokenizer, has_adapter = (load_model or build_model)(plan, dtype, torch)
    n_params = sum(p.numel() for p in model.parameters())
    say(f"model ready params={n_params} vocab={len(tokenizer)} in {time.monotonic() - t0:.1f}s")

    peft_config = None
    if not plan.full and not has_adapter:
        peft_config = LoraConfig(
            r=args.lora_r,
            lora_alpha=args.lora_alpha,
            lora_dropout=args.lora_dropout,
            target_modules=lora_target(args),
            task_type=lora_task,
        )
    fields = {f.name for f in dataclasses.fields(config_class())}
    config_kwargs = trainer_settings(plan, fields, bf16=bf16, fp16=fp16, cuda=torch.cuda.is_available())
    monitor = (new_monitor or LossMonitor.from_args)(args)
    monitor.vocab_size = len(tokenizer)  # a dead run's loss sits at ln(vocab)
    callback = monitor_callback(monitor, steps_total=plan.steps_total, inject_nan_at=plan.inject_nan_at)
    record = {"run_name": plan.run_name, "job_id": os.environ.get("JOB_ID") or None, "base_model": args.base_model,
              "dataset": args.dataset, "method": plan.method, "resumed_from": args.resume_from,
              "started_at": now_iso(started), **revisions}
    pushes = open_run(plan.dest, private=not args.hub_public, record=record)
    trainer = make_trainer(plan, model, tokenizer, peft_config, config_kwargs, [callback, *pushes])
    trainer.remove_callback(PrinterCallback)  # the progress lines replace its dict dumps
    trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    if plan.full:
        say(f"full fine-tune trainable_params={trainable}")
    else:
        say(f"lora r={args.lora_r} alpha={args.lora_alpha} trainable_params={trainable}")
    result = trainer.train(resume_from_checkpoint=resume[0] if resume else None)
    steps = int(trainer.state.global_step)
    train_seconds = time.monotonic() - callback.started
    say(f"train done steps={steps} train_runtime={train_seconds:.1f}s")

    train_loss = float(result.training_loss)
    info: dict[str, Any] = {
        "run_name": plan.run_name,
        "job_id": os.environ.get("JOB_ID") or None,
        "resumed_from": args.resume_from,
        "resumed_at_step": resume[1] if resume else None,
        "base_model": args.base_model,
        "dataset": args.dataset,
        **revisions,
        "dataset_format": plan.fmt,
        "rows": len(plan.rows),
        "method": plan.method,
        "training": "full" if plan.full else "lora",
        "unsloth": bool(args.unsloth),
        "lora_r": None if plan.full else args.lora_r,
        "lora_alpha": None if plan.full else args.lora_alpha,
        "target_modules": None if plan.full else lora_target(args),
        "trainable_params": trainable,
        "learning_rate": args.learning_rate,
        "epochs": args.epochs,
        "max_steps": args.max_steps,
        "batch_size": args.batch_size,
        "seed": args.seed,
        "steps": steps,
        "steps_total": callback.steps_total,
        **monitor.record(),
        "train_loss": train_loss if math.isfinite(train_loss) else None,
        "gpu_memory_estimate": plan.fit.as_dict() if plan.fit is not None else None,
        "trackio_project": args.trackio_project,
        "trackio_space_id": args.trackio_space_id,
        "hub_model_id": plan.dest.hub_model_id,
        "started_at": now_iso(started),
        "finished_at": now_iso(),
        "duration_s": round(time.time() - started, 2),
        "train_seconds": round(train_seconds, 2),
    }
    return finish(trainer, plan.dest, plan.run_name, steps, monitor, info, artifact=plan.artifact,
                  live_policy=(args.live_tag, args.promote))

