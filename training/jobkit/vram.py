"""How much GPU memory a training run needs, from the model's `config.json` and the run's settings.

One estimate serves both sides: the recipes refuse a run that cannot fit its GPU before they load
a model, and the console (`console whatif`, submissions) loads this same file to refuse it before
it is submitted. Standard library only and no import of the rest of `jobkit`, so the console can
load the file by path without the training stack.

The estimate, in bytes, is the sum of

* weights: the parameter count (from the architecture in `config.json`, or a count given) times
  the bytes of the dtype the recipe loads them in: bf16 on GPUs that have it, fp16 for LoRA on
  those that do not (T4), fp32 for a full fine-tune there (AMP keeps fp32 master weights), and
  about 0.56 bytes for 4-bit (Unsloth's default loader: NF4 blocks plus their scales; the
  embeddings and the LM head stay 16-bit);
* what the optimizer trains: LoRA adapters are kept in fp32 (PEFT's default), so each trainable
  parameter costs 4 (weight) + 4 (gradient) + 8 (AdamW's two moments); a full fine-tune has a
  gradient and two AdamW moments in the weights' dtype for every parameter (2 + 4 bytes on top of
  the bf16 weight, 4 + 8 on top of an fp32 one);
* activations kept for the backward pass, per token: about 6h + 2kv + 4I values per layer for a
  gated MLP (2I for a plain one), where h is the hidden size, kv the key/value width and I the MLP
  width (Korthikanti et al., 2022, "Reducing Activation Recomputation in Large Transformer
  Models", give 34 bytes x h per token per layer for GPT with I = 4h; SDPA / flash attention keeps
  no s x s score matrix, so that term is left out), plus LoRA dropout's copies of the adapted
  layers' inputs; with gradient checkpointing, only each layer's input plus one layer recomputed
  at a time. Tokens = batch x sequence length x sequences per example (2 for DPO's chosen and
  rejected and KTO's example and KL pair, 3 for an embedding triplet);
* logits for a language-model head: vocabulary x tokens, in the activation dtype plus an fp32
  copy and its gradient for the loss (Unsloth's chunked cross-entropy keeps about half);
* overhead: 1 GB for the CUDA context, cuBLAS workspaces and kernels, and 8% of the rest for the
  caching allocator's fragmentation.

How it compares with hf-mem, which the reference names for choosing a flavor: hf-mem
(`uvx hf-mem --model-id <id> --experimental`) estimates *inference* memory. It reads each
tensor's dtype and shape from the Safetensors (or GGUF) headers on the Hub with HTTP range
requests, so its weight bytes are exact for the stored checkpoint, and with `--experimental` it
adds the KV cache of `...ForCausalLM` models for a `--max-model-len` and `--batch-size`. It has no
gradients, optimizer state or activations: a model hf-mem puts at 16 GB needs several times that
to fine-tune in full. This estimate is for *training*: the parameter count comes from
`config.json`'s architecture (within a few percent for the usual decoder and encoder families; a
count read from Safetensors metadata can be passed instead), priced at the dtype the recipe trains
in rather than the dtype stored, and it adds the optimizer, activation and logits terms; a training
step keeps no KV cache. Both ignore what the framework allocates on top, which the overhead term
approximates; neither replaces a first real run (its peak memory is in the job's metrics).

Multi-GPU flavors: the recipes use every GPU of their flavor, and the estimate is of the busiest
GPU, which must fit one GPU's memory (`per_gpu_gb`). LoRA splits the model across the GPUs by
layers (`device_map="auto"`): the weights, the adapters' state and the layer inputs kept for the
backward pass divide by the count, while the layer being recomputed and the logits sit on one GPU.
A full fine-tune is sharded with FSDP (FULL_SHARD, launched through accelerate): weights,
gradients and AdamW state divide by the count; each GPU trains its own batch, so activations and
logits do not; and each holds the gathered weights of the unit at work (the embeddings and LM
head of the root unit, plus two layers: the one running and the one prefetched). One CUDA context
per GPU.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

GB = 1e9  # flavors are sold in GB of GPU memory; estimates are printed in the same unit
CUDA_CONTEXT_BYTES = 1.0 * GB
FRAGMENTATION = 0.08
DTYPE_BYTES = {"float32": 4.0, "bfloat16": 2.0, "float16": 2.0, "int8": 1.0, "4bit": 0.5625}
"""Bytes per parameter; 4-bit is NF4 (0.5) plus its block scales (double-quantized, ~0.06)."""
LORA_BYTES_PER_PARAM = 16.0  # fp32 weight + fp32 gradient + two fp32 AdamW moments
SEQUENCES_PER_EXAMPLE = {"sft": 1, "dpo": 2, "kto": 2, "pair": 2, "triplet": 3, "scored_pair": 2}

# GPUs of the HF Jobs flavors: (count, model, total GB). The same numbers as the console's price
# table (reference §3, `hf jobs hardware` read 2026-06-27); a test keeps the two equal.
FLAVOR_GPUS: dict[str, tuple[int, str, int]] = {
    "t4-small": (1, "T4", 16),
    "t4-medium": (1, "T4", 16),
    "l4x1": (1, "L4", 24),
    "a10g-small": (1, "A10G", 24),
    "a10g-large": (1, "A10G", 24),
    "l40sx1": (1, "L40S", 48),
    "a100-large": (1, "A100", 80),
    "rtx-pro-6000": (1, "RTX PRO 6000", 96),
    "a10g-largex2": (2, "A10G", 48),
    "l4x4": (4, "L4", 96),
    "a10g-largex4": (4, "A10G", 96),
    "h200": (1, "H200", 141),
    "l40sx4": (4, "L40S", 192),
    "a100x4": (4, "A100", 320),
    "h200x2": (2, "H200", 282),
    "rtx-pro-6000x4": (4, "RTX PRO 6000", 384),
    "a100x8": (8, "A100", 640),
    "h200x4": (4, "H200", 564),
    "rtx-pro-6000x8": (8, "RTX PRO 6000", 768),
    "l40sx8": (8, "L40S", 384),
    "h200x8": (8, "H200", 1128),
}
NO_BF16_GPUS = ("T4",)  # Turing: fp16 only


class ConfigError(ValueError):
    """A `config.json` this estimate cannot read a transformer's shape from."""


