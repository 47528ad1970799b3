"""What one run is (:class:`TrainingRequest`), the defaults a request is given (destination,
Trackio, datasets cache) and what refuses it (:func:`refusal`): the checks a submission goes
through before anything is built or sent.

No UI, no network.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from console import vram
from console.basesize import full_fine_tune_problem
from console.costs import RunSpec
from console.inputs import NAME_RULE, bucket_id_problem, is_label_name
from console.kinds import DATA_KIND, KINDS, TRAINING_KINDS, UNSLOTH_KINDS, rewards_problem
from console.prices import PriceBook, shipped_price_book

TINY_BASE_MODEL = "tiny-random"
"""The recipes' offline base: a toy model with random weights, built on the job from the dataset
(`training/jobkit/models.py`). For local runs only: on HF Jobs it would train noise on a paid GPU."""


PREFLIGHT_FLAVOR = "cpu-basic"
# A dataset check reads the file once: minutes on a CPU flavor (~$0.01), whatever the model size.
PREFLIGHT_TIMEOUT_SECONDS = 15 * 60
PROMOTE_POLICIES = ("manual", "on_pass", "on_eval")
"""When a passing run moves its repo's live tag (what serving loads): an engineer does (manual,
the default), the run itself (on_pass), or an evaluation job that scores it against the live
adapter (on_eval: `console.promotion`). The recipes' `--promote`."""
DEFAULT_PROMOTE_MARGIN = 0.01
"""on_eval: the share of the live adapter's evaluation loss a new one must beat it by."""
ENCODERS = ("bi", "cross", "sparse")
"""What an embedding run trains (`sentence_transformer.py --kind`)."""
RECIPE_BATCH_SIZE = {"embedding": 16, "grpo": 8}
"""Examples per optimizer step of each kind's recipe at its defaults (`--batch-size`, one gradient
accumulation step): sentence_transformer.py's 16, grpo_lora.py's 8 completions, the other TRL
recipes' `vram.DEFAULT_BATCH_SIZE`."""
GRPO_SEQ_LEN = 512
"""Tokens of a GRPO sequence in the memory estimate: a prompt of a verifiable task (a question, not
a document) and its completion (grpo_lora.py's 64 tokens), well under the other recipes' 1024."""


@dataclass(frozen=True, slots=True)
class TrainingRequest:
    """What one tenant's run is. Every field is plain data (round-trips through labels + args)."""

    tenant: str
    dataset: str
    base_model: str = TINY_BASE_MODEL
    model_b: float = 1.0
    examples: int = 1000
    epochs: float = 3.0
    flavor: str = "l4x1"
    kind: str = "sft"
    env: str = "dev"
    unsloth: bool = False
    max_steps: int | None = None
    learning_rate: float | None = None
    lora_r: int | None = None
    lora_alpha: int | None = None
    full: bool = False
    """The builder model trained in full (every weight) instead of a LoRA adapter."""
    encoder: str | None = None
    """An embedding run's model: bi | cross | sparse (None: bi)."""
    rewards: str | None = None
    """A GRPO run's rewards, comma-separated (`grpo_lora.py --rewards`; None: the recipe's default)."""
    validates: str | None = None
    """A dataset check's kind of data (`kinds.DATA_KIND` of the run it precedes; None: sft): the
    recipe's `--method`."""
    hub_model_id: str | None = None
    promote: str | None = None
    """The live-tag policy of a run that pushes: on_pass moves it, on_eval leaves it to an
    evaluation job; None leaves it to an engineer (the recipes' `--promote`, default manual)."""
    promote_margin: float | None = None
    """on_eval: the share of the live loss the new adapter must beat (None: DEFAULT_PROMOTE_MARGIN);
    carried by the job's `margin` label to the evaluation the console submits after its PASS."""
    resume_from: str | None = None
    """The run whose last pushed checkpoint this run continues from (the recipes' `--resume-from`)."""
    resume_done: float = 0.0
    """The share of the run that checkpoint already trained (the estimate counts the rest)."""
    run_name: str | None = None
    trackio_project: str | None = None
    trackio_space_id: str | None = None
    datasets_cache: str | None = None
    """A bucket (`org/name`) mounted read-write at /data where the datasets library caches the
    run's Hub dataset (`HF_DATASETS_CACHE=/data/datasets`), so later runs do not download it again."""
    ssh: bool = False
    scheduled: bool = False
    """A scheduled job's template: each run names itself (no --run-name); run=<tenant>-scheduled."""
    timeout_seconds: int | None = None
    """Explicit timeout; None means estimate x buffer."""
    extra_env: dict[str, str] = field(default_factory=dict)
    retry: int = 0
    """How many times a watching console resumes the run by itself after its timeout or an
    infrastructure failure (`console.oncall.retry`); 0: never."""
    retry_max_usd: float | None = None
    """The most the retries of one run may cost together (None: no cap besides `retry`)."""
    retry_of: str | None = None
    """The job this run retries (its `retry_of` label), None for a first attempt."""
    attempt: int = 0
    """Which retry this run is (1, 2...), 0 for a first attempt."""

    def run_spec(self) -> RunSpec:
        """The cost model's inputs; a run with `max_steps` is counted in steps of its recipe's batch."""
        batch = RECIPE_BATCH_SIZE.get(self.kind, vram.DEFAULT_BATCH_SIZE)
        steps = self.max_steps if self.max_steps and self.max_steps > 0 else None
        return RunSpec(self.model_b, self.examples, self.epochs, self.flavor, self.unsloth, steps, batch,
                       done_fraction=self.resume_done if self.resume_from else 0.0, kind=self.kind)

    def run_shape(self) -> vram.RunShape:
        """How the run uses GPU memory (the recipes' batch and length defaults)."""
        method = "full" if self.full else "lora"
        if self.kind == "grpo":  # its batch of completions, each a short prompt and its answer
            return vram.RunShape(self.model_b, method=method, kind=self.kind, lora_r=self.lora_r or 16,
                                 unsloth=self.unsloth, batch_size=RECIPE_BATCH_SIZE["grpo"], seq_len=GRPO_SEQ_LEN)
        return vram.RunShape(
            self.model_b, method=method, kind=self.kind, lora_r=self.lora_r or 16, unsloth=self.unsloth
        )


