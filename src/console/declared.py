"""Settings declared once, as typed fields of a msgspec Struct, and everything read off them.

A setting (a key of the config, of a fleet file's tenant table) is one annotated field: its type,
its bounds (``msgspec.Meta(ge=, le=, gt=, lt=, pattern=, max_length=)``), its default and its
description (``Meta(description=)``). What a rule of the type cannot say goes in
``Meta(extra=...)``:

- ``"check"``: a function of the value that returns the value to keep (normalized) or raises
  ``TypeError`` with what it expected (a URL's host and port);
- ``"problem"``: the fleet file's form of the same: the problem with the value as text, or None;
- ``"expected"``: the words for what the key takes, when the type's own would not say it well
  ("a known flavor (l4x1, ...)");
- ``"required"``: the fleet file's keys a tenant must have.

:func:`check` checks one value (strictly: no ``"1"`` for 1, no ``true`` for 1, no NaN past a
bound) and :func:`expected` words what the key takes, both read off the same declaration. Imports
msgspec and the standard library only.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import msgspec
from msgspec import inspect as mi


@dataclass(frozen=True)
class Declared:
    """One declared field: its name, the type as written (with its Meta) and what is read off it."""

    name: str
    type: Any
    default: Any
    info: Any
    """The type as msgspec describes it, its Meta and `| None` taken off (``msgspec.inspect``)."""
    doc: str
    extra: dict[str, Any]
    choices: tuple[Any, ...] = ()
    """A Literal's values in their declared order (msgspec's description sorts them)."""

    @property
    def required(self) -> bool:
        return bool(self.extra.get("required"))


def declared(cls: type[msgspec.Struct]) -> dict[str, Declared]:
    """The fields of `cls`, in their declared order, each with what its declaration says."""
    out: dict[str, Declared] = {}
    described = {f.name: f.type for f in mi.type_info(cls).fields}  # one description of the Struct
    for f in msgspec.structs.fields(cls):
        info, doc, extra = _unwrap(described[f.name])
        default = f.default_factory() if f.default_factory is not msgspec.NODEFAULT else f.default
        out[f.name] = Declared(f.name, f.type, None if default is msgspec.NODEFAULT else default,
                               info, doc, extra, _choices(f.type))
    return out


def _choices(tp: Any) -> tuple[Any, ...]:
    if typing.get_origin(tp) is Literal:
        return typing.get_args(tp)
    for arg in typing.get_args(tp):
        if found := _choices(arg):
            return found
    return ()


def _unwrap(info: Any) -> tuple[Any, str, dict[str, Any]]:
    doc, extra = "", {}
    while True:
        if isinstance(info, mi.Metadata):
            doc = (info.extra_json_schema or {}).get("description", doc)
            extra = {**(info.extra or {}), **extra}
            info = info.type
        elif isinstance(info, mi.UnionType) and any(isinstance(t, mi.NoneType) for t in info.types):
            rest = [t for t in info.types if not isinstance(t, mi.NoneType)]
            if len(rest) != 1:
                return info, doc, extra
            info = rest[0]
        else:
            return info, doc, extra


def check(field: Declared, value: Any) -> Any:
    """`value` as the field keeps it; a TypeError saying what was expected (:func:`expected`) when
    its type, its bounds or its own check (``extra["check"]``) refuse it."""
    kept = _convert(field, value)
    if kept is _REFUSED:
        raise TypeError(expected(field))
    own: Callable[[Any], Any] | None = field.extra.get("check")
    return own(kept) if own is not None else kept


def problem(field: Declared, value: Any) -> str | None:
    """What is wrong with `value` for the field, in the fleet file's words after the key's name
    (``must be a whole number, got 'ten'``), or None; ``extra["problem"]`` words its own rule."""
    info = field.info
    if _convert(field, value) is _REFUSED:
        if isinstance(info, mi.LiteralType):
            return f"{value!r} must be one of {', '.join(map(str, field.choices))}"
        what = kind_words(info)
        if "expected" in field.extra:
            what = field.extra["expected"]
        elif _is_kind(value, info) and (bounds := bound_words(info)):
            what = f"{what} {bounds}"
        return f"must be {what}, got {value!r}"
    own: Callable[[Any], str | None] | None = field.extra.get("problem")
    return own(value) if own is not None else None


_REFUSED = object()


def _convert(field: Declared, value: Any) -> Any:
    try:
        kept = msgspec.convert(value, field.type, strict=True)
    except msgspec.ValidationError:
        return _REFUSED
    if isinstance(kept, float) and not math.isfinite(kept):  # no NaN or infinity, bounded or not
        return _REFUSED
    return kept


def expected(field: Declared) -> str:
    """What the field takes, in words: "a whole number from 1 to 64", "one of warn | suspend"."""
    if "expected" in field.extra:
        return field.extra["expected"]
    info = field.info
    if isinstance(info, mi.LiteralType):
        return "one of " + " | ".join(map(str, field.choices))
    bounds = bound_words(info)
    return f"{kind_words(info)} {bounds}" if bounds else kind_words(info)


def kind_words(info: Any) -> str:
    if isinstance(info, mi.BoolType):
        return "true or false"
    if isinstance(info, mi.IntType):
        return "a whole number"
    if isinstance(info, mi.FloatType):
        return "a number"
    if isinstance(info, mi.StrType):
        return "a string"
    if isinstance(info, (mi.ListType, mi.TupleType, mi.VarTupleType)):
        return "a list"
    if isinstance(info, (mi.DictType, mi.StructType)):
        return "a table"
    return "a value"


def bound_words(info: Any) -> str:
    """The bounds of a number ("from 1 to 64", "at least 1", "above 0 and at most 1"), or ""."""
    if not isinstance(info, (mi.IntType, mi.FloatType)):
        return ""
    lo, hi = info.ge if info.ge is not None else info.gt, info.le if info.le is not None else info.lt
    show = (lambda v: f"{v:g}") if isinstance(info, mi.FloatType) else str
    if info.ge is not None and info.le is not None:
        return f"from {show(lo)} to {show(hi)}"
    low = f"at least {show(lo)}" if info.ge is not None else f"above {show(lo)}" if lo is not None else ""
    high = f"at most {show(hi)}" if info.le is not None else f"below {show(hi)}" if hi is not None else ""
    return " and ".join(w for w in (low, high) if w)


def _is_kind(value: Any, info: Any) -> bool:
    if isinstance(info, mi.BoolType):
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if isinstance(info, mi.IntType):
        return isinstance(value, int)
    if isinstance(info, mi.FloatType):
        return isinstance(value, (int, float))
    if isinstance(info, mi.StrType):
        return isinstance(value, str)
    if isinstance(info, mi.ListType):
        return isinstance(value, list)
    return True
