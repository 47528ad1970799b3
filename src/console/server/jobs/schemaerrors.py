"""One line for a msgspec ValidationError: the field it names (``$.jobSpec.labels[...]`` becomes
``jobSpec.labels.team``, the key found in the body), what was expected in words, and the value.

msgspec says where a value broke its type (``- at `$.command[1]```) but, inside an object of
free keys (environment, secrets, labels), not which key: the body is walked to the first entry
that breaks the same type, as msgspec checks them in order.
"""

from __future__ import annotations

import re
import typing
from typing import Annotated, Any, Literal, get_args, get_origin

import msgspec

_SHAPE = re.compile(r"(?s)(.*?)(?: - at (`key` in )?`\$([^`]*)`)?")
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")
_NAMES = {"str": "a string", "int": "a whole number", "float": "a number", "bool": "true/false",
          "null": "null", "object": "an object", "array": "a list"}


def _words(types: str) -> str:
    kinds = [t.strip() for t in types.split("|")]
    if "float" in kinds and "int" in kinds:
        kinds.remove("int")
    words = [_NAMES.get(t, t) for t in kinds]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 100 else text[:100] + "..."


def _bare(tp: Any, value: Any = None) -> Any:
    """`tp` without Annotated and, of a union, the member that fits `value`'s JSON kind."""
    while True:
        if get_origin(tp) is Annotated:
            tp = get_args(tp)[0]
            continue
        if get_origin(tp) in (typing.Union, type(int | None)):
            members = [m for m in get_args(tp) if m is not type(None)]
            fit = [m for m in members if _fits(m, value)]
            tp = (fit or members)[0]
            continue
        return tp


def _fits(tp: Any, value: Any) -> bool:
    bare = get_args(tp)[0] if get_origin(tp) is Annotated else tp
    if isinstance(value, dict):
        return get_origin(bare) is dict or isinstance(bare, type) and issubclass(bare, msgspec.Struct)
    if isinstance(value, list):
        return get_origin(bare) is list
    return True


def _field(tp: Any, name: str) -> Any:
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        for f in msgspec.structs.fields(tp):
            if f.encode_name == name:
                return f.type
    return None


def _first_bad(items: dict[str, Any], tp: Any, *, keys: bool) -> str | None:
    """The first key of `items` whose key (or entry) breaks the dict type `tp`."""
    for key, val in items.items():
        try:
            msgspec.convert({key: val} if not keys else {key: None}, dict[get_args(tp)[0], Any] if keys else tp)
        except msgspec.ValidationError:
            return key
    return None


def decode_error(exc: msgspec.ValidationError, body: Any, kind: type[Any], what: str,
                 rules: dict[str, str], within: str = "") -> str:
    """The 400's message for `exc`, raised converting `body` to `kind`."""
    match = _SHAPE.fullmatch(str(exc))
    assert match is not None  # the pattern matches any text
    said, in_key, path = match.group(1), match.group(2), match.group(3) or ""
    names: list[str] = []
    value, tp, key = body, kind, None
    for step in _STEP.finditer(path):
        name, index = step.group(1), step.group(2)
        if name is not None:
            tp = _field(_bare(tp, value), name)
            value = value.get(name) if isinstance(value, dict) else None
            names.append("." + name)
        elif index == "...":
            tp = _bare(tp, value)
            bad = _first_bad(value, tp, keys=False) if isinstance(value, dict) and tp else None
            value = value.get(bad) if isinstance(value, dict) else None
            tp = get_args(tp)[1] if get_origin(tp) is dict else None
            names.append(f".{bad}" if bad is not None else "")
        else:
            tp = _bare(tp, value)
            tp = get_args(tp)[0] if get_origin(tp) is list else None
            value = value[int(index)] if isinstance(value, list) and int(index) < len(value) else None
            names.append(f"[{index}]")
    field = "".join(names).lstrip(".")
    field = f"{within}.{field}" if within and field else field
    if m := re.fullmatch(r"Object missing required field `(.*)`", said):
        return f"{field + '.' if field else ''}{m.group(1)} is required"
    if not field and not said.startswith(("Expected", "Invalid")):
        return said  # a struct's own check, naming its field
    field = field or what
    if in_key:
        tp = _bare(tp, value)
        key = _first_bad(value, tp, keys=True) if isinstance(value, dict) and get_origin(tp) is dict else None
    last = next((n[1:] for n in reversed(names) if n.startswith(".")), "value")
    if ".secrets" in names and key is None:
        value = _Hidden()  # a secret's value is never echoed: only its name and what is wrong
    return f"{field}: {_explain(said, value, tp, key, rules, last)}"


class _Hidden:
    def __repr__(self) -> str:
        return "(a secret value, not shown)"


def _explain(said: str, value: Any, tp: Any, key: str | None, rules: dict[str, str], name: str) -> str:
    shown = _shown(key if key is not None else value)
    invalid = "invalid key" if key is not None else "invalid value"
    if m := re.fullmatch(r"Expected `[^`]*` matching regex '(.*)'", said, re.S):
        rule = next((r for p, r in rules.items() if repr(p)[1:-1] == m.group(1)), None)
        return f"{invalid} {shown}: {rule or 'must match ' + m.group(1)}"
    if said.startswith("Invalid enum value"):
        known = [v for v in get_args(_bare(tp, value)) if v] if get_origin(_bare(tp, value)) is Literal else []
        return f"unknown {name} {shown}" + (f"; known: {', '.join(map(str, known))}" if known else "")
    if m := re.fullmatch(r"Expected `([^`]*)`, got `([^`]*)`", said):
        return f"expected {_words(m.group(1))}, got {_words(m.group(2))}"
    if m := re.fullmatch(r"Expected `([^`]*)` (.*)", said, re.S):
        got = f"{len(value)} entries" if isinstance(value, (list, dict)) else shown
        bound = re.sub(r"(\d)\.0\b", r"\1", m.group(2))  # `>= 1.0` of a float field: `>= 1`
        return f"expected {_words(m.group(1))} {bound}, got {got}"
    return said