def preflight_request(req: TrainingRequest) -> TrainingRequest:
    """The CPU dataset check that goes before `req`: its dataset, checked as its kind's data."""
    data_kind = DATA_KIND.get(req.kind, req.validates or "sft")
    return replace(req, kind="validate", validates=data_kind, ssh=False, run_name=None, scheduled=False, rewards=None)


def fit_problem(req: TrainingRequest, prices: PriceBook | None = None) -> str | None:
    """Why a training request cannot fit its flavor's GPU (the estimate and the cheapest flavor
    that fits, `console.vram`), or None."""
    if req.kind not in TRAINING_KINDS:
        return None
    try:
        return vram.refusal(req.run_shape(), req.flavor, prices)
    except vram.FitError as exc:
        return str(exc)


REPO_ID_RE = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}(/[A-Za-z0-9][\w.-]{0,95})?$")
"""A Hub repo id (`org/name` or `name`), as the training script checks `--hub-model-id`."""
SPACE_ID_RE = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}$")
"""A Space id (`org/trackio`)."""
TENANT_FIELD = "{tenant}"


def hub_model_id_problem(text: Any, *, template: bool = False) -> str | None:
    """Why `text` cannot be a destination (a Hub model id), or None. A `template` is one for
    every tenant (`org/adapter-{tenant}`): it must name the tenant, or all would push to one repo."""
    if not isinstance(text, str) or not text:
        return "must be a Hub model id like org/adapter-acme"
    if template and TENANT_FIELD not in text:
        return f"{text!r} is shared by every tenant: put {TENANT_FIELD} in it (org/adapter-{TENANT_FIELD})"
    sample = text.replace(TENANT_FIELD, "tenant") if template else text
    if "{" in sample or "}" in sample:
        return f"{text!r}: the only field a destination template may hold is {TENANT_FIELD}"
    if not REPO_ID_RE.match(sample) or "--" in sample or ".." in sample:
        return f"{text!r} is not a Hub model id (org/name: letters, digits, '-', '_', '.')"
    return None


def hub_model_id_for(tenant: str, template: str | None) -> str | None:
    """A tenant's destination from a template (`org/adapter-{tenant}` -> `org/adapter-acme`)."""
    if not template:
        return None
    return template.replace(TENANT_FIELD, tenant)