def per_gpu_gb(flavor: str) -> float:
    """GB on one GPU of a flavor (KeyError for an unknown or CPU flavor)."""
    count, _, total = FLAVOR_GPUS[flavor]
    return total / count


def has_bf16(flavor: str) -> bool:
    return FLAVOR_GPUS[flavor][1] not in NO_BF16_GPUS


def dtype_for(bf16: bool, method: str, *, unsloth: bool = False) -> str:
    """The dtype a recipe loads the weights in on a GPU with or without bf16
    (`jobkit.run.pick_precision`'s rule): bf16 where the GPU has it; without (T4), fp16 for LoRA
    (the adapters stay fp32) and fp32 for a full fine-tune (AMP keeps fp32 master weights); 4-bit
    for LoRA with Unsloth."""
    if unsloth and method == "lora":
        return "4bit"
    if not bf16:
        return "float32" if method == "full" else "float16"
    return "bfloat16"


def training_dtype(flavor: str | None, method: str, *, unsloth: bool = False) -> str:
    """:func:`dtype_for` on a flavor's GPU (an unknown flavor or none counts as one with bf16)."""
    bf16 = flavor is None or flavor not in FLAVOR_GPUS or has_bf16(flavor)
    return dtype_for(bf16, method, unsloth=unsloth)


