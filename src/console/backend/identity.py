"""Who the hub backend runs jobs as: the namespace from `whoami`, cached, and checked.

On huggingface.co the namespace jobs run under is an account the token can use: its user, or one
of its orgs. The OS user name (the config's default) means nothing there, so with no `namespace`
in the config the hub backend takes the token's user name from `whoami`; a configured namespace
the token cannot use is refused in one line before any job call fails on it.

`whoami` is rate-limited on huggingface.co, so its answer is kept: in this process (huggingface_hub's
own `whoami(cache=True)`) and on disk for :data:`FRESH_SECONDS` (``<data dir>/whoami.json``, keyed
by a hash of the endpoint and token, holding only the user and org names). When `whoami` cannot be
reached, an older kept answer still names the account.

Imports huggingface_hub, console.paths and console.config's atomic writer; never the server or UI.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

from console import paths
from console.backend.errors import BackendError

FRESH_SECONDS = 6 * 3600
"""How long a kept `whoami` answer is used without asking again."""
CACHE_FILENAME = "whoami.json"


@dataclass(frozen=True)
class Identity:
    """The account a token belongs to: its user name and the orgs it is a member of."""

    name: str
    orgs: tuple[str, ...] = ()

    @property
    def namespaces(self) -> tuple[str, ...]:
        return (self.name, *self.orgs)

    @classmethod
    def from_whoami(cls, doc: Any) -> Identity | None:
        if not isinstance(doc, dict) or not isinstance(doc.get("name"), str) or not doc["name"]:
            return None
        orgs = []
        for org in doc.get("orgs") or []:  # whoami-v2 gives objects; the kept answer, names
            name = org.get("name") if isinstance(org, dict) else org
            if isinstance(name, str) and name:
                orgs.append(name)
        return cls(doc["name"], tuple(orgs))


def _key(endpoint: str, token: str) -> str:
    return hashlib.sha256(f"{endpoint}\0{token}".encode()).hexdigest()[:24]


def _read_cache() -> dict[str, Any]:
    try:
        doc = json.loads((paths.data_dir() / CACHE_FILENAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _write_cache(key: str, identity: Identity) -> None:
    from console.config import atomic_write_bytes

    doc = _read_cache()
    doc[key] = {"name": identity.name, "orgs": list(identity.orgs), "at": time.time()}
    try:
        path = paths.data_dir() / CACHE_FILENAME
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, json.dumps(doc).encode("utf-8"))
    except OSError:
        pass  # a cache: the next start asks again


def whoami(api: Any, *, now: float | None = None) -> tuple[Identity | None, str]:
    """The token's account, and why not when unknown. A kept answer younger than FRESH_SECONDS is
    used as is; else `whoami` is asked, and an older kept answer stands in when it cannot answer."""
    from huggingface_hub import get_token

    token = api.token if isinstance(getattr(api, "token", None), str) else get_token()
    if not token:
        return None, "not logged in to the Hub (`hf auth login`, or set HF_TOKEN)"
    now = time.time() if now is None else now
    key = _key(str(api.endpoint), token)
    kept = _read_cache().get(key)
    identity = Identity.from_whoami(kept) if isinstance(kept, dict) else None
    if identity is not None and now - float(kept.get("at") or 0) < FRESH_SECONDS:
        return identity, ""
    try:
        fresh = Identity.from_whoami(api.whoami(token=token, cache=True))
    except Exception as exc:  # noqa: BLE001 (any failure: the kept answer, or the reason)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return identity, f"whoami failed: {first}"
    if fresh is None:
        return identity, "whoami gave no user name"
    _write_cache(key, fresh)
    return fresh, ""


def hub_namespace(api: Any, configured: str | None) -> str:
    """The namespace the hub backend runs jobs under: `configured` when the token can use it, the
    token's user name when none is configured. Raises BackendError (one line) when the configured
    one is not the token's user nor one of its orgs, or when there is none and whoami cannot say."""
    identity, why = whoami(api)
    if identity is None:
        if configured:
            return configured  # cannot check: the job calls will say what is wrong
        raise BackendError(
            f"cannot tell which namespace to run jobs under ({why}); "
            "set one with `console config set namespace NAME`"
        )
    if configured is None:
        return identity.name
    if configured not in identity.namespaces:
        orgs = ", ".join(identity.orgs) or "none"
        raise BackendError(
            f"namespace {configured!r} is not usable with this token: it belongs to {identity.name!r} "
            f"(orgs: {orgs}); set namespace to one of them, or unset it to use {identity.name!r}"
        )
    return configured
