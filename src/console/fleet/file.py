"""The fleet file: a TOML with top-level defaults, one ``[[tenant]]`` table per tenant and an
optional ``[builder]`` table for the builder model.

A tenant trains with its ``kind`` (``jobspec.TENANT_KINDS``): ``sft`` (the default), ``dpo``,
``kto``, ``grpo`` (LoRA adapters; GRPO with ``rewards = ["numeric", "format", "mine.py"]``, the
built-in rewards and modules shipped beside the dataset), ``reward`` (a reward model on preference
pairs) or ``embedding`` (a sentence-transformers model, ``encoder = "bi" | "cross" | "sparse"``). The
builder model (reference §4(a): one larger model retrained on its own cadence) is its own table,
``full = true`` for a full fine-tune; it takes the top-level defaults too, except ``base_model``,
``model_b`` and ``flavor``, which it must name (a builder is not a tenant's size). It becomes one
more :class:`TenantSpec` of kind ``builder`` (``id`` defaults to ``builder``), so it is applied,
listed and costed like a tenant, as its own row.

:func:`load_fleet_file` reads it and checks it against itself: every problem (duplicate tenant
ids, a bad cron, an unknown flavor, a run that does not fit its flavor's GPU memory, a missing
dataset) is reported at once in a :class:`FleetFileError`. The file says what the fleet should be; the plan
in :mod:`console.fleet.apply` makes the scheduled jobs match it.

Imports console.jobspec, console.costs and console.prices: no Textual, no console.ui or
console.server, no network, no training stack.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from console import declared, jobspec
from console.cron import normalize_cron
from console.fleet.schema import BUILDER_ONLY, DEFAULTS, TENANT_KEYS, TENANT_ONLY, TOP_KEYS
from console.inputs import MIB, CostInputError, read_user_file
from console.jobspec import TrainingRequest
from console.kinds import TENANT_KINDS
from console.prices import PriceBook, shipped_price_book

FLEET_FILE_MAX_BYTES = 16 * MIB
"""A fleet file of 100,000 tenants is about 10 MiB; a bigger file is not read."""

_BUILDER_OWN = ("base_model", "model_b", "flavor")
"""What the builder table must say itself (the top-level defaults are the tenants')."""
_BUILDER_KEYS = {k: f for k, f in TENANT_KEYS.items() if k not in TENANT_ONLY}
_PLAIN_KEYS = {k: f for k, f in TENANT_KEYS.items() if k not in BUILDER_ONLY}
_SAID = object()
"""A top-level default whose problem the file's top level says (once, not for every tenant)."""
METHODS = TENANT_KINDS
"""A tenant's `kind`: what its runs train (the job's `kind=` label, as everywhere else)."""


class FleetFileError(ValueError):
    """A fleet file that cannot be applied; `problems` lists every reason, one line each."""

    def __init__(self, path: Path | str, problems: Sequence[str]) -> None:
        self.path = str(path)
        self.problems = list(problems)
        super().__init__(f"{path}: " + "; ".join(self.problems))


@dataclass(frozen=True)
class TenantSpec:
    """One tenant as the fleet file declares it (defaults already applied)."""

    id: str
    dataset: str
    examples: int
    base_model: str
    model_b: float
    flavor: str
    epochs: float
    schedule: str
    max_steps: int | None = None
    learning_rate: float | None = None
    lora_r: int | None = None
    lora_alpha: int | None = None
    unsloth: bool = False
    hub_model_id: str | None = None
    promote: str | None = None
    """on_pass: a passing run moves the repo's live tag; on_eval: an evaluation job does when the
    run beats the live adapter; None (manual): an engineer promotes."""
    promote_margin: float | None = None
    """on_eval: the share of the live loss a new adapter must beat (None: the default, 1%)."""
    suspend: bool = False
    retry: int = 0
    """Times a watching console resumes a run killed by its timeout or the infrastructure."""
    retry_max_usd: float | None = None
    """The most the retries of one run may cost together."""
    kind: str = "sft"
    """sft | dpo | kto | grpo | reward | embedding (the tenant's `method`), or builder."""
    encoder: str | None = None
    rewards: str | None = None
    """A GRPO tenant's rewards, comma-separated (the fleet file's list)."""
    full: bool = False

    @property
    def is_builder(self) -> bool:
        return self.kind == "builder"

    def request(
        self, env: str, trackio_project: str | None = None, trackio_space_id: str | None = None
    ) -> TrainingRequest:
        return TrainingRequest(
            tenant=self.id,
            dataset=self.dataset,
            base_model=self.base_model,
            model_b=self.model_b,
            examples=self.examples,
            epochs=self.epochs,
            flavor=self.flavor,
            env=env,
            unsloth=self.unsloth,
            max_steps=self.max_steps,
            learning_rate=self.learning_rate,
            lora_r=self.lora_r,
            lora_alpha=self.lora_alpha,
            hub_model_id=self.hub_model_id,
            promote=self.promote,
            promote_margin=self.promote_margin,
            retry=self.retry,
            retry_max_usd=self.retry_max_usd,
            kind=self.kind,
            encoder=self.encoder,
            rewards=self.rewards,
            full=self.full,
            scheduled=True,
            trackio_project=trackio_project,
            trackio_space_id=trackio_space_id,
        )


@dataclass(frozen=True)
class FleetFile:
    path: Path
    env: str
    tenants: tuple[TenantSpec, ...]
    trackio_project: str | None = None
    trackio_space_id: str | None = None
    """The Trackio Space the fleet's Hub runs log to (overrides the config's `trackio.space_id`)."""
    hub_model_id: str | None = None
    """The destination template of tenants that name none (`org/adapter-{tenant}`), as written."""
    datasets_cache: str | None = None
    """The bucket the fleet's runs cache their Hub datasets in (overrides the config's
    `defaults.datasets_cache`): mounted at /data, `HF_DATASETS_CACHE=/data/datasets`."""

    def tenant(self, tenant_id: str) -> TenantSpec:
        for t in self.tenants:
            if t.id == tenant_id:
                return t
        raise KeyError(tenant_id)

    @property
    def builder(self) -> TenantSpec | None:
        """The builder model's spec (one of `tenants`, of kind builder), if the file has one."""
        return next((t for t in self.tenants if t.is_builder), None)




def load_fleet_file(
    path: Path | str,
    *,
    default_env: str = "dev",
    prices: PriceBook | None = None,
    backend_kind: str = "local",
) -> FleetFile:
    """Read and check a fleet file; raise FleetFileError listing every problem found."""
    p = Path(path).expanduser()
    try:
        text = read_user_file(p, max_bytes=FLEET_FILE_MAX_BYTES).decode("utf-8")
    except OSError as exc:
        raise FleetFileError(p, [f"cannot be read: {exc.strerror or exc}"]) from None
    except UnicodeDecodeError as exc:
        raise FleetFileError(p, [f"byte {exc.start}: expected UTF-8 text"]) from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FleetFileError(p, [f"not valid TOML: {exc}"]) from None
    except RecursionError:
        raise FleetFileError(p, ["not valid TOML: arrays or tables nested too deeply"]) from None
    return parse_fleet(doc, p, default_env=default_env, prices=prices, backend_kind=backend_kind)


def parse_fleet(
    doc: dict[str, Any],
    path: Path,
    *,
    default_env: str = "dev",
    prices: PriceBook | None = None,
    backend_kind: str = "local",
) -> FleetFile:
    prices = prices or shipped_price_book()
    problems: list[str] = []
    bad_defaults: set[str] = set()  # said once here, not again for every tenant that takes it
    for key, value in doc.items():
        if key not in TOP_KEYS:
            problems.append(f"unknown top-level key {key!r}")
        elif key not in ("tenant", "builder", "hub_model_id") and (why := declared.problem(TOP_KEYS[key], value)):
            problems.append(f"{key} {why}")
            bad_defaults.add(key)
    env = doc.get("env", default_env)
    if "env" in bad_defaults:
        env = default_env
    raw_tenants = doc.get("tenant", [])
    if not isinstance(raw_tenants, list) or not all(isinstance(t, dict) for t in raw_tenants):
        raise FleetFileError(path, [*problems, "tenants must be [[tenant]] tables"])
    raw_builder = doc.get("builder")
    if raw_builder is not None and not isinstance(raw_builder, dict):
        raise FleetFileError(path, [*problems, "builder must be a [builder] table"])
    template = doc.get("hub_model_id")
    if template is not None and (why := jobspec.hub_model_id_problem(template, template=True)):
        problems.append(f"hub_model_id {why}")
        bad_defaults.add("hub_model_id")
    space, cache, project = doc.get("trackio_space_id"), doc.get("datasets_cache"), doc.get("trackio_project")
    # a bad default is said once, above: a tenant that takes it says nothing more of it
    defaults = {k: _SAID if k in bad_defaults else v for k, v in doc.items() if k in DEFAULTS}
    tenants: list[TenantSpec] = []
    kept: set[str] = set()  # the ids in `tenants` (a set: 100,000 tenants check in linear time)
    seen: dict[str, int] = {}
    dataset_of: dict[str, str] = {}  # dataset (jobspec.dataset_key) -> the first tenant training on it
    pushes_to: dict[str, str] = {}  # destination -> the first tenant pushing to it
    tables: list[tuple[dict[str, Any], bool]] = [(t, False) for t in raw_tenants]
    if raw_builder is not None:
        tables.append(({"id": "builder", **raw_builder}, True))
    for index, (raw, is_builder) in enumerate(tables, start=1):
        where = f"tenant #{index}"
        tid = raw.get("id")
        if isinstance(tid, str) and tid:
            where = f"builder {tid!r}" if is_builder else f"tenant {tid!r}"
        spec, errors = _tenant(raw, defaults, where, path.parent, prices, backend_kind, builder=is_builder)
        problems.extend(errors)
        if isinstance(tid, str) and tid:
            if tid in seen:
                problems.append(f"duplicate tenant id {tid!r} (tenants #{seen[tid]} and #{index})")
            else:
                seen[tid] = index
        if spec is not None and spec.dataset:
            owner = dataset_of.setdefault(jobspec.dataset_key(spec.dataset), spec.id)
            if owner != spec.id:
                problems.append(
                    f"tenants {owner!r} and {spec.id!r} both train on {spec.dataset}: "
                    "each tenant trains only on its own data"
                )
        if spec is not None and spec.hub_model_id:
            owner = pushes_to.setdefault(spec.hub_model_id, spec.id)
            if owner != spec.id:
                problems.append(
                    f"tenants {owner!r} and {spec.id!r} both push to {spec.hub_model_id}: "
                    "each tenant's adapter goes to its own repo"
                )
        if spec is not None and spec.id not in kept:
            kept.add(spec.id)
            tenants.append(spec)
    if problems:
        raise FleetFileError(path, problems)
    return FleetFile(
        path=path,
        env=env,
        tenants=tuple(tenants),
        trackio_project=project if isinstance(project, str) else None,
        trackio_space_id=space if isinstance(space, str) else None,
        hub_model_id=template if isinstance(template, str) else None,
        datasets_cache=cache if isinstance(cache, str) else None,
    )


def _tenant(
    raw: dict[str, Any],
    defaults: dict[str, Any],
    where: str,
    base: Path,
    prices: PriceBook,
    backend_kind: str,
    *,
    builder: bool = False,
) -> tuple[TenantSpec | None, list[str]]:
    errors: list[str] = []
    for key in raw:
        if key not in (_BUILDER_KEYS if builder else _PLAIN_KEYS):
            errors.append(f"{where}: unknown key {key!r}")
    if builder:
        errors.extend(f"{where}: {key} is required in [builder] (the defaults are the tenants')"
                      for key in _BUILDER_OWN if key not in raw)
    merged = {**defaults, **raw}
    if not builder and "kind" in raw and "method" in raw:
        errors.append(f"{where}: kind and method are one setting (method is its older name): keep kind")
    kind_key = "method" if "method" in raw and "kind" not in raw else "kind"
    v = {name: _read(name, merged, where, errors) for name in (_BUILDER_KEYS if builder else _PLAIN_KEYS)
         if name not in ("kind", "method")}

    tid, hub_model_id, promote = v["id"], v["hub_model_id"], v["promote"]
    if v["dataset"] is not None:
        v["dataset"] = _resolve_dataset(v["dataset"], base, backend_kind, where, errors)
    if hub_model_id is not None and tid is not None:
        hub_model_id = jobspec.hub_model_id_for(tid, hub_model_id)  # org/adapter-{tenant}
        if "hub_model_id" in raw and (why := jobspec.hub_model_id_problem(hub_model_id)):
            errors.append(f"{where}: hub_model_id {why}")
    if promote is not None and hub_model_id is None:
        errors.append(f"{where}: promote is for a tenant with a hub_model_id (the repo whose live tag it moves)")
    if v["retry"] and hub_model_id is None:
        errors.append(f"{where}: retry is for a tenant with a hub_model_id (the repo its checkpoints are pushed to)")
    promote = None if promote == "manual" else promote  # manual is the default: nothing to pass
    margin = v["promote_margin"]
    if margin is not None and promote != "on_eval":
        errors.append(f"{where}: promote_margin is for promote = \"on_eval\" (the margin its evaluation asks)")
    kind, encoder = "builder", None
    if not builder:
        kind = _read(kind_key, merged, where, errors) or "sft"
        if kind not in METHODS:
            errors.append(f"{where}: {kind_key} {kind!r} must be one of {', '.join(METHODS)}")
            kind = "sft"
        encoder = v["encoder"]
        if encoder is not None and kind != "embedding":
            errors.append(f"{where}: encoder is for kind = \"embedding\"")
        elif kind == "embedding":
            encoder = encoder or "bi"
    rewards = ",".join(v["rewards"]) if v.get("rewards") else None
    if rewards is not None and kind != "grpo":
        errors.append(f"{where}: rewards are for kind = \"grpo\"")
    elif rewards is not None and v["dataset"] is not None and v["dataset"].startswith("/"):
        for name in rewards.split(","):  # a module shipped beside a local dataset file must be there
            if name.endswith(".py") and not (Path(v["dataset"]).parent / name).is_file():
                errors.append(f"{where}: reward module {name} is not beside the dataset {v['dataset']}")
    full = bool(v.get("full"))
    schedule, flavor, model_b = v["schedule"], v["flavor"], v["model_b"]
    if schedule is not None:
        try:
            schedule = normalize_cron(schedule)
        except CostInputError as exc:
            errors.append(f"{where}: schedule: {exc}")
            schedule = None
    if flavor is not None:
        flavor = _check_flavor(flavor, model_b, kind, full, v["lora_r"], bool(v["unsloth"]), prices, where, errors)
    required = (tid, v["dataset"], v["examples"], v["base_model"], model_b, flavor, v["epochs"], schedule)
    if errors or None in required:
        return None, errors
    learning_rate = v["learning_rate"]
    return (
        TenantSpec(
            id=tid,
            dataset=v["dataset"],
            examples=int(v["examples"]),
            base_model=v["base_model"],
            model_b=float(model_b),
            flavor=flavor,
            epochs=float(v["epochs"]),
            schedule=schedule,
            max_steps=v["max_steps"],
            learning_rate=float(learning_rate) if learning_rate is not None else None,
            lora_r=v["lora_r"],
            lora_alpha=v["lora_alpha"],
            unsloth=bool(v["unsloth"]),
            hub_model_id=hub_model_id,
            promote=promote,
            promote_margin=float(margin) if margin is not None else None,
            suspend=bool(v["suspend"]),
            retry=int(v["retry"] or 0),
            retry_max_usd=float(v["retry_max_usd"]) if v["retry_max_usd"] is not None else None,
            kind=kind,
            encoder=encoder,
            rewards=rewards,
            full=full,
        ),
        errors,
    )


def _read(name: str, merged: dict[str, Any], where: str, errors: list[str]) -> Any:
    """The value of key `name` as :data:`TENANT_KEYS` declares it, or None (absent, or a problem,
    which goes to `errors` in one line naming the key; a bad top-level default is said already)."""
    key = TENANT_KEYS[name]
    value = merged.get(name)
    if value is _SAID:
        return None
    if value is None:
        if key.required:
            errors.append(f"{where}: {name} is required (in the tenant or at the top level)")
        return None
    if why := declared.problem(key, value):
        errors.append(f"{where}: {name} {why}")
        return None
    return value


def _check_flavor(flavor: str, model_b: float | None, kind: str, full: bool, lora_r: int | None, unsloth: bool,
                  prices: PriceBook, where: str, errors: list[str]) -> str | None:
    """`flavor` when it is a known GPU flavor that holds the run (the memory estimate), else None
    with the reason in `errors`."""
    if flavor not in prices:
        known = ", ".join(f.name for f in prices.gpu_flavors()[:8])
        errors.append(f"{where}: unknown flavor {flavor!r} (known: {known}, ...)")
        return None
    if not prices.get(flavor).is_gpu:
        errors.append(f"{where}: {flavor} is a CPU flavor; training needs a GPU flavor")
        return None
    if model_b is not None:
        req = TrainingRequest(tenant="t", dataset="d", model_b=float(model_b), flavor=flavor, kind=kind, full=full,
                              lora_r=lora_r, unsloth=unsloth)
        if why := jobspec.fit_problem(req, prices):
            errors.append(f"{where}: a {model_b:g}B model does not fit {flavor}: {why}")
    return flavor


def _looks_local(dataset: str) -> bool:
    return dataset.startswith((".", "/", "~")) or dataset.endswith((".jsonl", ".json", ".csv"))


def _resolve_dataset(
    dataset: str, base: Path, backend_kind: str, where: str, errors: list[str]
) -> str | None:
    if not _looks_local(dataset):
        return dataset  # a Hub dataset id
    if backend_kind == "hub":
        errors.append(
            f"{where}: dataset {dataset!r} is a local file; HF Jobs cannot read local files "
            "(push it as a Hub dataset and use its id)"
        )
        return None
    path = (base / Path(dataset).expanduser()).resolve()
    if not path.is_file():
        errors.append(f"{where}: dataset file {path} does not exist")
        return None
    return str(path)
