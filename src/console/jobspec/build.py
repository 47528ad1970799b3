"""How the console builds a job submission, and reads one back from what HF Jobs returns.

A :class:`TrainingRequest` says what to train (tenant, dataset, base model, size, examples, epochs,
flavor...) and how: its `kind` (:data:`KINDS`) picks the recipe in `training/` (:data:`SCRIPTS`):
a tenant's SFT, DPO, KTO or GRPO LoRA adapter, its reward model, its embedding model (a bi-, cross-
or sparse encoder), the builder model (SFT, LoRA or with `full` every weight: one larger model on its own cadence,
reference §4(a)), or the CPU preflight of a dataset for one of them. :func:`build_submission` turns
it into a :class:`Submission` — image, command, env, secrets, flavor, labels and the padded timeout
(estimate x ``cfg.defaults.timeout_buffer``) — that goes to ``HfApi.run_job`` /
``create_scheduled_job`` as keyword arguments. :func:`read_request` does the reverse from a
``JobInfo`` or a ``ScheduledJobInfo``: the labels carry what the cost model needs and the command's
arguments carry the rest, so any console can rebuild the fleet from HF Jobs alone.

On both backends the recipe and the ``jobkit`` package it imports travel as `hf jobs uv run`
ships a local script: uploaded to the ``{namespace}/jobs-artifacts`` bucket (a folder named by
their content, so they are uploaded once, not per job) and mounted read-only at
:data:`TRAINING_MOUNT`, where ``uv run`` runs the script (:mod:`console.ship` does the upload;
the job's command, arguments and environment hold no path of this machine, so a job is the same
wherever the console is installed, and a local job is the job HF would run). Secrets
(``HF_TOKEN``) go in ``secrets`` only and are never shown or written anywhere.

Why one module of over 500 lines: building a submission and reading one back are the two halves
of one wire format (the labels, the argument order, the number encoding, the shipped bundle); kept
side by side, a change to one half is seen beside the other, and `tests/fleet/test_jobspec.py`
round-trips them.

No UI, no network.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from console import labels, paths, vram
from console.basesize import full_fine_tune_problem
from console.costs import CostInputError, RunSpec, estimate_run, format_duration, timeout_rule
from console.inputs import NAME_RULE, bucket_id_problem, is_label_name
from console.kinds import (  # noqa: F401 - the kinds, defined once, read through jobspec too
    KIND_LABELS,
    KIND_METHOD,
    KINDS,
    LORA_KINDS,
    REWARDS,
    SCRIPTS,
    TENANT_KINDS,
    TRAINING_KINDS,
    UNSLOTH_KINDS,
    rewards_problem,
)
from console.prices import (
    DEFAULT_TIMEOUT_BUFFER,
    DEFAULT_TIMEOUT_OVERHEAD_S,
    PriceBook,
    shipped_price_book,
)
from console.strings import shared, shared_owner, shared_record, shared_status

SCRIPT_ENV = "CONSOLE_SCRIPT_B64"
"""Where jobs of older consoles carried their scripts (a tar.gz in base64); still dropped from
what the console keeps and shows of a job, never written."""
ARTIFACTS_BUCKET = "jobs-artifacts"
"""The bucket huggingface_hub ships a job's local files through (`{namespace}/jobs-artifacts`)."""
TRAINING_MOUNT = "/console-training"
"""Where a Hub job finds `training/` (the recipe and `jobkit`): a read-only bucket volume."""
HUB_IMAGE = "ghcr.io/astral-sh/uv:python3.12-bookworm-slim"
LOCAL_IMAGE = "console/local-uv"
TINY_BASE_MODEL = "tiny-random"
"""The recipes' offline base: a toy model with random weights, built on the job from the dataset
(`training/jobkit/models.py`). For local runs only: on HF Jobs it would train noise on a paid GPU."""
LOCAL_BASE_MODEL = "console/tiny-causal-lm"
"""The same tiny model as a model repo of the embedded server's Hub (`training/tiny_base.py` builds
and pushes it: `console demo` does, once), so a local run loads its base by repo id, as a Hub run."""
SEED_SCRIPT = "tiny_base.py"
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
SHARED_PACKAGE = "jobkit"
"""The package in training/ that every script imports: it travels with the script."""
DATASET_CHECKS = "validate_dataset.py"
"""The dataset checks every recipe imports (one file, so `hf jobs uv run` can also ship it alone):
it travels with the script too."""
# Arguments the console passes, in the order it passes them; read back by :func:`read_request`.
_ARG_FIELDS: tuple[tuple[str, str], ...] = (
    ("--base-model", "base_model"),
    ("--dataset", "dataset"),
    ("--epochs", "epochs"),
    ("--max-steps", "max_steps"),
    ("--learning-rate", "learning_rate"),
    ("--lora-r", "lora_r"),
    ("--lora-alpha", "lora_alpha"),
    ("--hub-model-id", "hub_model_id"),
    ("--promote", "promote"),
    ("--resume-from", "resume_from"),
    ("--run-name", "run_name"),
    ("--trackio-project", "trackio_project"),
    ("--trackio-space-id", "trackio_space_id"),
)


