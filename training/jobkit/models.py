"""The models the recipes train: the offline tiny bases, Hub bases, and Unsloth's loader.

* `tiny-random` (:data:`TINY_MODEL`) builds a model that exists nowhere else, so a real run needs
  no network: a tiny `LlamaForCausalLM` (hidden 64, 2 layers) with a byte-level BPE tokenizer
  trained on the dataset itself for the TRL recipes (:func:`build_tiny_causal_lm`), a tiny BERT
  (hidden 64, 2 layers, with its masked-LM head, so one base serves the bi-, cross- and sparse
  encoders) with a WordPiece tokenizer for sentence-transformers (:func:`build_tiny_encoder`).
  The recipes save it beside the trained weights: the weights are useless without it.
* :func:`check_base_model` is the first check of a Hub base (its model info, a few seconds): a
  base that does not exist, or a Hub that cannot be reached, is refused with its own reason
  before the dataset is read or anything is downloaded.
* :func:`load_causal_lm` loads a Hub base with its tokenizer (a chat template when the data needs
  one and the tokenizer has none).
* :func:`load_unsloth` loads a base through Unsloth's `FastLanguageModel` (4-bit for LoRA, its
  own gradient checkpointing). :func:`check_unsloth_installed` and :func:`require_cuda` are the
  refusals of `--unsloth` where it cannot run: a run that asked for Unsloth never trains without
  it (its timeout and its memory estimate assumed it).

Standard library only at import time; each function imports what it needs.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from jobkit.run import Refusal

TINY_MODEL = "tiny-random"
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
TINY_CAUSAL_CONFIG = dict(
    model_type="llama",
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=4,
    hidden_act="silu",
    tie_word_embeddings=True,
)
"""The tiny Llama's shape (its vocabulary comes from the dataset), for the memory estimate too."""
TINY_ENCODER_CONFIG = dict(
    model_type="bert",
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    hidden_act="gelu",
)
UNSLOTH_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def row_texts(row: dict[str, Any]) -> list[str]:
    """Plain text of a normalized row (to train an offline tokenizer): strings and chat turns;
    labels and scores are not text."""
    out: list[str] = []
    for value in row.values():
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list):
            out.extend(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>" for m in value)
    return out


def build_tiny_causal_lm(
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
    shape = {k: v for k, v in TINY_CAUSAL_CONFIG.items() if k not in ("model_type", "hidden_act")}
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        max_position_embeddings=max(max_length, 128),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **shape,
    )
    model = LlamaForCausalLM(config)
    model.name_or_path = name_or_path
    return model, tokenizer


def build_tiny_encoder(texts: Iterable[str], max_length: int, seed: int, folder: Path) -> str:
    """A tiny BERT with its masked-LM head and a WordPiece tokenizer trained on `texts`, saved in
    `folder` (returned as a string): sentence-transformers loads it as a bi-encoder (mean pooling),
    a cross-encoder (a new one-logit head) or a SPLADE sparse encoder (the MLM head)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=2000, special_tokens=specials, show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=max_length,
    )
    torch.manual_seed(seed)
    shape = {k: v for k, v in TINY_ENCODER_CONFIG.items() if k != "model_type"}
    config = BertConfig(
        vocab_size=len(tokenizer),
        max_position_embeddings=max(max_length, 128),
        pad_token_id=tokenizer.pad_token_id,
        **shape,
    )
    folder.mkdir(parents=True, exist_ok=True)
    BertForMaskedLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


BASE_MODEL_CHECK_TIMEOUT_S = 10.0
"""How long the base model's model-info request may take (loading it later retries for a minute)."""


def check_base_model(name: str, token: str | None = None, *, timeout: float = BASE_MODEL_CHECK_TIMEOUT_S) -> str:
    """Refuse a base that cannot be loaded, before anything else is read or downloaded: a local
    folder that is not there (`base_model_not_found`), a Hub id the Hub does not know (or this
    token cannot see: `base_model_not_found`), a Hub that does not answer (`base_model_unreachable`,
    unless the base's `config.json` is in the local cache). Returns how it was checked, in words.

    `tiny-random` is built on the spot, and with `HF_HUB_OFFLINE` set a base loads from the cache
    only: neither asks the Hub."""
    if name == TINY_MODEL:
        return "offline tiny base"
    path = Path(name).expanduser()
    if path.is_dir():
        return f"local folder {path}"
    if name.startswith(("/", "./", "../", "~")):
        raise Refusal("base_model_not_found", f"--base-model {name}: no such folder")
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return "HF_HUB_OFFLINE: from the local cache"
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    try:
        HfApi(token=token or None).model_info(name, timeout=timeout)
    except GatedRepoError:
        return "gated on the Hub (the token's account must have accepted its terms)"
    except RepositoryNotFoundError:
        raise Refusal(
            "base_model_not_found",
            f"--base-model {name} does not exist on the Hub (or is private and HF_TOKEN cannot see it): "
            "name an existing model repo (org/name)",
        ) from None
    except HfHubHTTPError as e:
        status = getattr(getattr(e, "response", None), "status_code", "?")
        first = (str(e).strip().splitlines() or ["?"])[0]
        raise Refusal("base_model_unreachable", f"--base-model {name}: the Hub answered {status} ({first})") from None
    except Exception as e:  # noqa: BLE001 - connection refused, DNS, timeout: the Hub is not there
        from huggingface_hub import try_to_load_from_cache

        if isinstance(try_to_load_from_cache(name, "config.json"), str):
            return "the Hub did not answer: from the local cache"
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise Refusal(
            "base_model_unreachable",
            f"--base-model {name} could not be checked: the Hub did not answer within {timeout:g} s "
            f"({type(e).__name__}: {first[:200]}) and the model is not in the local cache",
        ) from None
    return "found on the Hub"


def load_causal_lm(name: str, dtype: Any, *, needs_chat_template: bool, **placement: Any) -> tuple[Any, Any]:
    """A Hub base and its tokenizer (pad = eos when it has none; ChatML when the rows are chat
    turns and the tokenizer has no template); `placement`: `device_map="auto"` over several GPUs."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(name)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if needs_chat_template and not getattr(tokenizer, "chat_template", None):
        tokenizer.chat_template = CHATML_TEMPLATE
    try:
        model = AutoModelForCausalLM.from_pretrained(name, dtype=dtype, **placement)
    except TypeError:  # transformers < 4.56 spells it torch_dtype
        model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=dtype, **placement)
    return model, tokenizer


# ----------------------------------------------------------------------------- Unsloth


UNSLOTH_WHY = "a run that asked for Unsloth never trains without it: its timeout and memory estimate assumed it"


def check_unsloth_installed() -> None:
    """`--unsloth` without the package: refused before torch is imported (find_spec imports nothing)."""
    if importlib.util.find_spec("unsloth") is None:
        raise Refusal(
            "unsloth_unavailable",
            "--unsloth needs the unsloth package, which is not installed (on HF Jobs run the script "
            f"with `uv run --with unsloth`, on a CUDA GPU); {UNSLOTH_WHY}",
        )


def require_cuda(cuda_available: bool) -> None:
    """`--unsloth` on a machine without a CUDA GPU (Unsloth's kernels need one): refused."""
    if not cuda_available:
        raise Refusal(
            "unsloth_unavailable",
            f"--unsloth needs a CUDA GPU and this machine has none; {UNSLOTH_WHY}",
        )


def load_unsloth(
    name: str,
    *,
    max_length: int,
    full: bool,
    lora_r: int,
    lora_alpha: int,
    lora_dropout: float,
    target_modules: str | list[str],
    seed: int,
) -> tuple[Any, Any]:
    """A base through Unsloth's FastLanguageModel: 4-bit with a LoRA adapter of its own (its
    gradient checkpointing), or the whole model for a full fine-tune. The trainer then gets no
    peft_config: the model already carries its adapter."""
    from unsloth import FastLanguageModel  # imported before trl, so its patches apply

    model, tokenizer = FastLanguageModel.from_pretrained(
        model_name=name,
        max_seq_length=max_length,
        dtype=None,  # bf16 where the GPU has it, fp16 elsewhere
        load_in_4bit=not full,
        full_finetuning=full,
    )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not full:
        targets = UNSLOTH_TARGETS if target_modules == "all-linear" else target_modules
        model = FastLanguageModel.get_peft_model(
            model,
            r=lora_r,
            lora_alpha=lora_alpha,
            lora_dropout=lora_dropout,
            target_modules=targets,
            use_gradient_checkpointing="unsloth",
            random_state=seed,
        )
    return model, tokenizer