# ----------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class ModelShape:
    """What the estimate needs to know about a model's architecture."""

    params: int
    hidden: int
    layers: int
    intermediate: int
    vocab: int
    heads: int
    kv_heads: int
    head_dim: int
    gated_mlp: bool = True
    experts: int = 1
    experts_per_token: int = 1
    embedding_params: int = 0
    """Embeddings and LM head: kept 16-bit by a 4-bit loader."""
    source: str = "config.json"

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def billions(self) -> float:
        return self.params / 1e9

    def linear_shapes(self) -> list[tuple[int, int]]:
        """(in, out) of the linear layers of one transformer block: what LoRA "all-linear" adapts."""
        q = self.heads * self.head_dim
        shapes = [(self.hidden, q), (self.hidden, self.kv_dim), (self.hidden, self.kv_dim), (q, self.hidden)]
        mlp = [(self.hidden, self.intermediate)] * (2 if self.gated_mlp else 1) + [(self.intermediate, self.hidden)]
        return shapes + mlp * self.experts

    def lora_params(self, r: int) -> int:
        return self.layers * sum(r * (i + o) for i, o in self.linear_shapes())

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *, params: int | None = None) -> ModelShape:
        """The shape of a transformers `config.json` (decoder LMs, BERT-style encoders, and the
        text part of a multimodal config). `params` overrides the count computed from it."""
        cfg: Mapping[str, Any] = config
        if isinstance(cfg.get("text_config"), Mapping):
            cfg = {**cfg, **cfg["text_config"]}

        def first(*names: str, default: Any = None) -> Any:
            for name in names:
                value = cfg.get(name)
                if value is not None:
                    return value
            return default

        hidden = first("hidden_size", "n_embd", "d_model", "dim")
        layers = first("num_hidden_layers", "n_layer", "num_layers", "n_layers")
        vocab = first("vocab_size")
        if not all(isinstance(v, int) and v > 0 for v in (hidden, layers, vocab)):
            raise ConfigError("config.json has no hidden_size / num_hidden_layers / vocab_size")
        heads = int(first("num_attention_heads", "n_head", "num_heads", default=max(1, hidden // 64)))
        kv_heads = int(first("num_key_value_heads", "num_kv_heads", default=heads))
        head_dim = int(first("head_dim", default=hidden // heads))
        experts = int(first("num_local_experts", "num_experts", "n_routed_experts", default=1) or 1)
        per_token = int(first("num_experts_per_tok", "moe_topk", default=1) or 1)
        if experts > 1:
            intermediate = int(first("moe_intermediate_size", "intermediate_size", default=4 * hidden))
        else:
            intermediate = int(first("intermediate_size", "n_inner", "ffn_dim", default=4 * hidden) or 4 * hidden)
        act = str(first("hidden_act", "activation_function", default="")).lower()
        model_type = str(first("model_type", default="")).lower()
        plain = model_type in ("bert", "roberta", "xlm-roberta", "distilbert", "gpt2", "electra", "mpnet", "opt")
        gated = not plain and (act in ("silu", "swish", "swiglu", "geglu", "gelu_pytorch_tanh") or not act)
        tied = bool(first("tie_word_embeddings", default=plain))
        embed = vocab * hidden * (1 if tied else 2)
        shape = cls(
            params=0,
            hidden=hidden,
            layers=layers,
            intermediate=intermediate,
            vocab=vocab,
            heads=heads,
            kv_heads=kv_heads,
            head_dim=head_dim,
            gated_mlp=gated,
            experts=experts,
            experts_per_token=min(per_token, experts),
            embedding_params=embed,
        )
        block = sum(i * o for i, o in shape.linear_shapes()) + (hidden * experts if experts > 1 else 0) + 2 * hidden
        positions = int(first("max_position_embeddings", default=0)) * hidden if plain else 0
        counted = embed + positions + layers * block + hidden
        return _replace(shape, params=int(params) if params else counted)

    @classmethod
    def from_size(cls, billions: float, vocab: int = 128_256) -> ModelShape:
        """A model known only by its size: the shape of the nearest Llama-family model, scaled.

        Used when no `config.json` is at hand (`console whatif --model-b 8`); the weights are then
        exact for the size given and the activations approximate.
        """
        if not billions > 0:
            raise ConfigError("model size must be positive")
        # (billions, hidden, layers, intermediate, heads, kv heads) of Llama 3.2 1B/3B, 3.1 8B/70B
        # and Llama 2 13B, Code Llama 34B
        families = [
            (1.2, 2048, 16, 8192, 32, 8),
            (3.2, 3072, 28, 8192, 24, 8),
            (8.0, 4096, 32, 14336, 32, 8),
            (13.0, 5120, 40, 13824, 40, 40),
            (34.0, 8192, 48, 22016, 64, 8),
            (70.0, 8192, 80, 28672, 64, 8),
        ]
        b, hidden, layers, inter, heads, kv = min(families, key=lambda f: abs(math.log(f[0] / billions)))
        if billions < 1.2:  # smaller models are narrower, not shallower: scale the width
            scale = math.sqrt(billions / 1.2)
            hidden = max(64, int(hidden * scale) // 64 * 64)
            inter = max(128, int(inter * scale) // 64 * 64)
        return cls(
            params=int(billions * 1e9),
            hidden=hidden,
            layers=layers,
            intermediate=inter,
            vocab=vocab,
            heads=max(1, hidden // 64) if billions < 1.2 else heads,
            kv_heads=max(1, min(kv, hidden // 64)),
            head_dim=64 if billions < 1.2 else hidden // heads,
            embedding_params=min(int(billions * 1e9) // 4, vocab * hidden),
            source=f"size only ({billions:g}B; shape of a {b:g}B Llama-family model)",
        )


def _replace(shape: ModelShape, **changes: Any) -> ModelShape:
    from dataclasses import replace

    return replace(shape, **changes)


# ----------------------------------------------------------------------------- the real size

COUNTED_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3")
"""The dense decoder families whose parameter count is computed from `config.json`'s fields
(:func:`counted_params`); any other model's size is unknown to the size check."""
TOY_MAX_PARAMS = 50_000_000
"""A base under this many parameters (the demo's tiny Llama, test models) is a stand-in: the run
rehearses the size its `model_b` declares, which is costed as declared and not checked."""
SIZE_TOLERANCE = 0.10
SIZE_TOLERANCE_B = 0.25
"""A declared size agrees with a model's real count within 10% of that count or 0.25B, whichever
is more: models are sold by rounded sizes (Llama 2 "7B" has 6.74B parameters, Qwen2.5 "7B" 7.62B,
Llama 3.2 "1B" 1.24B), while a 13B model declared 7B is off by 86%."""
LORA_REQUIRED_ABOVE_B = 7.0
"""Reference §2: "The skill mandates LoRA for models >7B" (the console's `prices` holds the same
number; a test keeps the two equal)."""


def counted_params(config: Mapping[str, Any] | None) -> int | None:
    """The parameter count of a Llama, Mistral or Qwen2/Qwen3-shaped `config.json`, from its
    fields: embeddings (and an untied LM head), per layer the attention projections (grouped
    key/value heads, Qwen2's q/k/v biases, Qwen3's q/k norms), the gated MLP and two norms, and
    the final norm. None (unknown) for any other architecture, a mixture of experts, or a config
    missing a field."""
    if not isinstance(config, Mapping) or str(config.get("model_type", "")).lower() not in COUNTED_MODEL_TYPES:
        return None
    if any(config.get(k) for k in ("num_local_experts", "num_experts", "n_routed_experts")):
        return None

    def count(name: str) -> int | None:
        value = config.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    hidden, layers = count("hidden_size"), count("num_hidden_layers")
    inter, vocab, heads = count("intermediate_size"), count("vocab_size"), count("num_attention_heads")
    if hidden is None or layers is None or inter is None or vocab is None or heads is None:
        return None
    kv = count("num_key_value_heads") or heads
    head_dim = count("head_dim") or hidden // heads
    q, kv_dim = heads * head_dim, kv * head_dim
    attention = 2 * hidden * q + 2 * hidden * kv_dim
    model_type = str(config["model_type"]).lower()
    if model_type == "qwen2" or config.get("attention_bias") is True:
        attention += q + 2 * kv_dim + (hidden if config.get("attention_bias") is True else 0)
    if model_type == "qwen3":
        attention += 2 * head_dim
    mlp = 3 * hidden * inter + ((2 * inter + hidden) if config.get("mlp_bias") is True else 0)
    embeddings = vocab * hidden * (1 if config.get("tie_word_embeddings") is True else 2)
    return embeddings + layers * (attention + mlp + 2 * hidden) + hidden


def size_agrees(declared_b: float, params: int) -> bool:
    """Whether a declared size (billions) names a model of `params` parameters (`SIZE_TOLERANCE`)."""
    real = params / 1e9
    return abs(real - declared_b) <= max(SIZE_TOLERANCE * real, SIZE_TOLERANCE_B)


def size_problem(declared_b: float | None, params: int | None, *, base: str, declared_as: str,
                 full: bool = False) -> str | None:
    """Why a run of `base` cannot go as declared, with both numbers, or None: its declared size
    disagrees with the real count, or it is a full fine-tune of a model over 7B by its real count
    (a size that agrees with the count, 7.62B for a "7B", is the size the rule reads). Unknown
    counts and toy bases (`TOY_MAX_PARAMS`) are not checked."""
    if params is None or params < TOY_MAX_PARAMS:
        return None
    real = params / 1e9
    rule = (f"the reference mandates LoRA for models over {LORA_REQUIRED_ABOVE_B:g}B (§2), so a full "
            f"fine-tune of it is refused")
    over = full and real > LORA_REQUIRED_ABOVE_B and not size_agrees(LORA_REQUIRED_ABOVE_B, params)
    if declared_b is not None and not size_agrees(declared_b, params):
        return (f"{base} has {real:.2f}B parameters by its config.json, but {declared_as} declares "
                f"{declared_b:g}B: the cost, the GPU-memory fit and the LoRA-above-"
                f"{LORA_REQUIRED_ABOVE_B:g}B rule read the size, so declare {declared_as} = {real:.3g}"
                + (f" ({rule})" if over else ""))
    if over:
        return f"{base} has {real:.2f}B parameters by its config.json: {rule}; train it with LoRA"
    return None


# ----------------------------------------------------------------------------- the estimate


@dataclass(frozen=True)
class Setup:
    """How the run trains: what the recipe's arguments decide."""

    method: str = "lora"  # "lora" or "full"
    dtype: str = "bfloat16"  # of the weights: float32 | bfloat16 | float16 | int8 | 4bit
    batch_size: int = 4
    seq_len: int = 1024
    sequences_per_example: int = 1
    lora_r: int = 16
    lora_dropout: bool = True
    gradient_checkpointing: bool = True
    lm_head: bool = True  # logits over the vocabulary (causal LMs, SPLADE's MLM head)
    unsloth: bool = False
    gpus: int = 1
    """GPUs the run uses: LoRA splits the layers across them, a full fine-tune shards with FSDP."""


@dataclass(frozen=True)
class Estimate:
    """GPU memory of one training run, in bytes, by part."""

    shape: ModelShape
    setup: Setup
    weights: float
    trainable_params: int
    optimizer: float  # trainable weights' gradients and AdamW moments (LoRA: and their weights)
    activations: float
    logits: float
    overhead: float
    parts: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return self.weights + self.optimizer + self.activations + self.logits + self.overhead

    @property
    def total_gb(self) -> float:
        return self.total / GB

    def fits(self, gpu_gb: float) -> bool:
        return self.total <= gpu_gb * GB

    def breakdown(self) -> str:
        """`weights 16.1 + LoRA 0.7 + activations 2.2 + logits 2.1 + overhead 2.7 = 23.7 GB`."""
        opt = "LoRA" if self.setup.method == "lora" else "gradients+AdamW"
        items = [
            ("weights", self.weights),
            (opt, self.optimizer),
            ("activations", self.activations),
            ("logits", self.logits),
            ("overhead", self.overhead),
        ]
        text = " + ".join(f"{name} {value / GB:.1f}" for name, value in items if value >= 0.05 * GB)
        return f"{text} = {self.total_gb:.1f} GB"

    def describe(self) -> str:
        """One line: what was estimated, and how much it needs."""
        s = self.setup
        what = "full fine-tune" if s.method == "full" else f"LoRA r={s.lora_r}"
        ckpt = ", gradient checkpointing" if s.gradient_checkpointing else ""
        return (
            f"{self.shape.billions:.2f}B params, {what}, {s.dtype}, batch {s.batch_size} x "
            f"{s.seq_len} tokens{' x ' + str(s.sequences_per_example) if s.sequences_per_example > 1 else ''}"
            f"{ckpt}{', Unsloth' if s.unsloth else ''}{self.spread()}: ~{self.total_gb:.1f} GB"
            f"{' per GPU' if s.gpus > 1 else ''} ({self.breakdown()})"
        )

    def spread(self) -> str:
        """How the run uses a multi-GPU flavor, in words (empty on one GPU)."""
        n = self.setup.gpus
        if n <= 1:
            return ""
        if self.setup.method == "full":
            return f", sharded over {n} GPUs (FSDP)"
        return f", layers split over {n} GPUs (device_map=auto)"

    def as_dict(self) -> dict[str, Any]:
        return {
            "params": self.shape.params,
            "shape_source": self.shape.source,
            "method": self.setup.method,
            "dtype": self.setup.dtype,
            "batch_size": self.setup.batch_size,
            "seq_len": self.setup.seq_len,
            "gradient_checkpointing": self.setup.gradient_checkpointing,
            "unsloth": self.setup.unsloth,
            "gpus": self.setup.gpus,
            "sharding": ("fsdp" if self.setup.method == "full" else "layers") if self.setup.gpus > 1 else None,
            "trainable_params": self.trainable_params,
            "weights_gb": round(self.weights / GB, 3),
            "optimizer_gb": round(self.optimizer / GB, 3),
            "activations_gb": round(self.activations / GB, 3),
            "logits_gb": round(self.logits / GB, 3),
            "overhead_gb": round(self.overhead / GB, 3),
            "total_gb": round(self.total_gb, 3),
        }


def estimate(shape: ModelShape, setup: Setup) -> Estimate:
    """The GPU memory a run needs (see the module docstring for each term)."""
    if setup.method not in ("lora", "full"):
        raise ValueError(f"method must be lora or full, got {setup.method!r}")
    if setup.dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPE_BYTES)}, got {setup.dtype!r}")
    w = DTYPE_BYTES[setup.dtype]
    if w < 2:  # quantized: the embeddings and the LM head stay 16-bit
        body = max(0, shape.params - shape.embedding_params)
        weights = body * w + shape.embedding_params * 2.0
    else:
        weights = shape.params * w
    if setup.method == "lora":
        trainable = shape.lora_params(setup.lora_r)
        optimizer = trainable * LORA_BYTES_PER_PARAM
    else:
        trainable = shape.params
        optimizer = shape.params * max(w, 2.0) * 3  # gradient + two AdamW moments, in the weights' dtype

    act_bytes = 4.0 if setup.dtype == "float32" else 2.0
    tokens = setup.batch_size * setup.seq_len * setup.sequences_per_example
    h, inter = shape.hidden, shape.intermediate * shape.experts_per_token
    per_layer = 6 * h + 2 * shape.kv_dim + (4 if shape.gated_mlp else 2) * inter
    if setup.method == "lora" and setup.lora_dropout:
        # PEFT applies dropout to each adapted layer's input and keeps that copy for backward
        per_layer += sum(i for i, _ in shape.linear_shapes()[: 4 + (3 if shape.gated_mlp else 2)])
    n = max(1, int(setup.gpus))
    if setup.gradient_checkpointing:
        kept_inputs = 0 if setup.unsloth else shape.layers * h  # Unsloth offloads them to CPU RAM
        if setup.method == "lora":  # split by layers: each GPU keeps the inputs of its own layers
            kept_inputs /= n
        activations = tokens * (kept_inputs + per_layer) * act_bytes
    else:
        layers = shape.layers / n if setup.method == "lora" else shape.layers
        activations = tokens * layers * per_layer * act_bytes
    logits = 0.0
    if setup.lm_head:
        logits = tokens * shape.vocab * (act_bytes + 8.0)
        if setup.unsloth:
            logits /= 2
    if n > 1:
        weights /= n
        optimizer /= n
        if setup.method == "full":  # FSDP gathers the unit at work: the root's embeddings, two layers
            layer = sum(i * o for i, o in shape.linear_shapes()) + 2 * h
            weights += (shape.embedding_params + 2 * layer) * w
    overhead = CUDA_CONTEXT_BYTES + FRAGMENTATION * (weights + optimizer + activations + logits)
    return Estimate(
        shape=shape,
        setup=setup,
        weights=weights,
        trainable_params=trainable,
        optimizer=optimizer,
        activations=activations,
        logits=logits,
        overhead=overhead,
    )


def gpu_count(flavor: str | None) -> int:
    """GPUs of a flavor (1 for an unknown one or none)."""
    return FLAVOR_GPUS[flavor][0] if flavor in FLAVOR_GPUS else 1


def smallest_fitting(est_for: Any, flavors: Mapping[str, float]) -> tuple[str, Estimate] | None:
    """The flavor with the least GPU memory in all (then per GPU) whose estimate fits, given
    `est_for(flavor)` -> Estimate (the dtype and the GPU count depend on the flavor) and
    {flavor: GB per GPU}; None when none does."""
    def total(item: tuple[str, float]) -> tuple[float, float, str]:
        return (item[1] * gpu_count(item[0]), item[1], item[0])

    for name, gb in sorted(flavors.items(), key=total):
        est = est_for(name)
        if est.fits(gb):
            return name, est
    return None