_DERIVED_LABELS = ("run", "spec", "timeout", "max_steps", "retry_of", "attempt")
"""Labels left out of a fingerprint: the run's name, the fingerprint itself, the timeout (already
in it as the job's own), max_steps (in it as an argument) and a retry's place in its chain: a
schedule keeps its fingerprint."""


class SubmissionError(ValueError):
    """A request the console refuses to submit; the message says which field and why."""


def label_value(value: Any) -> str:
    """A label value HF accepts (`console.labels`), at most `labels.NAME_MAX` characters (other
    characters, '.' included, -> '-')."""
    text = labels.NOT_LABEL_CHARS.sub("-", str(value)).strip("-")
    return text[:labels.NAME_MAX]


def format_number(value: float) -> str:
    """3 -> '3', 0.5 -> '0.5': how numbers read in arguments."""
    return f"{value:g}"


def number_label(value: float) -> str:
    """A number as a label value HF accepts: 3 -> '3', 0.5 -> '0p5', 1.5 -> '1p5' (no '.')."""
    return label_value(format_number(value).replace(".", "p"))


def label_number(text: Any) -> float | None:
    """A number label read back, in either encoding ('0p5', or '0.5' as older consoles wrote it);
    None when absent or not a number."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return float(text.replace("p", "."))
    except ValueError:
        return None


def retry_words(labels: dict[str, str]) -> str | None:
    """`retry 1 of 2` for a retry's labels, None for a first attempt: what the fleet, the jobs
    table and the ledger say of it."""
    attempt = label_number(labels.get("attempt"))
    if not labels.get("retry_of") or not attempt:
        return None
    most = label_number(labels.get("retry"))
    return f"retry {int(attempt)} of {int(most)}" if most else f"retry {int(attempt)}"


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
    """A dataset check's method (`KIND_METHOD` of the run it precedes; None: sft)."""
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
    """The CPU dataset check that goes before `req`: its dataset, checked for its kind's method."""
    method = KIND_METHOD.get(req.kind, req.validates or "sft")
    return replace(req, kind="validate", validates=method, ssh=False, run_name=None, scheduled=False, rewards=None)


def fit_problem(req: TrainingRequest, prices: PriceBook | None = None) -> str | None:
    """Why a training request cannot fit its flavor's GPU (the estimate and the cheapest flavor
    that fits, `console.vram`), or None."""
    if req.kind not in TRAINING_KINDS:
        return None
    try:
        return vram.refusal(req.run_shape(), req.flavor, prices)
    except vram.FitError as exc:
        return str(exc)


@dataclass(frozen=True)
class Submission:
    """Everything `HfApi.run_job` needs; `secrets` values are never displayed."""

    image: str
    command: list[str]
    env: dict[str, str]
    secrets: dict[str, str]
    flavor: str
    timeout_seconds: int
    labels: dict[str, str]
    ssh: bool = False
    estimate_hours: float = 0.0
    estimate_usd: float = 0.0
    timeout_rule: str = ""
    """How the timeout was padded, in words (`costs.timeout_rule`); empty for a fixed timeout."""
    timeout_warning: str = ""
    """A timeout set by hand below the padded estimate, in words (confirmations ask first); else empty."""
    warnings: tuple[str, ...] = ()
    """What a confirmation says first, before the run is sent (`submission_warnings`): a risk the
    reference names that is the user's to take, not a refusal."""
    dataset: str = ""
    destination: str = ""
    """Where the run's weights go, in words: `hf://<repo>` or the local artifact folder."""
    ships: tuple[tuple[str, str], ...] = ()
    """Files the job needs from this machine, as (name in the bundle, local path): a Hub job's
    recipe and `jobkit`, uploaded to the jobs-artifacts bucket by `console.ship` before it runs."""
    bundle_id: str = ""
    """The bundle's folder in the bucket: named by the files' content, so equal files share it."""
    volumes: tuple[dict[str, Any], ...] = ()
    """`huggingface_hub.Volume` fields of the job's own volumes (its datasets cache); the shipped
    bundle's is added once it is uploaded (:meth:`mounted`)."""
    bundle_bucket: str = ""
    """The bucket the bundle was uploaded to (set by :meth:`mounted`)."""

    def mounted(self, bucket: str) -> Submission:
        """This submission with its bundle's folder of `bucket` mounted read-only at
        :data:`TRAINING_MOUNT` (what :func:`console.ship.ship` returns once the files are there)."""
        if not self.ships:
            return self
        return replace(self, bundle_bucket=bucket)

    def all_volumes(self) -> list[dict[str, Any]]:
        """Every volume of the job: the shipped bundle's (once mounted), then its own."""
        bundle = [{"type": "bucket", "source": self.bundle_bucket, "mount_path": TRAINING_MOUNT,
                   "path": self.bundle_id, "read_only": True}] if self.bundle_bucket else []
        return [*bundle, *self.volumes]

    def run_kwargs(self) -> dict[str, Any]:
        if self.ships and not self.bundle_bucket:
            raise SubmissionError("the job's scripts are not shipped yet: console.ship.ship() first")
        kwargs: dict[str, Any] = dict(
            image=self.image,
            command=list(self.command),
            env=dict(self.env),
            flavor=self.flavor,
            timeout=self.timeout_seconds,
            labels=dict(self.labels),
            name=self.labels.get("run") or None,
        )
        if self.secrets:
            kwargs["secrets"] = dict(self.secrets)
        if self.ssh:
            kwargs["ssh"] = True
        if volumes := self.all_volumes():
            from huggingface_hub import Volume

            kwargs["volumes"] = [Volume(**vol) for vol in volumes]
        return kwargs

    def scheduled_kwargs(self, schedule: str, *, suspend: bool = False) -> dict[str, Any]:
        kwargs = self.run_kwargs()
        kwargs.pop("ssh", None)  # scheduled jobs take no ssh flag
        kwargs["schedule"] = schedule
        if suspend:
            kwargs["suspend"] = True
        return kwargs

    def fingerprint(self) -> str:
        """A short hash of what the job does (not its secrets): equal specs, equal fingerprints."""
        doc = {
            "image": self.image,
            "command": self.command,
            "env": self.env,
            "flavor": self.flavor,
            "timeout": self.timeout_seconds,
            "labels": {k: v for k, v in self.labels.items() if k not in _DERIVED_LABELS},
            "secrets": sorted(self.secrets),
            **({"bundle": self.bundle_id} if self.bundle_id else {}),
            **({"volumes": list(self.volumes)} if self.volumes else {}),
        }
        return hashlib.sha1(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:12]

    def describe(self) -> str:
        """A one-line, secret-free summary for confirmations and dry runs."""
        return (
            f"{self.labels.get('kind', '?')} {self.labels.get('tenant', '?')} on {self.flavor}, "
            f"timeout {self.timeout_seconds}s, est ${self.estimate_usd:.2f}"
        )


