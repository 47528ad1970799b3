"""The base model's real size: its `config.json` on the backend's Hub, read before a run is sent.

A run declares its base model's size (`model_b`): the cost model prices it, the GPU-memory fit
sizes it, and the reference's rule ("The skill mandates LoRA for models >7B", §2) reads it. A size
declared by hand can be wrong, so before anything is sent the console reads the base's
`config.json` from the Hub the run loads it from (the embedded server's local Hub or
huggingface.co, through the backend's `HfApi`; no weights), counts its parameters from the
config's fields (`jobkit.vram.counted_params`: Llama, Mistral and Qwen2/Qwen3-shaped configs;
any other is "unknown" and the declared size stands), and refuses a run

* whose declared size disagrees with the count (both numbers in the message),
* that is a full fine-tune of a model over 7B by its count,
* that does not fit its flavor by the model's real shape (its `config.json`, not a size alone).

The recipe checks the same in the job (`--model-b`, `jobkit.recipe.check_size`) with the same
function. A base under 50M parameters (the demo's tiny Llama) is a stand-in: its runs rehearse
the declared size, which is not checked.

Talks to the backend only through the `HfApi` it is given; no UI.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from console import vram
from console.prices import LORA_REQUIRED_ABOVE_B, PriceBook, shipped_price_book

CONFIG_TIMEOUT_S = 10.0
"""How long reading a base's config.json may take."""


@dataclass(frozen=True)
class BaseSize:
    """What the Hub says of a base model's size."""

    base_model: str
    params: int | None
    """Counted from its config.json; None when unknown (no config read, or another architecture)."""
    config: dict[str, Any] | None = None
    why_unknown: str = ""

    @property
    def billions(self) -> float | None:
        return None if self.params is None else self.params / 1e9

    def describe(self) -> str:
        if self.params is not None:
            return f"{self.base_model}: {self.params / 1e9:.2f}B parameters by its config.json"
        return f"{self.base_model}: size unknown ({self.why_unknown})"


def full_fine_tune_problem(model_b: float) -> str | None:
    """Why a full fine-tune of a model of `model_b` billions is refused (reference §2), or None."""
    if model_b > LORA_REQUIRED_ABOVE_B:
        return (f"a full fine-tune of a {model_b:g}B model is refused: the reference mandates LoRA for models "
                f"over {LORA_REQUIRED_ABOVE_B:g}B (§2)")
    return None


def read_config(api: Any, base_model: str, *, timeout: float = CONFIG_TIMEOUT_S) -> tuple[dict[str, Any] | None, str]:
    """(the base's config.json, "") from the Hub `api` points at, or (None, why not)."""
    from huggingface_hub.errors import EntryNotFoundError, GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    try:
        with tempfile.TemporaryDirectory(prefix="console-config-") as folder:
            path = api.hf_hub_download(base_model, "config.json", local_dir=folder, etag_timeout=timeout)
            raw = Path(path).read_bytes()
    except GatedRepoError:
        return None, "gated: its config.json is behind the model's terms"
    except RepositoryNotFoundError:
        return None, "no such model repo"
    except EntryNotFoundError:
        return None, "no config.json"
    except HfHubHTTPError as exc:
        return None, f"the Hub answered {getattr(getattr(exc, 'response', None), 'status_code', '?')}"
    except Exception as exc:  # noqa: BLE001 - offline, refused, timed out
        return None, f"the Hub did not answer ({type(exc).__name__})"
    if len(raw) > vram.MODEL_CONFIG_MAX_BYTES:
        return None, "config.json is too large to be one"
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError:
        return None, "config.json is not JSON"
    return (data, "") if isinstance(data, dict) else (None, "config.json is not a JSON object")


def base_size(api: Any, base_model: str, *, timeout: float = CONFIG_TIMEOUT_S) -> BaseSize:
    """The base's size by its config.json on the Hub `api` points at."""
    config, why = read_config(api, base_model, timeout=timeout)
    if config is None:
        return BaseSize(base_model, None, None, why)
    params = vram.estimator().counted_params(config)
    if params is None:
        kind = str(config.get("model_type") or "no model_type")
        return BaseSize(base_model, None, config, f"{kind}: not a Llama, Mistral or Qwen config")
    return BaseSize(base_model, params, config)


def size_problem(req: Any, size: BaseSize, prices: PriceBook | None = None) -> str | None:
    """Why a training request cannot go on its base's real size, or None: a declared size that
    disagrees with the count (both numbers), a full fine-tune over 7B by the count, or a flavor the
    real shape does not fit (`jobkit.vram.size_problem`, `console.vram.refusal`)."""
    est = vram.estimator()
    if size.params is not None:
        why = est.size_problem(req.model_b, size.params, base=f"base_model {req.base_model}",
                               declared_as="model_b", full=bool(req.full))
        if why:
            return f"{why}; nothing submitted"
    if size.config is None or size.params is None or size.params < est.TOY_MAX_PARAMS:
        return None
    prices = prices or shipped_price_book()
    if req.flavor not in prices or not prices.get(req.flavor).is_gpu:
        return None
    try:
        why = vram.refusal(replace(req.run_shape(), config=size.config), req.flavor, prices)
    except vram.FitError:
        return None
    return f"{why} (by the config.json of {req.base_model})" if why else None
