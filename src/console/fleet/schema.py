"""Every key of a fleet file, declared once: a typed field of a msgspec Struct.

:class:`TenantDefaults` holds the keys a tenant may take from the file's top level;
:class:`TenantTable` is a ``[[tenant]]`` (or ``[builder]``) table, those keys and its own;
:class:`FleetTop` is the file's top level, those keys and the file's own. A field's type, bounds
and choices, whether a tenant must have it (``extra={"required": True}``) and any rule a type
cannot say (``extra={"problem": ...}``) are its declaration; :mod:`console.fleet.file` reads the
file by them, and its one-line messages are read off them (:func:`console.declared.problem`).
"""

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from console import declared, jobspec
from console.declared import Declared
from console.inputs import NAME_RULE, bucket_id_problem, is_label_name
from console.kinds import rewards_problem

_REQUIRED = {"required": True}


def _label(v: str) -> str | None:
    return None if is_label_name(v) else f"{v!r} {NAME_RULE}"


def _rewards(v: list[str]) -> str | None:
    return rewards_problem(",".join(v)) if v else "must be a list of reward names"


def _space_id(v: str) -> str | None:
    return None if jobspec.SPACE_ID_RE.match(v) else f"{v!r} must be a Space id like org/trackio"


def _bucket(v: str) -> str | None:
    return bucket_id_problem(v)


class TenantDefaults(msgspec.Struct, kw_only=True):
    """The keys a tenant may take from the file's top level (a tenant's own value wins)."""

    examples: Annotated[int, Meta(ge=1, extra=_REQUIRED)] | None = None
    base_model: Annotated[str, Meta(extra=_REQUIRED)] | None = None
    model_b: Annotated[float, Meta(gt=0, le=2000, extra=_REQUIRED)] | None = None
    flavor: Annotated[str, Meta(extra=_REQUIRED)] | None = None
    epochs: Annotated[float, Meta(gt=0, le=1000, extra=_REQUIRED)] | None = None
    schedule: Annotated[str, Meta(extra=_REQUIRED)] | None = None
    max_steps: Annotated[int, Meta(ge=1)] | None = None
    learning_rate: Annotated[float, Meta(gt=0, le=1)] | None = None
    lora_r: Annotated[int, Meta(ge=1, le=1024)] | None = None
    lora_alpha: Annotated[int, Meta(ge=1, le=4096)] | None = None
    unsloth: bool | None = None
    hub_model_id: str | None = None
    """A tenant's Hub repo, or (at the top level) the template of those that name none."""
    promote: Literal[jobspec.PROMOTE_POLICIES] | None = None  # type: ignore[valid-type]
    promote_margin: Annotated[float, Meta(ge=0, lt=1, extra={
        "expected": "a share of the live loss, at least 0 and below 1"})] | None = None
    retry: Annotated[int, Meta(ge=0, le=10)] | None = None
    retry_max_usd: Annotated[float, Meta(ge=0, le=100_000)] | None = None


class TenantTable(TenantDefaults):
    """A ``[[tenant]]`` table (and the ``[builder]`` table, less what only a tenant has)."""

    id: Annotated[str, Meta(extra={"required": True, "problem": _label})] | None = None
    dataset: Annotated[str, Meta(extra=_REQUIRED)] | None = None
    suspend: bool | None = None
    kind: str | None = None
    method: str | None = None
    """The older name of `kind`, still read."""
    encoder: Literal[jobspec.ENCODERS] | None = None  # type: ignore[valid-type]
    rewards: Annotated[list[str], Meta(extra={"problem": _rewards, "expected": "a list of reward names"})] | None = None
    full: bool | None = None
    """A full fine-tune: the builder's only."""


class FleetTop(TenantDefaults):
    """The file's top level: the tenants' defaults, and the file's own keys."""

    env: Annotated[str, Meta(extra={"problem": _label})] | None = None
    name: str | None = None
    description: str | None = None
    trackio_project: str | None = None
    trackio_space_id: Annotated[str, Meta(extra={"problem": _space_id})] | None = None
    datasets_cache: Annotated[str, Meta(extra={"problem": _bucket})] | None = None
    tenant: list[dict[str, Any]] | None = None
    builder: dict[str, Any] | None = None


_TABLE = declared.declared(TenantTable)
TENANT_KEYS: dict[str, Declared] = {"id": _TABLE["id"], "dataset": _TABLE["dataset"], **_TABLE}
"""Every key a `[[tenant]]` or `[builder]` table may hold (its id and dataset first)."""
TOP_KEYS: dict[str, Declared] = declared.declared(FleetTop)
"""Every key the file's top level may hold."""
DEFAULTS = tuple(declared.declared(TenantDefaults))
"""The keys a tenant takes from the top level."""
BUILDER_ONLY = ("full",)
TENANT_ONLY = ("kind", "method", "encoder", "rewards")