def trackio_run_name(job_id: str, labels: dict[str, str] | None) -> str | None:
    """The Trackio run a console job logs to: its `run` label, or for a run of a scheduled job
    (labelled `run=<tenant>-scheduled`) `<tenant>-<job id>`, the name the script gives itself."""
    labels = labels or {}
    run, tenant = labels.get("run"), labels.get("tenant")
    if run and tenant and run == label_value(f"{tenant}-scheduled"):
        return f"{tenant}-{job_id}"
    return run or None


def default_run_name(tenant: str, kind: str = "sft", now: datetime | None = None) -> str:
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    return label_value(f"{tenant}-{kind}-{stamp}")


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


DATASETS_CACHE_MOUNT = "/data"
"""Where a run's datasets cache bucket is mounted (read-write)."""
DATASETS_CACHE_DIR = f"{DATASETS_CACHE_MOUNT}/datasets"
"""`HF_DATASETS_CACHE` of a run with a datasets cache. Training reference: the datasets library
caches inside the container, "destroyed after the job. Each Jobs run re-downloads the dataset";
a /data volume with HF_DATASETS_CACHE=/data/datasets keeps the cache across jobs."""


def datasets_cache_volume(req: TrainingRequest) -> dict[str, Any] | None:
    """The read-write bucket volume of `req`'s datasets cache, or None: none set, or a local
    dataset file (nothing is downloaded)."""
    if not req.datasets_cache or not req.dataset or dataset_key(req.dataset).startswith("/"):
        return None
    return {"type": "bucket", "source": req.datasets_cache, "mount_path": DATASETS_CACHE_MOUNT, "read_only": False}


def datasets_cache_tip(req: TrainingRequest, backend_kind: str) -> str | None:
    """What a Hub run of a Hub dataset without a datasets cache is offered in its confirmation, or
    None: each run downloads the dataset again (training reference: a /data volume with
    HF_DATASETS_CACHE=/data/datasets keeps it)."""
    if backend_kind != "hub" or req.datasets_cache or not req.dataset or dataset_key(req.dataset).startswith("/"):
        return None
    return (
        "each run downloads its Hub dataset again (the container's cache goes with it): set defaults.datasets_cache "
        "in the config (or datasets_cache in the fleet file) to a bucket, e.g. org/datasets-cache, mounted at "
        f"{DATASETS_CACHE_MOUNT} with HF_DATASETS_CACHE={DATASETS_CACHE_DIR}, to keep it across runs"
    )


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


def estimate_timeout(
    req: TrainingRequest, buffer: float, prices: PriceBook | None = None,
    overhead_s: float = DEFAULT_TIMEOUT_OVERHEAD_S,
) -> int:
    """The padded timeout (seconds) for a request: (estimate + overhead) x buffer; preflight has a
    fixed one."""
    if req.kind == "validate":
        return PREFLIGHT_TIMEOUT_SECONDS
    return estimate_run(req.run_spec(), prices, timeout_buffer=buffer, timeout_overhead_s=overhead_s).timeout_seconds