def hub_base_model_problem(base_model: Any) -> str | None:
    """Why `base_model` cannot be the base of a run on HF Jobs, or None: the offline toy model,
    or anything but a Hub model id (the job cannot see this machine's folders). Whether the model
    exists is asked of the Hub before anything is sent (`console.ship.base_model_problem`)."""
    if base_model == TINY_BASE_MODEL:
        return (
            f"base_model {TINY_BASE_MODEL!r} is the offline toy model (random weights, built on the job): "
            "on HF Jobs it would train noise on a paid GPU and push it as the adapter; "
            "name a Hub base model (org/name, e.g. Qwen/Qwen3-0.6B)"
        )
    if not isinstance(base_model, str) or not REPO_ID_RE.match(base_model) or "--" in base_model:
        return (
            f"base_model {base_model!r} is not a Hub model id (org/name): a job on HF Jobs loads its base from the Hub"
        )
    return None


def with_defaults(
    req: TrainingRequest,
    *,
    hub_model_id: str | None = None,
    trackio_project: str | None = None,
    trackio_space_id: str | None = None,
    datasets_cache: str | None = None,
) -> TrainingRequest:
    """`req` with its blanks filled: the destination from a per-tenant template (`hub_model_id`,
    e.g. `org/adapter-{tenant}`), the Trackio project and Space, the datasets cache bucket. What
    `req` sets is kept."""
    changes: dict[str, Any] = {}
    if req.kind in TRAINING_KINDS and not req.hub_model_id and req.tenant and hub_model_id:
        changes["hub_model_id"] = hub_model_id_for(req.tenant, hub_model_id)
    if not req.trackio_project and trackio_project:
        changes["trackio_project"] = trackio_project
    if not req.trackio_space_id and trackio_space_id:
        changes["trackio_space_id"] = trackio_space_id
    if not req.datasets_cache and datasets_cache:
        changes["datasets_cache"] = datasets_cache
    return replace(req, **changes) if changes else req


LOCAL_DESTINATION = "{namespace}/adapter-{tenant}"
"""Where a local run pushes when nothing else says: a model repo of the embedded server's Hub in
the user's namespace, one per tenant, so every local run pushes as a run on HF Jobs must."""


def default_destination(template: str | None, backend_kind: str, namespace: str) -> str | None:
    """The destination template of runs that name none: the config's `defaults.hub_model_id`, else
    on the local backend :data:`LOCAL_DESTINATION` in `namespace` (on HF Jobs none: a run must
    name its repo or the config one)."""
    if template:
        return template
    if backend_kind != "hub" and namespace:
        return LOCAL_DESTINATION.replace("{namespace}", namespace)
    return None


def with_config_defaults(req: TrainingRequest, cfg: Any) -> TrainingRequest:
    """`with_defaults` from a config: `defaults.hub_model_id`, `trackio.project`, `trackio.space_id`
    — what every submission (form, rerun, fleet) gets when it says nothing else."""
    return with_defaults(
        req,
        hub_model_id=getattr(cfg.defaults, "hub_model_id", None),
        trackio_project=cfg.trackio.project,
        trackio_space_id=cfg.trackio.space_id,
        datasets_cache=getattr(cfg.defaults, "datasets_cache", None),
    )


def for_backend(req: TrainingRequest, backend_kind: str) -> TrainingRequest:
    """The request as it is submitted to a backend: a local job logs to the server's Trackio store
    ($TRACKIO_DIR) and gets no token, so a Trackio Space is for Hub runs only."""
    if backend_kind != "hub" and req.trackio_space_id:
        return replace(req, trackio_space_id=None)
    return req


def destination_of(req: TrainingRequest, run_name: str | None = None) -> str:
    """Where a run's weights go: `hf://<hub_model_id>` when it pushes to the Hub, else the local
    artifact store's folder for the run (`$CONSOLE_ARTIFACTS_DIR/<run-name>/`, the scratch folder of
    a local run that names no repo: local runs push to the server's Hub, `default_destination`).
    A dataset preflight writes no weights."""
    if req.kind == "validate":
        return "none (a dataset check writes no weights)"
    if req.hub_model_id:
        return f"hf://{req.hub_model_id}"
    if req.scheduled:
        name = f"{req.tenant}-<job id>"
    else:
        name = run_name or req.run_name or f"{req.tenant}-{req.kind}-<time>"
    return f"local artifacts {name}/"


def dataset_key(dataset: str) -> str:
    """A dataset as one name whoever wrote it: a local file by its resolved path, a Hub dataset
    id as written."""
    text = dataset.strip()
    if not text:
        return ""
    if text.startswith(("/", "./", "../", "~")) or text.endswith((".jsonl", ".json", ".parquet", ".csv")):
        return str(Path(text).expanduser().resolve())
    return text


