"""Does a training run fit a flavor's GPU? The console's side of the one GPU-memory estimate.

The estimate itself lives in `training/jobkit/vram.py`, beside the recipes that refuse a run which
cannot fit before they load a model; this module loads that same file (standard library only, no
training stack) so that the console refuses the same runs before it submits them, with the same
numbers. Its docstring says what is counted (weights at the dtype the recipe trains in, LoRA or
full fine-tune optimizer state, activations at the batch and sequence length, logits, overhead)
and how that compares with hf-mem's published approach: hf-mem reads the exact weight bytes from
the Safetensors headers on the Hub and adds an inference KV cache; this estimate derives the
parameter count from `config.json` and adds what training needs on top (gradients, AdamW
moments, activations), which hf-mem does not model.

What this module adds: a model known by its size alone (`model_b`, the cost model's input) or by
a `config.json`, a flavor's memory per GPU, its GPU count and whether its GPU has bf16 (from the
price book, so live flavors work too), the fit of a run on a flavor, and the flavors that fit,
cheapest first. A multi-GPU flavor counts every GPU: LoRA splits the layers across them, a full
fine-tune is sharded (FSDP); the estimate is of the busiest GPU, against one GPU's memory.

The flavor fit used to be the reference's "Fits (LoRA SFT)" column turned into a fixed size limit
per flavor (`Flavor.max_model_b`); that limit knew nothing of the method, the dtype the GPU can
train in, the batch or the sequence length. `max_model_b` stays as the reference's guidance text;
the fit is this estimate.

No UI, no network.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from console import paths
from console.inputs import MIB, read_user_file
from console.prices import Flavor, PriceBook, shipped_price_book

MODEL_CONFIG_MAX_BYTES = 4 * MIB
"""A model's config.json is a few KiB; a bigger file named as one is a mistake, not read."""
DEFAULT_BATCH_SIZE = 4  # the TRL recipes' --batch-size default
DEFAULT_SEQ_LEN = 1024  # and their --max-length
METHODS = ("lora", "full")
SEQUENCES_PER_EXAMPLE = {"sft": 1, "builder": 1, "dpo": 2, "kto": 2, "grpo": 1, "reward": 2, "embedding": 3}
"""Sequences each example puts through the model: DPO and a reward model a chosen and a rejected
answer, KTO an answer and its KL pair, an embedding triplet three texts; GRPO's batch counts
completions, one sequence each."""
NO_BF16_GPUS = ("T4",)


class FitError(ValueError):
    """A model or config this estimate cannot read."""