TRACKIO_DEFAULT_PROJECT = "console"
"""The Trackio project a recipe logs to when none is given (`jobkit.run.DEFAULT_TRACKIO_PROJECT`)."""


def trackio_space_warning(req: TrainingRequest, backend_kind: str) -> str | None:
    """Why a Hub run's metrics would be lost, or None: every training recipe logs to Trackio, and
    in a job's container those metrics go when the container does unless a Trackio Space is
    named to sync them to (reference §5: "Passing space_id syncs metrics to a HF Space dashboard
    so they persist after the ephemeral instance dies"). A local run logs to the server's store."""
    if backend_kind != "hub" or req.kind not in TRAINING_KINDS or req.trackio_space_id:
        return None
    project = req.trackio_project or TRACKIO_DEFAULT_PROJECT
    return (
        f"the run logs to Trackio (project {project}) but names no Trackio Space: on HF Jobs its metrics "
        "stay in the job's container and are lost when the job ends; set trackio.space_id in the config "
        "(or trackio_space_id in the fleet file), e.g. org/trackio, to sync them to a Space dashboard"
    )


def submission_warnings(req: TrainingRequest, backend_kind: str) -> tuple[str, ...]:
    """What a confirmation of `req` warns about first (none refuses it)."""
    found = (trackio_space_warning(req, backend_kind), datasets_cache_tip(req, backend_kind))
    return tuple(w for w in found if w)


def build_submission(
    req: TrainingRequest,
    *,
    backend_kind: str = "local",
    timeout_buffer: float = DEFAULT_TIMEOUT_BUFFER,
    timeout_overhead_s: float = DEFAULT_TIMEOUT_OVERHEAD_S,
    token: str | None = None,
    prices: PriceBook | None = None,
    script_dir: Path | None = None,
    owners: Mapping[str, str] | None = None,
) -> Submission:
    """The job submission for a training run (a kind of :data:`TRAINING_KINDS`) or a dataset
    preflight (kind="validate").

    `owners` (`dataset_owners` of the known fleet): a dataset another tenant trains on is refused.
    A run whose estimated GPU memory does not fit its flavor is refused with the estimate and the
    cheapest flavor that fits. Raises SubmissionError with a reason for anything HF would refuse
    or the cost model rejects. Its parts: :func:`refusal` (what is refused), :func:`estimate`
    (the cost and the timeout), :func:`job_labels` and :func:`job_command`.
    """
    prices = prices or shipped_price_book()
    req = for_backend(req, backend_kind)
    if why := refusal(req, backend_kind=backend_kind, token=token, prices=prices, owners=owners):
        raise SubmissionError(why)
    flavor = PREFLIGHT_FLAVOR if req.kind == "validate" else req.flavor
    est = estimate(req, prices, timeout_buffer=timeout_buffer, timeout_overhead_s=timeout_overhead_s)
    if req.scheduled:
        run_name = f"{req.tenant}-scheduled"
    else:  # the run label and the Trackio run are one name, and a label HF accepts
        run_name = label_value(req.run_name or "") or default_run_name(req.tenant, req.kind)
    env = {k: str(v) for k, v in req.extra_env.items()}
    cache = datasets_cache_volume(req)
    if cache is not None:
        env["HF_DATASETS_CACHE"] = DATASETS_CACHE_DIR
    secrets: dict[str, str] = {}
    if token and (backend_kind == "hub" or names_hub_repo(req)):
        # a Hub run pushes with it; a local run that names a repo reads from and pushes to the
        # local server's Hub ($HF_ENDPOINT, set by the server) as it would huggingface.co: with a
        # token, and online (local jobs run offline otherwise)
        secrets["HF_TOKEN"] = token
        if backend_kind != "hub":
            env.setdefault("HF_HUB_OFFLINE", "0")
    script = SCRIPTS[req.kind]
    # on both backends the recipe and jobkit travel through the jobs-artifacts bucket, as
    # `hf jobs uv run` ships a local script: no path of this machine is in the job
    ships = tuple((name, str(path)) for name, path in bundle_files((script_dir or paths.training_dir()), script))
    return Submission(
        image=HUB_IMAGE if backend_kind == "hub" else LOCAL_IMAGE,
        command=job_command(req, run_name, backend_kind),
        env=env,
        secrets=secrets,
        flavor=flavor,
        timeout_seconds=est.timeout_seconds,
        labels=job_labels(req, run_name, est.timeout_seconds),
        ssh=req.ssh,
        estimate_hours=est.hours,
        estimate_usd=est.usd,
        timeout_rule=est.rule,
        timeout_warning=est.warning,
        warnings=submission_warnings(req, backend_kind),
        dataset=req.dataset,
        destination=destination_of(req, run_name),
        ships=ships,
        bundle_id=bundle_name(ships),
        volumes=(cache,) if cache is not None else (),
    )


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


@dataclass(frozen=True)
class JobEstimate:
    """What a submission is expected to cost and how long it may run."""

    hours: float
    usd: float
    timeout_seconds: int
    rule: str
    """How the timeout was set, in words (`costs.timeout_rule`, a fixed one, or by hand)."""
    warning: str = ""
    """A timeout set by hand below the padded estimate, in words; else empty."""