def dataset_owners(requests: Iterable[TrainingRequest]) -> dict[str, str]:
    """dataset (by `dataset_key`) -> the tenant that trains on it, from the fleet's known requests."""
    owners: dict[str, str] = {}
    for req in requests:
        key = dataset_key(req.dataset)
        if key and req.kind in TRAINING_KINDS:
            owners.setdefault(key, req.tenant)
    return owners


def foreign_dataset(req: TrainingRequest, owners: Mapping[str, str]) -> str | None:
    """Why `req` may not train on its dataset (it is another known tenant's), or None."""
    owner = owners.get(dataset_key(req.dataset))
    if owner is None or owner == req.tenant:
        return None
    return f"dataset {req.dataset} is tenant {owner}'s: {req.tenant} trains only on its own data"


def refusal(
    req: TrainingRequest,
    *,
    backend_kind: str = "local",
    token: str | None = None,
    prices: PriceBook | None = None,
    owners: Mapping[str, str] | None = None,
) -> str | None:
    """Why `req` is not sent, in one line, or None: what HF would refuse, what the references rule
    out (a full fine-tune over 7B, a Hub run with nowhere to push or on the toy model), another
    tenant's dataset, a run its flavor's GPU cannot hold."""
    prices = prices or shipped_price_book()
    if req.kind not in KINDS:
        return f"kind must be one of {', '.join(KINDS)}, got {req.kind!r}"
    if not is_label_name(req.tenant):
        return f"tenant id {req.tenant!r} {NAME_RULE}"
    if not req.dataset:
        return "dataset is required"
    if owners and (why := foreign_dataset(req, owners)):
        return why
    training = req.kind in TRAINING_KINDS
    if req.full and req.kind != "builder":
        return "a full fine-tune is the builder model's (kind builder); tenants train LoRA adapters"
    if req.full and (why := full_fine_tune_problem(req.model_b)):
        return f"{why}; train the builder with LoRA (drop full)"
    if req.kind == "embedding" and (req.encoder or "bi") not in ENCODERS:
        return f"encoder must be one of {', '.join(ENCODERS)}, got {req.encoder!r}"
    if req.rewards is not None and (why := rewards_problem(req.rewards, req.kind)):
        return why
    if req.unsloth and training and req.kind not in UNSLOTH_KINDS:
        return f"unsloth is for kinds {', '.join(UNSLOTH_KINDS)}, not {req.kind}"
    if training and req.hub_model_id and (why := hub_model_id_problem(req.hub_model_id)):
        return f"hub_model_id {why}"
    if req.resume_from is not None and (not training or not req.hub_model_id):
        return "resume_from needs a training run with a hub_model_id (the repo holding the checkpoint)"
    if req.retry and (not 0 < req.retry <= 10 or not training or not req.hub_model_id):
        return "retry is a whole number from 0 to 10, for a training run with a hub_model_id (its checkpoints)"
    if req.retry_max_usd is not None and not 0 <= req.retry_max_usd <= 100_000:
        return f"retry_max_usd must be a number from 0 to 100000, got {req.retry_max_usd!r}"
    if backend_kind == "hub" and training:
        if not req.hub_model_id:
            return (
                "a run on HF Jobs needs a destination (hub_model_id): the job's disk is thrown away "
                "when it ends, and weights not pushed are lost; name one, or give every tenant one with "
                "hub_model_id = \"org/adapter-{tenant}\" in the fleet file or defaults.hub_model_id in the config"
            )
        if not token:
            return "a run on HF Jobs needs a token to push with: `hf auth login` or set HF_TOKEN"
        if why := hub_base_model_problem(req.base_model):
            return why
    if not is_label_name(req.env):
        return f"env {req.env!r} {NAME_RULE}"
    flavor = PREFLIGHT_FLAVOR if req.kind == "validate" else req.flavor
    if flavor not in prices:
        return f"unknown flavor {flavor!r}"
    if training and prices.get(flavor).is_gpu and (why := fit_problem(req, prices)):
        return why
    if req.timeout_seconds is not None and req.timeout_seconds <= 0:
        return "timeout must be longer than zero"
    if req.datasets_cache and (why := bucket_id_problem(req.datasets_cache)):
        return f"datasets_cache {why}"
    return None
