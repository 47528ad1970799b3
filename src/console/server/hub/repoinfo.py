"""What the local Hub answers about a repo beyond its files: its info (siblings, the model card's
tags, `library_name` and `cardData`), the listing of a type's repos (each with its card's tags,
`library_name` and `pipeline_tag`, as huggingface.co lists them) and each listed file's last commit
(`expand=true`)."""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from console.server.hub.repofiles import Commit, Tree, lfs_pointer
from console.server.hub.repomatch import card_data, card_tags
from console.server.hub.repos import DEFAULT_BRANCH, HubError, RepoStore
from console.server.jobs.wire import iso

_CARDS: dict[str, dict[str, Any] | None] = {}
"""README blob SHA-256 -> its card metadata (a blob never changes)."""
_LOCK = threading.Lock()
_LISTED: dict[tuple[str, str, str], dict[str, Any]] = {}
"""(type, repo, commit) -> what a listing shows of its card (a commit never changes)."""
CARD_FIELDS = ("library_name", "pipeline_tag")


def add_last_commits(store: RepoStore, repo_type: str, repo_id: str, commit: Commit, items: list[dict[str, Any]],
                     limit: int = 1000) -> list[dict[str, Any]]:
    """Give each listed file or folder its `lastCommit` (`expand=true`): the newest commit, from
    `commit` back, that changed it (within `limit` commits)."""
    def state(tree: Tree, path: str) -> Any:
        if path in tree:
            return tree[path]
        return tuple(sorted((p, e.oid, e.sha256) for p, e in tree.items() if p.startswith(path + "/"))) or None

    pending = {item["path"] for item in items}
    found: dict[str, Commit] = {}
    cur, now = commit, {p: state(commit.tree, p) for p in pending}
    for _ in range(limit):
        if not pending:
            break
        parent = store.commit(repo_type, repo_id, cur.parent) if cur.parent else None
        before = {p: state(parent.tree, p) if parent else None for p in pending}
        for p in list(pending):
            if before[p] != now[p]:
                found[p] = cur
                pending.discard(p)
        if parent is None:
            break
        cur, now = parent, before
    for item in items:
        c = found.get(item["path"])
        if c is not None:
            item["lastCommit"] = {"id": c.oid, "title": c.title, "date": iso(c.created_at)}
    return items


def repo_info(store: RepoStore, repo_type: str, repo_id: str, commit: Commit, files_metadata: bool) -> dict[str, Any]:
    """The repo's info at `commit`, as `model_info` / `dataset_info` read it."""
    siblings = []
    for path in sorted(commit.tree):
        sib: dict[str, Any] = {"rfilename": path}
        if files_metadata:
            entry = commit.tree[path]
            sib.update(size=entry.size, blobId=entry.oid)
            if entry.lfs:
                sib["lfs"] = {"sha256": entry.sha256, "size": entry.size,
                              "pointerSize": len(lfs_pointer(entry.sha256, entry.size))}
        siblings.append(sib)
    author = repo_id.split("/")[0]
    out: dict[str, Any] = {
        "_id": hashlib.sha1(f"{repo_type}/{repo_id}".encode()).hexdigest()[:24], "id": repo_id,
        "author": author, "sha": commit.oid, "lastModified": iso(commit.created_at),
        "createdAt": iso(store.created_at(repo_type, repo_id)), "private": store.private(repo_type, repo_id),
        "gated": False, "disabled": False, "downloads": 0, "likes": 0, "tags": [], "siblings": siblings,
        "usedStorage": sum(e.size for e in commit.tree.values()),
    }
    if repo_type == "model":
        out["modelId"] = repo_id
    card = card_of(store, commit)
    if card is not None:
        out["cardData"] = card
        out.update(card_summary(card))
    return out


def card_summary(card: dict[str, Any] | None) -> dict[str, Any]:
    """The card's tags, `library_name` and `pipeline_tag`, as the Hub shows them beside a repo."""
    out: dict[str, Any] = {"tags": card_tags(card) if card else []}
    for field in CARD_FIELDS if card else ():
        if isinstance(card.get(field), str):
            out[field] = card[field]
    return out


def listed_card(store: RepoStore, repo_type: str, repo_id: str, head: str | None) -> dict[str, Any]:
    """What a listing shows of the card at `head` (worked out once per commit)."""
    if head is None:
        return card_summary(None)
    key = (repo_type, repo_id, head)
    with _LOCK:
        found = _LISTED.get(key)
    if found is None:
        try:
            found = card_summary(card_of(store, store.commit(repo_type, repo_id, head)))
        except HubError:  # the branch moved under the listing: no card to show
            found = card_summary(None)
        with _LOCK:
            if len(_LISTED) >= 4096:
                _LISTED.clear()
            _LISTED[key] = found
    return {**found, "tags": list(found["tags"])}


def card_of(store: RepoStore, commit: Commit) -> dict[str, Any] | None:
    """The metadata of the commit's README.md (read once per README blob)."""
    entry = commit.tree.get("README.md")
    if entry is None:
        return None
    with _LOCK:
        if entry.sha256 in _CARDS:
            return _CARDS[entry.sha256]
    text = store.text_of(entry)
    found = card_data(text) if text is not None else None
    with _LOCK:
        if len(_CARDS) >= 1024:
            _CARDS.clear()
        _CARDS[entry.sha256] = found
    return found


def listing(store: RepoStore, repo_type: str, author: str | None, search: str | None, public_only: bool,
            limit: int) -> list[dict[str, Any]]:
    """The repos of a type, newest first, as the Hub lists them (`author`, `search` in the name,
    any case); `public_only` for a caller without a token."""
    rows = store._q("SELECT id, private, created_at FROM repos WHERE type = ? ORDER BY created_at DESC, id",
                   (repo_type,))
    out = []
    for repo_id, private, created in rows:
        if (public_only and private) or (author and repo_id.split("/")[0].lower() != author.lower()):
            continue
        if search and search.lower() not in repo_id.lower():
            continue
        head = store.ref(repo_type, repo_id, "branch", DEFAULT_BRANCH)
        item: dict[str, Any] = {
            "_id": hashlib.sha1(f"{repo_type}/{repo_id}".encode()).hexdigest()[:24], "id": repo_id,
            "author": repo_id.split("/")[0], "private": bool(private), "createdAt": iso(created),
            "sha": head, "downloads": 0, "likes": 0, **listed_card(store, repo_type, repo_id, head),
        }
        if repo_type == "model":
            item["modelId"] = repo_id
        out.append(item)
        if len(out) >= limit:
            break
    return out
