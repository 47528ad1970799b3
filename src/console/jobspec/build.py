"""A :class:`TrainingRequest` turned into a :class:`Submission`: image, command, env, secrets,
flavor, labels and the padded timeout (estimate x ``cfg.defaults.timeout_buffer``) that go to
``HfApi.run_job`` / ``create_scheduled_job`` as keyword arguments, and the recipe bundle the job
ships (:mod:`console.ship` uploads it to the ``{namespace}/jobs-artifacts`` bucket; it is mounted
read-only at :data:`TRAINING_MOUNT`, where ``uv run`` runs the script).

No UI, no network.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from console import paths
from console.costs import estimate_run, timeout_rule
from console.inputs import CostInputError, format_duration
from console.jobspec.request import (
    PREFLIGHT_FLAVOR,
    PREFLIGHT_TIMEOUT_SECONDS,
    TINY_BASE_MODEL,
    TrainingRequest,
    dataset_key,
    destination_of,
    for_backend,
    refusal,
)
from console.jobspec.wire import (
    ARG_FIELDS,
    DATASETS_CACHE_DIR,
    DATASETS_CACHE_MOUNT,
    default_run_name,
    format_number,
    label_value,
    number_label,
)
from console.kinds import SCRIPTS, TRAINING_KINDS, UNSLOTH_KINDS
from console.prices import DEFAULT_TIMEOUT_BUFFER, DEFAULT_TIMEOUT_OVERHEAD_S, PriceBook, shipped_price_book

ARTIFACTS_BUCKET = "jobs-artifacts"
"""The bucket huggingface_hub ships a job's local files through (`{namespace}/jobs-artifacts`)."""
TRAINING_MOUNT = "/console-training"
"""Where a Hub job finds `training/` (the recipe and `jobkit`): a read-only bucket volume."""
HUB_IMAGE = "ghcr.io/astral-sh/uv:python3.12-bookworm-slim"
LOCAL_IMAGE = "console/local-uv"


LOCAL_BASE_MODEL = "console/tiny-causal-lm"
"""The same tiny model as a model repo of the embedded server's Hub (`training/tiny_base.py` builds
and pushes it: `console demo` does, once), so a local run loads its base by repo id, as a Hub run."""
SEED_SCRIPT = "tiny_base.py"


SHARED_PACKAGE = "jobkit"
"""The package in training/ that every script imports: it travels with the script."""
DATASET_CHECKS = "validate_dataset.py"
"""The dataset checks every recipe imports (one file, so `hf jobs uv run` can also ship it alone):
it travels with the script too."""


_DERIVED_LABELS = ("run", "spec", "timeout", "max_steps", "retry_of", "attempt")
"""Labels left out of a fingerprint: the run's name, the fingerprint itself, the timeout (already
in it as the job's own), max_steps (in it as an argument) and a retry's place in its chain: a
schedule keeps its fingerprint."""


class SubmissionError(ValueError):
    """A request the console refuses to submit; the message says which field and why."""


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
        # validate_dataset.py DATASET --method <the kind's data: kinds.DATA_KIND>
        return [req.dataset, "--method", req.validates or "sft"]
    out: list[str] = []
    if req.kind == "embedding":
        out += ["--kind", req.encoder or "bi"]
    if req.kind == "grpo" and req.rewards:
        out += ["--rewards", req.rewards]
    for flag, attr in ARG_FIELDS:
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
