"""The training kinds, defined once: what each is called, the recipe that trains it, the kind of
data it reads (what its dataset is checked as), and which arguments its recipe takes. Everything that lists kinds (the
fleet file, the submit form, the what-if, the memory estimate and the costs) reads them here.

Standard library only: the CLI's parser reads it at start-up.
"""

from __future__ import annotations

import re
from typing import Any

TRAINING_KINDS = ("sft", "dpo", "kto", "grpo", "reward", "embedding", "builder")
"""Kinds that train (a fleet row each, costed by the heuristic); `validate` is a dataset check."""
TENANT_KINDS = tuple(k for k in TRAINING_KINDS if k != "builder")
"""What a tenant's runs may train (a fleet file's `kind`, the what-if's): every training kind but
the builder model, which is its own table."""
KINDS = (*TRAINING_KINDS, "validate")
SCRIPTS = {
    "sft": "sft_lora.py",
    "dpo": "dpo_lora.py",
    "kto": "kto_lora.py",
    "grpo": "grpo_lora.py",
    "reward": "reward_lora.py",
    "embedding": "sentence_transformer.py",
    "builder": "sft_lora.py",
    "validate": "validate_dataset.py",
}
KIND_LABELS = {
    "sft": "SFT + LoRA",
    "dpo": "DPO + LoRA",
    "kto": "KTO + LoRA",
    "grpo": "GRPO + LoRA",
    "reward": "reward model",
    "embedding": "embeddings",
    "builder": "builder model",
    "validate": "dataset check",
}
"""Each kind in words, for lists and forms."""
KIND_SHORT = {"validate": "val", "reward": "rwd", "embedding": "emb", "builder": "bld"}
"""A kind in at most four letters (sft, dpo, kto and grpo are their own), for the tables' narrow
Kind columns."""
DATA_KIND = {"sft": "sft", "builder": "sft", "dpo": "dpo", "kto": "kto", "grpo": "grpo", "reward": "reward",
             "embedding": "embedding"}
"""The kind of data a kind's runs read: what its dataset is checked as, and read as by an
evaluation (the `--method` of `validate_dataset.py` and `evaluate_adapter.py`)."""
LORA_KINDS = ("sft", "dpo", "kto", "grpo", "reward", "builder")
"""Kinds whose script takes the LoRA arguments."""
UNSLOTH_KINDS = ("sft", "dpo", "kto", "builder")
"""Kinds whose script loads its base with Unsloth when asked (GRPO samples completions and a reward
model is a sequence classifier: neither goes through Unsloth's loader)."""
GRPO_GENERATIONS = 4
"""Completions a GRPO run samples per prompt (`grpo_lora.py --num-generations`'s default)."""
GRPO_WORK_PER_COMPLETION = 2.0
"""SFT examples' worth of GPU time per GRPO completion: generating it, then training on it (the
cost model's `RunSpec.work`)."""
REWARDS = ("exact", "numeric", "format")
"""The built-in GRPO rewards (`training/jobkit/rewards.py`); a reward may also be a Python module
shipped with the tenant's data (`name.py`)."""


def rewards_problem(rewards: Any, kind: str = "grpo") -> str | None:
    """Why `rewards` (comma-separated) cannot be a GRPO run's rewards, or None: a built-in
    (:data:`REWARDS`) or a module file name beside the dataset (`name.py`), each once."""
    if kind != "grpo":
        return "rewards are for kind grpo"
    names = [n.strip() for n in str(rewards).split(",")]
    if not names or not all(names):
        return f"rewards {rewards!r}: name one or more of {', '.join(REWARDS)} or a module name.py"
    for name in names:
        module = name.endswith(".py") and re.fullmatch(r"[A-Za-z_][\w-]*\.py", name)
        if name not in REWARDS and not module:
            return (f"reward {name!r} must be one of {', '.join(REWARDS)} or a Python module shipped with the "
                    "dataset (a file name like rewards.py)")
    if len(set(names)) != len(names):
        return f"rewards {rewards!r} names a reward twice"
    return None
