"""Every GPU of a multi-GPU flavor: LoRA splits the model by layers, a full fine-tune is sharded.

* LoRA (one process): the base is loaded with `device_map="auto"` when the job sees more than one
  CUDA GPU, so accelerate places consecutive layers on each GPU and the Trainer runs the model in
  place (model parallel); the adapters train where their layers are. The memory estimate counts
  the same split (`jobkit.vram`, `Setup.gpus`).
* A full fine-tune: one process per GPU under `accelerate launch` with FSDP (FULL_SHARD, wrapped
  per transformer layer: the model's `_no_split_modules`), launched by the recipe itself when its
  `--flavor` has more than one GPU. The launching process imports no torch: it relays the ranks'
  output and takes the first rank's VERDICT line as its own, so the log still ends with exactly
  one. Only the first rank prints (:func:`is_main_process`), writes the manifest and moves the
  Hub's branches and tags; every rank takes part in saving (FSDP gathers the full weights).

Standard library only.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jobkit import vram

LAUNCHED_ENV = "LOCAL_RANK"
"""Set by `accelerate launch` (torch.distributed) in each rank: a recipe running as a rank does not
launch again."""


def is_main_process() -> bool:
    """Whether this process is the first rank of a sharded run, or the only process."""
    return os.environ.get("RANK", "0") in ("", "0")


def rank_finish(trainer: Any, dest: Any, commit_message: str, passed: bool) -> bool:
    """The end of a run on a rank other than the first: a passing run's weights are gathered from
    every rank (the trainer uploads or writes them on the first alone); nothing else."""
    if passed:
        if dest.hub_model_id is not None:
            trainer.push_to_hub(commit_message=commit_message, revision=dest.hub_branch)
        else:
            trainer.save_model(str(dest.output_dir))
    return passed


def launched() -> bool:
    return LAUNCHED_ENV in os.environ


def lora_load_kwargs(cuda_gpus: int) -> dict[str, str]:
    """`from_pretrained` keywords of a LoRA base on `cuda_gpus` GPUs: split by layers over several."""
    return {"device_map": "auto"} if cuda_gpus > 1 else {}


def needs_launch(flavor: str | None, full: bool) -> bool:
    """Whether a run launches its ranks: a full fine-tune on a flavor of several GPUs, not yet a rank."""
    return full and vram.gpu_count(flavor) > 1 and not launched()


def cuda_present() -> bool:
    """Whether this machine has an NVIDIA GPU, asked of /dev (no torch in the launching process)."""
    return any(Path("/dev").glob("nvidia[0-9]*"))


def fsdp_launch_command(script: str, argv: list[str], flavor: str, *, cuda: bool | None = None,
                        python: str | None = None) -> list[str]:
    """`accelerate launch` of `script argv` on every GPU of `flavor`, sharded with FSDP. Without a
    CUDA GPU (`cuda`, else :func:`cuda_present`: a local job on the embedded server's CPU) the same
    ranks run as CPU processes, in fp32 and without the rank-0 loading that FSDP allows on GPUs only."""
    gpus = vram.gpu_count(flavor)
    cuda = cuda_present() if cuda is None else cuda
    precision = ("bf16" if flavor not in vram.FLAVOR_GPUS or vram.has_bf16(flavor) else "fp16") if cuda else "no"
    on_gpu = "true" if cuda else "false"
    return [
        python or sys.executable, "-m", "accelerate.commands.launch",
        "--num_processes", str(gpus), "--num_machines", "1", "--mixed_precision", precision,
        "--dynamo_backend", "no",
        "--use_fsdp",
        "--fsdp_sharding_strategy", "FULL_SHARD",
        "--fsdp_auto_wrap_policy", "TRANSFORMER_BASED_WRAP",
        "--fsdp_backward_prefetch", "BACKWARD_PRE",
        "--fsdp_state_dict_type", "FULL_STATE_DICT",
        "--fsdp_cpu_ram_efficient_loading", on_gpu,  # one copy of the weights in CPU memory, not one per rank
        "--fsdp_sync_module_states", on_gpu,
        "--fsdp_use_orig_params", "true",
        script, *argv,
    ]  # fmt: skip


def run_ranks(command: list[str], say: Callable[[str], None] = print) -> tuple[bool, str]:
    """Run the launch command, relaying its output; (passed, the rest of the first rank's VERDICT
    line), or a failure when the ranks ended without one."""
    head = command[: command.index("--use_fsdp")] if "--use_fsdp" in command else command
    say(f"launch: {shlex.join(head)}{' ... (FSDP over the flavor GPUs)' if head != command else ''}")
    verdict = None
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, bufsize=1) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("VERDICT: "):
                verdict = line.strip()
                continue
            print(line, end="", flush=True)
        code = proc.wait()
    if verdict is None:
        return False, f"ranks_failed: accelerate launch exited {code} with no VERDICT from the first rank"
    status, _, tail = verdict.removeprefix("VERDICT: ").partition(" ")
    return status == "PASS", tail
