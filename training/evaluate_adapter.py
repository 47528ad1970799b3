# /// script
# requires-python = ">=3.10"
# dependencies = [
#     "trl>=0.20",
#     "peft>=0.15",
#     "transformers>=4.56",
#     "datasets>=3.0",
#     "torch>=2.4",
#     "tokenizers>=0.20",
#     "accelerate>=1.0",
# ]
# ///
"""Evaluation-gated promotion (`promote = "on_eval"`): score a passing run's adapter and the live
one on the tenant's held-out rows, and move the live tag only when the new one is better.

A CPU job the console submits after a run with `--promote on_eval` passes (the run itself lands
on `main` and leaves `live` where it is). It reads, from the adapter repo (`--hub-model-id`):

* the candidate: the passing run `--candidate RUN`, its commit on `main` (`<run>: PASS ...`);
* the live version: the commit of the live tag (`--live-tag`, default `live`).

Each is loaded (its base: the repo's `base_model/` for the offline tiny base, else the manifest's
`base_model` at its recorded revision; the LoRA adapter on top) and scored on the rows of
`--eval-split` of the dataset (default `test`; a dataset without it is scored on the split it
trained on, and the record says so): the evaluation loss of the recipe's trainer (SFT, DPO, KTO),
and for DPO its metric, the pairwise preference accuracy (the share of pairs whose chosen answer
the adapter prefers over the rejected one more than the base does).

The candidate is promoted when its loss is at least `--margin` (a share, default 0.01) below the
live one's and, where the recipe has a metric, that metric is no lower than the live one's. A
repo with nothing live promotes the candidate unscored. The record, `evaluation.json`, is
committed to the candidate's branch `runs/<run>` beside its manifest, and the last line is

    VERDICT: PASS run=<run> promoted=<yes|no> candidate_loss=<x> live_loss=<y> ...

Exit 0 whether promoted or not (the evaluation ran); 1 when it could not score; 2 on a refusal.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

try:
    from jobkit.models import TINY_MODEL
    from jobkit.run import (
        LIVE_TAG,
        RUN_BRANCH_PREFIX,
        Refusal,
        RefusingParser,
        check_run_name,
        fmt_loss,
        now_iso,
        run_job,
        say,
    )
except ImportError as e:  # the script was shipped without its folder: still end with a verdict
    print(f"VERDICT: FAIL missing_files: {e}; ship the whole training/ folder with the job", flush=True)
    sys.exit(2)

EVALUATION = "evaluation.json"
DEFAULT_MARGIN = 0.01
"""The share of the live adapter's loss a candidate must beat it by (1%: the noise of a few
hundred held-out rows is well under that)."""
METHODS = ("sft", "dpo", "kto")
METRIC = {"dpo": "preference_accuracy"}
"""The recipe's metric beside the loss, where it has one (higher is better)."""
DEFAULT_MAX_ROWS = 512
_LANDED = re.compile(r"^(?P<run>[A-Za-z0-9._-]+): PASS\b")


def build_parser() -> argparse.ArgumentParser:
    p = RefusingParser(prog="evaluate_adapter.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--hub-model-id", required=True, help="the tenant's adapter repo")
    p.add_argument("--base-model", help="the tenant's base model (each version loads the base its manifest "
                                        "names; this one is read on a server that scopes a job's token)")
    p.add_argument("--candidate", required=True, metavar="RUN", help="the passing run to evaluate")
    p.add_argument("--dataset", required=True, help="Hub dataset id or local JSONL file of the tenant's rows")
    p.add_argument("--method", choices=METHODS, default="sft", help="the recipe that trained it")
    p.add_argument("--eval-split", default="test", help="the held-out split (default test)")
    p.add_argument("--dataset-split", default="train",
                   help="the split trained on: scored when there is no held-out one")
    p.add_argument("--margin", type=float, default=DEFAULT_MARGIN,
                   help=f"the share of the live loss the candidate must beat it by (default {DEFAULT_MARGIN})")
    p.add_argument("--live-tag", default=LIVE_TAG, help=f"the tag serving loads (default {LIVE_TAG})")
    p.add_argument("--max-rows", type=int, default=DEFAULT_MAX_ROWS, help="rows scored at most")
    p.add_argument("--max-length", type=int, default=512)
    p.add_argument("--beta", type=float, default=0.1, help="DPO / KTO beta (the recipes' default)")
    return p


def preflight(argv: list[str] | None) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    check_run_name(args.candidate)
    if not 0 <= args.margin < 1:
        raise Refusal("bad_arguments", "--margin is a share of the live loss: at least 0, below 1")
    if args.max_rows < 1:
        raise Refusal("bad_arguments", "--max-rows must be at least 1")
    if not os.environ.get("HF_TOKEN"):
        raise Refusal("hf_token_missing", "HF_TOKEN is not set: the evaluation reads the repo and moves its tag")
    return args


