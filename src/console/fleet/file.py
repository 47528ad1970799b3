"""The fleet file: a TOML with top-level defaults, one ``[[tenant]]`` table per tenant and an
optional ``[builder]`` table for the builder model.

A tenant trains with its ``kind`` (``kinds.TENANT_KINDS``): ``sft`` (the default), ``dpo``,
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from console import jobspec
from console.costs import CostInputError, normalize_cron
from console.inputs import MIB, NAME_RULE, bucket_id_problem, is_label_name, read_user_file
from console.jobspec import TrainingRequest
from console.kinds import TENANT_KINDS, rewards_problem
from console.prices import PriceBook, shipped_price_book

FLEET_FILE_MAX_BYTES = 16 * MIB
"""A fleet file of 100,000 tenants is about 10 MiB; a bigger file is not read."""

@dataclass(frozen=True)
class Key:
    """One key of a tenant (or builder) table: its TOML type, whether a tenant must have it (in
    its table or from the top level), and what else its value must be."""

    kind: type | tuple[type, ...]
    required: bool = False
    check: Callable[[Any], str | None] | None = None
    """The problem with a value of the right type, after the key's name (None: none)."""


def _at_least(lo: int) -> Callable[[Any], str | None]:
    return lambda v: None if v >= lo else f"must be at least {lo}"


def _whole(lo: int, hi: int) -> Callable[[Any], str | None]:
    return lambda v: None if lo <= v <= hi else f"must be a whole number from {lo} to {hi}, got {v!r}"


def _one_of(options: Sequence[str]) -> Callable[[Any], str | None]:
    return lambda v: None if v in options else f"{v!r} must be one of {', '.join(options)}"


# `not (lo < x <= hi)`, never `x <= lo or x > hi`: NaN fails every comparison and must be refused
TENANT_KEYS: dict[str, Key] = {
    "id": Key(str, True, lambda v: None if is_label_name(v) else f"{v!r} {NAME_RULE}"),
    "dataset": Key(str, True),
    "examples": Key(int, True, _at_least(1)),
    "base_model": Key(str, True),
    "model_b": Key((int, float), True, lambda v: None if 0 < v <= 2000 else "must be from 0.001 to 2000"),
    "flavor": Key(str, True),
    "epochs": Key((int, float), True, lambda v: None if 0 < v <= 1000 else "must be from 0.01 to 1000"),
    "schedule": Key(str, True),
    "max_steps": Key(int, check=_at_least(1)),
    "learning_rate": Key((int, float), check=lambda v: None if 0 < v <= 1
                         else f"must be a number above 0 and at most 1, got {v!r}"),
    "lora_r": Key(int, check=_whole(1, 1024)),
    "lora_alpha": Key(int, check=_whole(1, 4096)),
    "unsloth": Key(bool),
    "hub_model_id": Key(str),
    "promote": Key(str, check=_one_of(jobspec.PROMOTE_POLICIES)),
    "promote_margin": Key((int, float), check=lambda v: None if 0 <= v < 1
                          else f"must be a share of the live loss, at least 0 and below 1, got {v!r}"),
    "suspend": Key(bool),
    "retry": Key(int, check=_whole(0, 10)),
    "retry_max_usd": Key((int, float), check=lambda v: None if 0 <= v <= 100_000
                         else f"must be a number from 0 to 100000, got {v!r}"),
    "kind": Key(str),
    "method": Key(str),  # the older name of `kind`, still read
    "encoder": Key(str, check=_one_of(jobspec.ENCODERS)),
    "rewards": Key(list, check=lambda v: rewards_problem(",".join(map(str, v)))
                   if v and all(isinstance(n, str) for n in v) else "must be a list of reward names"),
    "full": Key(bool),  # the builder's only
}
"""Every key a `[[tenant]]` or `[builder]` table may hold, declared once: the reading, the
messages and the docs follow from it."""
_TENANT_KEYS = set(TENANT_KEYS) - {"full"}
_BUILDER_KEYS = (_TENANT_KEYS - {"kind", "method", "encoder", "rewards"}) | {"full"}
_BUILDER_OWN = ("base_model", "model_b", "flavor")
"""What the builder table must say itself (the top-level defaults are the tenants')."""
_TOP_KEYS = {
    "base_model",
    "model_b",
    "flavor",
    "epochs",
    "schedule",
    "env",
    "max_steps",
    "learning_rate",
    "lora_r",
    "lora_alpha",
    "unsloth",
    "examples",
    "tenant",
    "name",
    "description",
    "trackio_project",
    "trackio_space_id",
    "datasets_cache",
    "hub_model_id",
    "promote",
    "promote_margin",
    "retry",
    "retry_max_usd",
    "builder",
}


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
    for key in doc:
        if key not in _TOP_KEYS:
            problems.append(f"unknown top-level key {key!r}")
    env = doc.get("env", default_env)
    if not is_label_name(env):
        problems.append(f"env {env!r} {NAME_RULE}")
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
    space = doc.get("trackio_space_id")
    if space is not None and (not isinstance(space, str) or not jobspec.SPACE_ID_RE.match(space)):
        problems.append(f"trackio_space_id {space!r} must be a Space id like org/trackio")
    cache = doc.get("datasets_cache")
    if cache is not None and (why := bucket_id_problem(cache)):
        problems.append(f"datasets_cache {why}")
    defaults = {k: v for k, v in doc.items() if k not in ("tenant", "builder", "env", "name", "description")}
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
    project = doc.get("trackio_project")
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
        if key not in (_BUILDER_KEYS if builder else _TENANT_KEYS):
            errors.append(f"{where}: unknown key {key!r}")
    if builder:
        errors.extend(f"{where}: {key} is required in [builder] (the defaults are the tenants')"
                      for key in _BUILDER_OWN if key not in raw)
    merged = {**defaults, **raw}
    if not builder and "kind" in raw and "method" in raw:
        errors.append(f"{where}: kind and method are one setting (method is its older name): keep kind")
    kind_key = "method" if "method" in raw and "kind" not in raw else "kind"
    v = {name: _read(name, merged, where, errors) for name in TENANT_KEYS
         if name not in ("kind", "method") and (builder or name != "full")
         and (not builder or name not in ("encoder", "rewards"))}

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
        if kind not in TENANT_KINDS:
            errors.append(f"{where}: {kind_key} {kind!r} must be one of {', '.join(TENANT_KINDS)}")
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
    which goes to `errors` in one line naming the key)."""
    key = TENANT_KEYS[name]
    value = merged.get(name)
    if value is None:
        if key.required:
            errors.append(f"{where}: {name} is required (in the tenant or at the top level)")
        return None
    if (isinstance(value, bool) and key.kind is not bool) or not isinstance(value, key.kind):
        errors.append(f"{where}: {name} must be a {_kind_name(key.kind)}, got {value!r}")
        return None
    if key.check is not None and (why := key.check(value)):
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


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "string", int: "whole number", float: "number", bool: "true/false"}
    if isinstance(kind, tuple):
        return "number" if float in kind else " or ".join(names.get(k, k.__name__) for k in kind)
    return names.get(kind, kind.__name__)


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