def estimate(
    req: TrainingRequest,
    prices: PriceBook,
    *,
    timeout_buffer: float = DEFAULT_TIMEOUT_BUFFER,
    timeout_overhead_s: float = DEFAULT_TIMEOUT_OVERHEAD_S,
) -> JobEstimate:
    """A training run's estimate and padded timeout (`costs.estimate_run`, the one cost
    function), or a dataset check's fixed timeout and its cost at that; a timeout set by hand
    replaces the padded one, with a warning when it is below it. Raises SubmissionError for what
    the cost model rejects."""
    try:
        if req.kind in TRAINING_KINDS:
            est = estimate_run(
                req.run_spec(), prices, timeout_buffer=timeout_buffer, timeout_overhead_s=timeout_overhead_s
            )
            hours, usd, timeout = est.hours, est.cost_usd, est.timeout_seconds
            rule = timeout_rule(est, timeout_buffer)
        else:
            timeout = PREFLIGHT_TIMEOUT_SECONDS
            rule = f"{timeout} s, fixed for a dataset check"
            hours = timeout / 3600 / timeout_buffer  # the fixed timeout is the padded estimate
            usd = hours * prices.price_per_hour(PREFLIGHT_FLAVOR)
    except CostInputError as exc:
        raise SubmissionError(str(exc)) from None
    if req.timeout_seconds is None:
        return JobEstimate(hours, usd, timeout, rule)
    warning = ""
    if req.kind in TRAINING_KINDS and req.timeout_seconds < timeout:
        warning = (
            f"timeout {format_duration(req.timeout_seconds)} is below the padded estimate "
            f"{format_duration(timeout)} ({rule}): the run is likely killed before it finishes and pushes"
        )
    return JobEstimate(hours, usd, int(req.timeout_seconds), "set by hand", warning)


def job_labels(req: TrainingRequest, run_name: str, timeout_seconds: int) -> dict[str, str]:
    """The labels of a console job: what any console needs to rebuild the fleet and its costs
    from HF Jobs alone (DESIGN: tenant, env, kind and the cost model's inputs)."""
    return {
        "app": "console",
        "tenant": req.tenant,
        "env": req.env,
        "kind": req.kind,
        "model_b": number_label(req.model_b),
        "examples": str(int(req.examples)),
        "epochs": number_label(req.epochs),
        "unsloth": "1" if req.unsloth else "0",
        # a calibration reading past runs by their labels compares like with like
        **({"max_steps": str(int(req.max_steps))} if req.max_steps and req.max_steps > 0 else {}),
        "run": label_value(run_name),
        **({"full": "1"} if req.full else {}),
        **({"encoder": req.encoder} if req.kind == "embedding" and req.encoder else {}),
        **({"margin": number_label(req.promote_margin)}
           if req.promote == "on_eval" and req.promote_margin is not None else {}),
        # HF does not always echo a timeout back (huggingface_hub's JobSpec reads `timeout`, the
        # API sends `timeoutSeconds`; JobInfo has none): the label keeps it readable
        "timeout": str(int(timeout_seconds)),
        **({"retry": str(int(req.retry))} if req.retry > 0 else {}),
        **({"retry_max_usd": number_label(req.retry_max_usd)} if req.retry > 0 and req.retry_max_usd is not None
           else {}),
        **({"retry_of": label_value(req.retry_of), "attempt": str(int(req.attempt))} if req.retry_of else {}),
    }


def job_command(req: TrainingRequest, run_name: str, backend_kind: str) -> list[str]:
    """`uv run /console-training/<recipe> <arguments>`: the shipped recipe with the request's
    arguments (a Hub run with Unsloth asks uv for it: CUDA-only wheels, not in the headers)."""
    args = _script_args(replace(req, run_name=None if req.scheduled else run_name))
    if req.scheduled and req.kind in TRAINING_KINDS:
        # each scheduled run names itself <tenant>-<job id>: see trackio_run_name()
        args += ["--run-name-prefix", req.tenant]
    extra = ("unsloth",) if backend_kind == "hub" and req.unsloth and req.kind in UNSLOTH_KINDS else ()
    return hub_command(SCRIPTS[req.kind], args, with_packages=extra)


def names_hub_repo(req: TrainingRequest) -> bool:
    """Whether a run reads or writes a Hub repo: its destination, a Hub dataset id, or a Hub base
    model (not the offline `tiny-random`, not a folder)."""
    if req.kind in TRAINING_KINDS and req.hub_model_id:
        return True
    if req.dataset and not dataset_key(req.dataset).startswith("/"):
        return True
    base = req.base_model
    return req.kind in TRAINING_KINDS and base != TINY_BASE_MODEL and not base.startswith(("/", "./", "../", "~"))