# ----------------------------------------------------------------------------- the repo


def candidate_commit(api: Any, repo: str, run: str) -> str:
    for commit in api.list_repo_commits(repo, revision="main"):
        found = _LANDED.match(commit.title or "")
        if found and found.group("run") == run:
            return commit.commit_id
    raise Refusal("no_candidate", f"{run} has not landed on main of {repo}: only a passing run is evaluated")


def live_commit(api: Any, repo: str, tag: str) -> str | None:
    return next((t.target_commit for t in api.list_repo_refs(repo).tags if t.name == tag), None)


def move_live(api: Any, repo: str, tag: str, commit: str, message: str, *, exists: bool) -> None:
    if exists:
        api.delete_tag(repo, tag=tag)
    api.create_tag(repo, tag=tag, revision=commit, tag_message=message)


# ----------------------------------------------------------------------------- scoring


def eval_rows(args: argparse.Namespace) -> tuple[list[dict[str, Any]], str]:
    """The held-out rows (at most --max-rows) and which split they are."""
    from jobkit.recipe import checked_rows

    local = Path(args.dataset).is_file()
    if not local:
        try:
            _, rows = checked_rows(args.dataset, args.eval_split, args.method)
            return rows[: args.max_rows], args.eval_split
        except Exception as e:  # noqa: BLE001 - no such split: fall back, and say so
            say(f"no held-out split {args.eval_split!r} ({type(e).__name__}): scoring the {args.dataset_split} split")
    _, rows = checked_rows(args.dataset, args.dataset_split, args.method)
    return rows[: args.max_rows], f"{args.dataset_split} (no held-out split)"


def load(api: Any, repo: str, commit: str, workdir: Path) -> tuple[Any, Any, dict[str, Any]]:
    """The adapter at `commit` on its base: (model, tokenizer, manifest)."""
    from huggingface_hub import snapshot_download
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = Path(snapshot_download(repo, revision=commit, local_dir=str(workdir / commit[:12]),
                                    ignore_patterns=["last-checkpoint/*", "checkpoint-*/*", "*.pt", "*.bin"]))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    base = manifest.get("base_model") or TINY_MODEL
    if base == TINY_MODEL:
        model = AutoModelForCausalLM.from_pretrained(str(folder / "base_model"))
        tokenizer = AutoTokenizer.from_pretrained(str(folder / "base_model"))
    else:
        revision = manifest.get("base_model_revision") or None
        model = AutoModelForCausalLM.from_pretrained(base, revision=revision)
        tokenizer = AutoTokenizer.from_pretrained(str(folder) if (folder / "tokenizer_config.json").is_file() else base)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return PeftModel.from_pretrained(model, str(folder)), tokenizer, manifest


def score(model: Any, tokenizer: Any, rows: list[dict[str, Any]], args: argparse.Namespace,
          out: Path) -> dict[str, float]:
    """The recipe's trainer, evaluating only: {"loss": x[, metric: y]}."""
    from datasets import Dataset

    data = Dataset.from_list(rows)
    common = dict(output_dir=str(out), report_to=[], per_device_eval_batch_size=8, max_length=args.max_length,
                  dataloader_num_workers=0, dataloader_pin_memory=False, disable_tqdm=True, bf16=False,
                  fp16=False, gradient_checkpointing=False)
    if args.method == "sft":
        from trl import SFTConfig, SFTTrainer

        trainer = SFTTrainer(model=model, args=SFTConfig(**common), train_dataset=data, eval_dataset=data,
                             processing_class=tokenizer)
    elif args.method == "dpo":
        from trl import DPOConfig, DPOTrainer

        trainer = DPOTrainer(model=model, args=DPOConfig(beta=args.beta, **common), train_dataset=data,
                             eval_dataset=data, processing_class=tokenizer)
    else:
        from trl import KTOConfig, KTOTrainer

        trainer = KTOTrainer(model=model, args=KTOConfig(beta=args.beta, **common), train_dataset=data,
                             eval_dataset=data, processing_class=tokenizer)
    metrics = trainer.evaluate()
    result = {"loss": float(metrics["eval_loss"])}
    if args.method == "dpo" and "eval_rewards/accuracies" in metrics:
        result[METRIC["dpo"]] = float(metrics["eval_rewards/accuracies"])
    if not all(math.isfinite(v) for v in result.values()):
        raise RuntimeError(f"a score is not finite: {result}")
    return result


