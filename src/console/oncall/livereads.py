"""Reading the live adapter versions a watch pass asks for (`StaleLiveCheck.read` says which).

Until a tenant's first run pushes, its adapter repo does not exist: at 10,000 tenants a first pass
would read 10,000 repos' refs one by one, each answering 404, minutes of requests after every start
until one pass had read them all. So the repos of an owner with at least `LIST_AT_LEAST` to read
are looked up in one listing of that owner's models (`HfApi.list_models(author=...)`): a repo it
does not list has no live version, as its 404 would have said, and is not read. A listing that
may be cut short (`LISTING_PAGE` models or more) or cannot be read decides nothing: each repo is
read. What was read is saved as the reads go (`SAVE_EVERY`), so a console that quits in the middle
of a pass does not read the same repos again on its next start.

No Textual, no console.ui, console.server or console.backend.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from console.oncall.store import LiveRead, OnCallStore

LIST_AT_LEAST = 20
"""An owner's repos are looked up in its listing when at least this many are to be read."""
LISTING_PAGE = 1000
"""A listing this long may be one page of more (the local Hub sends at most 1,000): not trusted."""
SAVE_EVERY = 200
"""Reads kept in the on-call store this many at a time while a pass reads."""
LISTING_TTL_S = 30.0
"""`OwnerListings`: an owner's listing is read again after this long."""


def absent_repos(api: Any, repos: Sequence[str]) -> set[str]:
    """The repos of `repos` that their owner's listing shows do not exist (see the module)."""
    by_owner: dict[str, list[str]] = {}
    for repo in repos:
        owner, slash, _ = repo.partition("/")
        if slash:
            by_owner.setdefault(owner, []).append(repo)
    absent: set[str] = set()
    for owner, wanted in by_owner.items():
        if len(wanted) >= LIST_AT_LEAST and (listed := owner_listing(api, owner)) is not None:
            absent.update(r for r in wanted if r.lower() not in listed)
    return absent


def owner_listing(api: Any, owner: str) -> frozenset[str] | None:
    """The ids (lowercased) of `owner`'s models, or None where the listing says nothing: it cannot
    be read, or it may be one page of more (`LISTING_PAGE`). Without it, each repo is read."""
    try:
        listed = frozenset(str(m.id).lower() for m in api.list_models(author=owner))
    except Exception:  # noqa: BLE001 - without the listing, each repo is read
        return None
    return listed if len(listed) < LISTING_PAGE else None


def read_live(api: Any, store: OnCallStore, repos: Sequence[str], at: float,
              known: dict[str, LiveRead]) -> list[tuple[str, Exception]]:
    """Read each repo's live version into `known` and the store; (repo, error) for each that
    could not be read."""
    from console.adapters import AdapterError, live_since

    absent = absent_repos(api, repos)
    problems: list[tuple[str, Exception]] = []
    fresh: list[LiveRead] = []
    for repo_id in repos:
        if repo_id in absent:
            live = None
        else:
            try:
                live = live_since(api, repo_id)
            except AdapterError as exc:
                problems.append((repo_id, exc))
                continue
        read = LiveRead(repo_id, live[0] if live else None, live[1].timestamp() if live else None, at)
        known[repo_id] = read
        fresh.append(read)
        if len(fresh) >= SAVE_EVERY:
            store.save_live_reads(fresh)
            fresh = []
    if fresh:
        store.save_live_reads(fresh)
    return problems


class OwnerListings:
    """Which repos do not exist, by their owner's listing of models, each owner listed at most once
    per LISTING_TTL_S: for a reader that asks about a few repos at a time, many times over (the
    failed runs' reasons read each run's record from its repo, six a refresh, 800 at 10,000
    tenants, most of whose repos no run has pushed to). A listing that may be cut short or cannot
    be read says nothing: every repo of that owner is read."""

    def __init__(self, api: Any, ttl_s: float = LISTING_TTL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.api = api
        self.ttl_s = ttl_s
        self.clock = clock
        self._listed: dict[str, tuple[float, frozenset[str] | None]] = {}

    def absent(self, repo_id: str) -> bool:
        """Whether its owner's listing (read now, or in the last `ttl_s`) lacks `repo_id`."""
        owner, slash, _ = repo_id.partition("/")
        if not slash:
            return False
        now = self.clock()
        entry = self._listed.get(owner)
        if entry is None or now - entry[0] >= self.ttl_s:
            entry = self._listed[owner] = (now, owner_listing(self.api, owner))
        return entry[1] is not None and repo_id.lower() not in entry[1]