@lru_cache(maxsize=1)
def estimator() -> ModuleType:
    """`training/jobkit/vram.py`, loaded by path (it imports nothing outside the standard library)."""
    path = paths.training_dir() / "jobkit" / "vram.py"
    name = "console_training_vram"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - the file ships with the package
        raise FitError(f"cannot load the GPU-memory estimate from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def gpu_count(flavor: Flavor) -> int:
    head = flavor.gpu.split("x ", 1)[0].strip()
    return int(head) if head.isdigit() else 1


def per_gpu_gb(flavor: Flavor) -> float:
    """GB on one GPU of a flavor: what the busiest GPU's share of the run must fit."""
    return flavor.gpu_memory_gb / gpu_count(flavor)


def has_bf16(flavor: Flavor) -> bool:
    model = flavor.gpu.split("x ", 1)[-1].strip().upper()
    return not any(model.startswith(name) for name in NO_BF16_GPUS)


def read_config(source: str | Path) -> dict[str, Any]:
    """A `config.json`: the file, or the folder that holds it."""
    path = Path(source).expanduser()
    if path.is_dir():
        path = path / "config.json"
    try:
        data = json.loads(read_user_file(path, max_bytes=MODEL_CONFIG_MAX_BYTES).decode("utf-8"))
    except OSError as exc:
        raise FitError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise FitError(f"{path} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise FitError(f"{path} is not a config.json (no JSON object)")
    return data


@dataclass(frozen=True)
class RunShape:
    """What the estimate needs about a run beyond its flavor."""

    model_b: float
    method: str = "lora"  # "lora" or "full"
    kind: str = "sft"
    batch_size: int = DEFAULT_BATCH_SIZE
    seq_len: int = DEFAULT_SEQ_LEN
    lora_r: int = 16
    unsloth: bool = False
    config: dict[str, Any] | None = None
    """The model's config.json when known; else a Llama-family shape of `model_b` is assumed."""

    def shape(self) -> Any:
        vram = estimator()
        try:
            if self.config is not None:
                return vram.ModelShape.from_config(self.config, params=vram.counted_params(self.config))
            return vram.ModelShape.from_size(self.model_b)
        except vram.ConfigError as exc:
            raise FitError(str(exc)) from None


@dataclass(frozen=True)
class Fit:
    """A run's estimate on one flavor."""

    flavor: str
    gpu_gb: float  # per GPU
    estimate: Any  # jobkit.vram.Estimate, of the busiest GPU

    @property
    def fits(self) -> bool:
        return self.estimate.fits(self.gpu_gb)

    @property
    def needed_gb(self) -> float:
        return self.estimate.total_gb

    @property
    def gpus(self) -> int:
        return int(self.estimate.setup.gpus)

    def how(self) -> str:
        """How the run fits the flavor's GPUs, in words: `one GPU`, `layers split over 4 GPUs`..."""
        return self.estimate.spread().removeprefix(", ") or "one GPU"

    def describe(self) -> str:
        verdict = "fits" if self.fits else "does NOT fit"
        if self.gpus > 1:
            return (f"~{self.needed_gb:.1f} GB per GPU on {self.flavor} ({self.gpu_gb:g} GB per GPU, {self.how()}): "
                    f"{verdict}")
        return f"~{self.needed_gb:.1f} GB on {self.flavor} ({self.gpu_gb:g} GB per GPU): {verdict}"

    def as_dict(self) -> dict[str, Any]:
        return {"flavor": self.flavor, "gpu_gb": self.gpu_gb, "fits": self.fits, "how": self.how(),
                **self.estimate.as_dict()}


def fit(run: RunShape, flavor: Flavor) -> Fit:
    """The run's estimate on a GPU flavor (its dtype follows the flavor's GPU)."""
    if not flavor.is_gpu or flavor.gpu_memory_gb <= 0:
        raise FitError(f"{flavor.name} is not a GPU flavor")
    if run.method not in METHODS:
        raise FitError(f"method must be lora or full, got {run.method!r}")
    vram = estimator()
    setup = vram.Setup(
        method=run.method,
        dtype=vram.dtype_for(has_bf16(flavor), run.method, unsloth=run.unsloth),
        batch_size=run.batch_size,
        seq_len=run.seq_len,
        sequences_per_example=SEQUENCES_PER_EXAMPLE.get(run.kind, 1),
        lora_r=run.lora_r,
        gradient_checkpointing=True,  # TRL's default for the recipes on a GPU
        lm_head=run.kind not in ("embedding", "reward"),  # a reward model has a one-score head
        unsloth=run.unsloth,
        gpus=gpu_count(flavor),
    )
    return Fit(flavor.name, per_gpu_gb(flavor), vram.estimate(run.shape(), setup))


def fitting_flavors(run: RunShape, prices: PriceBook | None = None) -> list[Fit]:
    """Every GPU flavor the run fits, cheapest per hour first (then the least memory)."""
    prices = prices or shipped_price_book()
    out = []
    for flavor in prices.gpu_flavors():
        if flavor.gpu_memory_gb <= 0:
            continue
        f = fit(run, flavor)
        if f.fits:
            out.append(f)
    return sorted(out, key=lambda f: (prices.price_per_hour(f.flavor), f.gpu_gb, f.flavor))


def cheapest_fit(run: RunShape, prices: PriceBook | None = None) -> Fit | None:
    """The cheapest flavor per hour whose GPUs hold the run; None when none does."""
    fits = fitting_flavors(run, prices)
    return fits[0] if fits else None


def refusal(run: RunShape, flavor: str, prices: PriceBook | None = None) -> str | None:
    """Why the run cannot go on `flavor` (the estimate, and the cheapest flavor that fits), or
    None when it fits (or `flavor` is not a GPU flavor the price book knows: checked elsewhere)."""
    prices = prices or shipped_price_book()
    if flavor not in prices or not prices.get(flavor).is_gpu:
        return None
    here = fit(run, prices.get(flavor))
    if here.fits:
        return None
    best = cheapest_fit(run, prices)
    what = "a full fine-tune" if run.method == "full" else "LoRA"
    hint = (
        f"the cheapest flavor that fits: {best.flavor} ({best.gpu_gb:g} GB per GPU"
        f"{', ' + best.how() if best.gpus > 1 else ''}, "
        f"${prices.price_per_hour(best.flavor):.2f}/hr)"
        if best
        else "no flavor holds it, all its GPUs counted"
    )
    lean = unsloth_fit(run, flavor, prices)
    if lean is not None:
        hint += (f"; or Unsloth (reference §2: ~60% less VRAM, lets a bigger model fit a smaller flavor): "
                 f"~{lean.needed_gb:.1f} GB, it fits {flavor}")
    per = f" per GPU ({here.how()})" if here.gpus > 1 else ""
    return (
        f"{what} of a {here.estimate.shape.billions:.3g}B model needs ~{here.needed_gb:.1f} GB of GPU memory{per} "
        f"({here.estimate.breakdown()}) but {flavor} has {here.gpu_gb:g} GB per GPU; {hint}"
    )


def unsloth_fit(run: RunShape, flavor: str, prices: PriceBook | None = None) -> Fit | None:
    """The run with Unsloth on `flavor` when that fits and the run as it is does not (a LoRA run
    without Unsloth: Unsloth trains 4-bit LoRA), else None."""
    prices = prices or shipped_price_book()
    if run.method != "lora" or run.unsloth or flavor not in prices or not prices.get(flavor).is_gpu:
        return None
    if fit(run, prices.get(flavor)).fits:
        return None
    lean = fit(replace(run, unsloth=True), prices.get(flavor))
    return lean if lean.fits else None