def better(candidate: dict[str, float], live: dict[str, float], margin: float, metric: str | None) -> tuple[bool, str]:
    """Whether the candidate beats the live adapter by the margin, and why in words."""
    need = live["loss"] * (1 - margin)
    if candidate["loss"] > need:
        return False, (f"loss {candidate['loss']:.4f} is not {margin:.0%} below the live {live['loss']:.4f} "
                       f"(needs <= {need:.4f})")
    if metric and metric in live and candidate.get(metric, -math.inf) < live[metric]:
        return False, f"{metric} {candidate.get(metric, math.nan):.4f} is below the live {live[metric]:.4f}"
    return True, f"loss {candidate['loss']:.4f} is {margin:.0%} or more below the live {live['loss']:.4f}"


# ----------------------------------------------------------------------------- the evaluation


def record(api: Any, args: argparse.Namespace, info: dict[str, Any]) -> None:
    """evaluation.json on the candidate's branch, beside its manifest."""
    data = json.dumps(info, indent=2, sort_keys=True).encode() + b"\n"
    api.upload_file(repo_id=args.hub_model_id, path_or_fileobj=data, path_in_repo=EVALUATION,
                    revision=f"{RUN_BRANCH_PREFIX}{args.candidate}",
                    commit_message=f"{args.candidate}: evaluation ({'promoted' if info['promoted'] else 'kept live'})")


def evaluate(args: argparse.Namespace, started: float) -> tuple[bool, str]:
    from huggingface_hub import HfApi

    api = HfApi()
    repo, run = args.hub_model_id, args.candidate
    cand_commit = candidate_commit(api, repo, run)
    live = live_commit(api, repo, args.live_tag)
    info: dict[str, Any] = {"run_name": run, "candidate_commit": cand_commit, "live_commit": live,
                            "margin": args.margin, "method": args.method, "metric": METRIC.get(args.method),
                            "job_id": os.environ.get("JOB_ID") or None, "started_at": now_iso(started)}
    if live == cand_commit:
        info.update(promoted=False, reason="already live", candidate=None, live=None)
        record(api, args, info)
        return True, f"run={run} promoted=no reason=already_live"
    if live is None:
        move_live(api, repo, args.live_tag, cand_commit, f"{run}: first version (on_eval)", exists=False)
        say(f"nothing was live: {run} is promoted unscored; live tag {args.live_tag} -> {cand_commit}")
        info.update(promoted=True, reason="nothing was live", candidate=None, live=None, finished_at=now_iso())
        record(api, args, info)
        return True, f"run={run} promoted=yes reason=first_version"

    import torch

    torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS") or 1)))
    from transformers import set_seed

    set_seed(0)
    rows, split = eval_rows(args)
    say(f"scoring {run} ({cand_commit[:8]}) and the live {live[:8]} on {len(rows)} rows of {split}")
    scores: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="evaluate-") as tmp:
        for name, commit in (("candidate", cand_commit), ("live", live)):
            model, tokenizer, manifest = load(api, repo, commit, Path(tmp))
            result = score(model, tokenizer, rows, args, Path(tmp) / f"out-{name}")
            scores[name] = {**result, "run": manifest.get("run_name"), "commit": commit}
            figures = " ".join(f"{k}={fmt_loss(v)}" for k, v in result.items())
            say(f"eval {name} run={manifest.get('run_name')} commit={commit[:8]} {figures}")
    promoted, why = better(scores["candidate"], scores["live"], args.margin, METRIC.get(args.method))
    if promoted:
        move_live(api, repo, args.live_tag, cand_commit, f"{run}: promoted on evaluation ({why})", exists=True)
        say(f"promoted: {why}; live tag {args.live_tag} -> {cand_commit}")
    else:
        say(f"kept live {live[:8]}: {why}")
    info.update(promoted=promoted, reason=why, rows=len(rows), split=split, candidate=scores["candidate"],
                live=scores["live"], finished_at=now_iso())
    record(api, args, info)
    tail = (f"run={run} promoted={'yes' if promoted else 'no'} candidate_loss={fmt_loss(scores['candidate']['loss'])} "
            f"live_loss={fmt_loss(scores['live']['loss'])} live_run={scores['live']['run']}")
    metric = METRIC.get(args.method)
    if metric and metric in scores["candidate"]:
        tail += (f" {metric}={fmt_loss(scores['candidate'][metric])} "
                 f"live_{metric}={fmt_loss(scores['live'].get(metric))}")
    return True, tail


def main(argv: list[str] | None = None) -> int:
    started = time.time()
    return run_job(lambda: preflight(argv), lambda args: evaluate(args, started))


if __name__ == "__main__":
    sys.exit(main())