def seed_submission(token: str | None, *, script_dir: Path | None = None, repo: str = LOCAL_BASE_MODEL) -> Submission:
    """The CPU job that builds the tiny base model and pushes it to `repo` of the local server's
    Hub (`training/tiny_base.py`; a repo that has it is left as it is)."""
    source = (script_dir or paths.training_dir()) / SEED_SCRIPT
    ships = tuple((name, str(path)) for name, path in bundle_files(source.parent, SEED_SCRIPT))
    return Submission(
        image=LOCAL_IMAGE,
        command=hub_command(SEED_SCRIPT, ["--repo", repo]),
        ships=ships,
        bundle_id=bundle_name(ships),
        env={"HF_HUB_OFFLINE": "0"},
        secrets={"HF_TOKEN": token} if token else {},
        flavor=PREFLIGHT_FLAVOR,
        timeout_seconds=PREFLIGHT_TIMEOUT_SECONDS,
        labels={"app": "console-hub", "kind": "seed", "run": label_value(f"seed-{repo}")},
        destination=f"hf://{repo}",
    )


_NOT_FOR_EMBEDDINGS = ("--lora-r", "--lora-alpha")


def _script_args(req: TrainingRequest) -> list[str]:
    """The recipe's arguments. An SFT run's are what they always were (a fleet's schedules keep
    their fingerprints); the other kinds add theirs: `--kind` for embeddings, `--full` and
    `--flavor` for the builder (its recipe checks the fit again on the job's GPU), `--unsloth`."""
    if req.kind == "validate":
        # validate_dataset.py DATASET --method <the kind's method>
        return [req.dataset, "--method", req.validates or "sft"]
    out: list[str] = []
    if req.kind == "embedding":
        out += ["--kind", req.encoder or "bi"]
    if req.kind == "grpo" and req.rewards:
        out += ["--rewards", req.rewards]
    for flag, attr in _ARG_FIELDS:
        value = getattr(req, attr)
        if value is None or (req.kind == "embedding" and flag in _NOT_FOR_EMBEDDINGS):
            continue
        if isinstance(value, float):
            value = format_number(value)
        out += [flag, str(value)]
    if req.kind == "builder":  # the recipe checks the base's real size against model_b too
        out += [*(["--full"] if req.full else []), "--flavor", req.flavor, "--model-b", format_number(req.model_b)]
    if req.unsloth and req.kind in UNSLOTH_KINDS:
        out.append("--unsloth")
    return out


def bundle_files(script_dir: Path, script: str) -> list[tuple[str, Path]]:
    """What a Hub job ships, as (name in the bundle, file): the script, the dataset checks and the
    shared package."""
    package = script_dir / SHARED_PACKAGE
    modules = sorted(
        (path.relative_to(script_dir).as_posix(), path)
        for path in package.rglob("*.py")
        if "__pycache__" not in path.parts
    )
    dataset_checks = script_dir / DATASET_CHECKS
    checks = [(DATASET_CHECKS, dataset_checks)] if script != DATASET_CHECKS and dataset_checks.is_file() else []
    return [(script, script_dir / script), *checks, *modules]


def bundle_name(files: Iterable[tuple[str, str]]) -> str:
    """The bucket folder of a bundle: `console-training-` and a hash of its names and contents,
    so a changed recipe ships anew and an unchanged one is uploaded once for every job."""
    digest = hashlib.sha256()
    for name, path in sorted(files):
        data = Path(path).read_bytes()
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return f"console-training-{digest.hexdigest()[:16]}"


def hub_command(script: str, args: list[str], with_packages: Iterable[str] = ()) -> list[str]:
    """`uv run` of the recipe where the bundle is mounted (:data:`TRAINING_MOUNT`, `jobkit` beside
    it, where the script imports it from), as `hf jobs uv run` runs a shipped script;
    `with_packages` are added to the script's own dependencies (`uv run --with`)."""
    extra = [arg for package in with_packages for arg in ("--with", package)]
    return ["uv", "run", *extra, f"{TRAINING_MOUNT}/{script}", *args]


# ---------------------------------------------------------------------------------------------
# Reading a submission back


def labels_of(info: Any) -> dict[str, str]:
    """Labels of a JobInfo or ScheduledJobInfo (its job_spec's), never None: a copy to change."""
    return dict(labels_held(info))


def labels_held(info: Any) -> dict[str, str]:
    """The labels dict a JobInfo or ScheduledJobInfo holds (its job_spec's), not a copy: to read
    and keep beside the record (a job's row), never to change. {} when it has none."""
    labels = getattr(info, "labels", None)
    if labels is None and getattr(info, "job_spec", None) is not None:
        labels = info.job_spec.labels
    return labels if isinstance(labels, dict) else dict(labels or {})


def is_console_job(info: Any) -> bool:
    return labels_of(info).get("app") == "console"


_TIMED_OUT_AFTER = re.compile(r"timed out after ((?:\d+\s*[hms]\s*)+)", re.IGNORECASE)
_DURATION_PART = re.compile(r"(\d+)\s*([hms])", re.IGNORECASE)


def run_limit_seconds(info: Any) -> float | None:
    """The most a job can run, in seconds: its timeout x its attempts (each attempt has the whole
    timeout), or None when the job does not say. JobInfo carries no timeout, so it is the `timeout`
    label the console puts on its jobs, else what a timed-out job's message says ("Job timed out
    after 2m 5s", as the embedded server writes it). What `costs.job_cost` caps billing at."""
    timeout = label_number(labels_of(info).get("timeout"))
    if timeout is None:
        message = str(getattr(getattr(info, "status", None), "message", None) or "")
        found = _TIMED_OUT_AFTER.search(message)
        if found:
            unit = {"h": 3600, "m": 60, "s": 1}
            timeout = float(sum(int(n) * unit[u.lower()] for n, u in _DURATION_PART.findall(found.group(1))))
    if timeout is None or not timeout > 0 or timeout == float("inf"):
        return None
    retry = getattr(info, "retry", None)
    attempts = 1 + (retry if isinstance(retry, int) and not isinstance(retry, bool) and retry > 0 else 0)
    return timeout * attempts


def exposed_ports_of(info: Any) -> int:
    """How many ports a job exposes through the Jobs proxy (public ones included, each counted once):
    each is billed a flat $0.01/h (`costs.job_cost`). The Jobs API says the job's ports, not since
    when, so each is billed for the job's whole running time."""
    ports = {str(p) for p in (getattr(info, "expose", None) or [])}
    ports |= {str(p) for p in (getattr(info, "expose_public", None) or [])}
    return len(ports)


def compact_job(info: Any) -> Any:
    """The same JobInfo / ScheduledJobInfo, lighter to keep: its shipped script bundle
    (``CONSOLE_SCRIPT_B64``) dropped and its repeated strings shared.

    On the Hub every console job carries its script and the shared package, compressed, in its
    environment, about 28 KB; a list of 10,000 jobs would keep 280 MB of them. What the console
    reads back from a job (its request, labels and times) never needs the script: a rerun builds
    a fresh submission. The JSON decoder makes a new string for every label, argument and flavor
    of every job; most are the same few hundred strings, so each is kept once, and so are the
    small records jobs repeat: their mounts, their owner, a finished job's status
    (`console.strings.shared_record`). An empty environment, secrets or arguments is kept as
    None, as huggingface_hub itself keeps no volumes.
    """
    try:
        spec = getattr(info, "job_spec", None) or info
        env = getattr(spec, "environment", None)
        if env:
            spec.environment = {shared(k): shared(v) for k, v in env.items() if k != SCRIPT_ENV}
        labels = getattr(spec, "labels", None)
        if labels:
            spec.labels = {shared(k): shared(v) for k, v in labels.items()}
        for name in ("command", "arguments"):
            items = getattr(spec, name, None)
            if items:
                setattr(spec, name, [shared(x) for x in items])
        secrets = getattr(spec, "secrets", None)  # their names: a dict (values hidden) or a list
        if isinstance(secrets, dict) and secrets:
            spec.secrets = {shared(k): v for k, v in secrets.items()}
        elif isinstance(secrets, list) and secrets:
            spec.secrets = [shared(x) for x in secrets]
        volumes = getattr(spec, "volumes", None)
        if volumes:
            spec.volumes = [_shared_volume(v) for v in volumes]
        for obj, names in ((spec, ("docker_image", "flavor")), (info, ("endpoint", "schedule")),
                           (getattr(info, "status", None), ("stage", "message"))):
            for name in names:
                value = getattr(obj, name, None) if obj is not None else None
                if isinstance(value, str):
                    setattr(obj, name, shared(value))
        for name in ("environment", "secrets", "arguments"):
            # an empty one as the API may send it, None (huggingface_hub's own for no volumes):
            # 10,000 kept jobs would hold 30,000 empty dicts and lists
            if getattr(spec, name, None) is not None and not getattr(spec, name):
                setattr(spec, name, None)
        if getattr(info, "owner", None) is not None:
            info.owner = shared_owner(info.owner)
        if spec is info and getattr(info, "status", None) is not None:  # a job, not a schedule
            info.status = shared_status(info.status)
    except AttributeError:  # a read-only (frozen) record: kept as it came
        pass
    return info


@dataclass(slots=True, eq=False)
class KeptSchedule:
    """A scheduled job as the console keeps it in memory: what the fleet, the costs forecast, the
    watch and a reschedule read of it, its training request read once (`read_request` answers
    with it). Read like a `ScheduledJobInfo`: its `job_spec` is itself (labels, flavor, timeout).
    A third of the `ScheduledJobInfo` it came from: a fleet keeps 10,000 of them."""

    id: str
    schedule: str | None
    suspend: bool | None
    status: Any
    """The schedule's `ScheduledJobStatus` (`next_job_run_at`, `last_job`)."""
    labels: dict[str, str]
    flavor: str | None
    timeout: int | None
    request: TrainingRequest | None

    @property
    def job_spec(self) -> KeptSchedule:
        return self


def keep_schedule(sj: Any) -> KeptSchedule:
    """What the console keeps of a `ScheduledJobInfo` (`KeptSchedule`), its strings shared."""
    if isinstance(sj, KeptSchedule):
        return sj
    sj = compact_job(sj)
    spec = sj.job_spec
    flavor = getattr(spec, "flavor", None)
    return KeptSchedule(
        id=sj.id,
        schedule=sj.schedule,
        suspend=sj.suspend,
        status=sj.status,
        labels=spec.labels or {},
        flavor=shared(str(getattr(flavor, "value", flavor))) if flavor is not None else None,
        timeout=spec.timeout,
        request=read_request(sj),
    )


_VOLUME_FIELDS = ("type", "source", "mount_path", "revision", "read_only", "path")


def _shared_volume(volume: Any) -> Any:
    return shared_record(volume, _VOLUME_FIELDS, "volume")


def command_of(info: Any) -> list[str]:
    spec = getattr(info, "job_spec", None) or info
    return list(getattr(spec, "command", None) or []) + list(getattr(spec, "arguments", None) or [])


def script_args_of(command: list[str]) -> list[str]:
    """The script's own arguments, after `uv run [--with PKG]... SCRIPT` (or the `bash -c ... NAME`
    wrapper older consoles shipped scripts in)."""
    if len(command) >= 3 and command[0] == "uv" and command[1] == "run":
        i = 2
        while i + 1 < len(command) and command[i] in ("--with", "--python"):
            i += 2
        return command[i + 1:]
    if len(command) >= 4 and command[0] == "bash" and command[1] == "-c":
        return command[4:]
    return []


def _parse_float(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def read_request(info: Any) -> TrainingRequest | None:
    """The TrainingRequest behind a console job or scheduled job (None for other jobs)."""
    if isinstance(info, KeptSchedule):
        return info.request
    labels = labels_of(info)
    if labels.get("app") != "console" or not labels.get("tenant"):
        return None
    args = script_args_of(command_of(info))
    values: dict[str, str] = {}
    i = 0
    flags = {**dict(_ARG_FIELDS), "--kind": "encoder", "--method": "validates", "--rewards": "rewards"}
    if labels.get("kind") == "validate" and args:
        values["dataset"] = args[0]
    while i < len(args):
        if args[i] in flags and i + 1 < len(args):
            values[flags[args[i]]] = args[i + 1]
            i += 2
        else:
            i += 1
    spec = getattr(info, "job_spec", None) or info
    env = dict(getattr(spec, "environment", None) or {})
    env.pop(SCRIPT_ENV, None)
    cache = next((v.source for v in getattr(spec, "volumes", None) or ()
                  if getattr(v, "type", None) == "bucket" and v.mount_path == DATASETS_CACHE_MOUNT
                  and not v.read_only), None)
    if cache is not None and env.get("HF_DATASETS_CACHE") == DATASETS_CACHE_DIR:
        env.pop("HF_DATASETS_CACHE")
    timeout = getattr(spec, "timeout", None) or label_number(labels.get("timeout"))

    def _int(name: str) -> int | None:
        v = _parse_float(values.get(name))
        return int(v) if v is not None else None

    return TrainingRequest(
        tenant=labels["tenant"],
        dataset=values.get("dataset", ""),
        base_model=values.get("base_model", TINY_BASE_MODEL),
        model_b=label_number(labels.get("model_b")) or 1.0,
        examples=int(label_number(labels.get("examples")) or 1000),
        epochs=label_number(labels.get("epochs")) or _parse_float(values.get("epochs")) or 3.0,
        flavor=str(getattr(spec, "flavor", None) or "l4x1"),
        kind=labels.get("kind", "sft"),
        env=labels.get("env", "dev"),
        unsloth=labels.get("unsloth") == "1",
        full=labels.get("full") == "1" or "--full" in args,
        encoder=values.get("encoder") if labels.get("kind") == "embedding" else None,
        validates=values.get("validates") if labels.get("kind") == "validate" else None,
        rewards=values.get("rewards") if labels.get("kind") == "grpo" else None,
        max_steps=_int("max_steps"),
        learning_rate=_parse_float(values.get("learning_rate")),
        lora_r=_int("lora_r"),
        lora_alpha=_int("lora_alpha"),
        promote=values.get("promote") if values.get("promote") in PROMOTE_POLICIES else None,
        promote_margin=label_number(labels.get("margin")) if values.get("promote") == "on_eval" else None,
        resume_from=values.get("resume_from"),
        hub_model_id=values.get("hub_model_id"),
        run_name=values.get("run_name") or labels.get("run"),
        scheduled=getattr(info, "job_spec", None) is not None and "run_name" not in values,
        trackio_project=values.get("trackio_project"),
        trackio_space_id=values.get("trackio_space_id"),
        datasets_cache=cache,
        timeout_seconds=int(timeout) if timeout else None,
        extra_env={k: str(v) for k, v in env.items()},
        retry=int(label_number(labels.get("retry")) or 0),
        retry_max_usd=label_number(labels.get("retry_max_usd")),
        retry_of=labels.get("retry_of") or None,
        attempt=int(label_number(labels.get("attempt")) or 0),
    )


def shell_line(command: list[str]) -> str:
    """A command as one copyable shell line (the hub wrapper's script payload is not in it)."""
    return shlex.join(command)
