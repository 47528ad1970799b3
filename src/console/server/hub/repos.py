"""Model and dataset repos of the local Hub stand-in: commits of tree snapshots over a blob store.

A repo is a row of ``hub.local/repos.sqlite3``; each commit is a row holding its whole tree (path ->
blob SHA-256, size, git oid, whether the file is LFS) and its parent; branches and tags are refs to
commits. File contents live once each under ``hub.local/repos/blobs/<sha256>``, whatever repo or
revision names them. A regular file arrives base64 in the commit; an LFS file is uploaded to the Xet
CAS first (as the Hub has it) and the commit names it by SHA-256, which the CAS indexed from the
upload's shard: the server builds its blob from the CAS and checks the digest (see
:mod:`console.server.hub.blobs`). The default
branch is also checked out, as links to the blobs, in ``hub.local/{models,datasets}/<ns>/<name>/``:
the folder a job's model or dataset volume mounts.

Blocking (disk, SQLite, hf_xet): call from a worker thread, not the event loop.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import os
import re
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from console import sqldb
from console.server import paths
from console.server.hub.blobs import BlobStore, Reconstruct
from console.server.hub.buckets import LocalHub, check_repo_id
from console.server.hub.discussions import SCHEMA as DISCUSSIONS_SCHEMA
from console.server.hub.discussions import ref_key
from console.server.hub.repofiles import (
    Commit,
    Entry,
    HubError,
    Tree,
    check_out,
    check_repo_path,
    check_storable_path,
    git_blob_oid,
    lfs_pointer,
    paths_info,
    ref_kinds,
    tree_dump,
    tree_listing,
    tree_load,
)
from console.server.hub.repomatch import (
    GITATTRIBUTES,
    MAX_REGULAR_BYTES,
    check_ref_name,
    check_type,
    gitignore_matcher,
    lfs_matcher,
)
from console.server.hub.uploads import check_claim, check_room
from console.server.hub.xetcas import CasStore
from console.server.jobs.wire import ApiError

log = logging.getLogger(__name__)
_HEX = re.compile("[0-9a-f]+")
COMMIT_CACHE_FILES = 400_000
"""Tree entries of the commits kept parsed in memory (about 150 bytes each)."""

__all__ = ["Commit", "Entry", "HubError", "RepoStore", "Tree", "check_ref_name", "check_type", "open_repo_store"]

HUB_ORGS = ("console",)
"""Organizations whose repos this server holds beside its user's (as a Hub user's token writes to
the orgs they belong to): the console's own, where `console demo` puts the tiny base model
(`console/tiny-causal-lm`), the example tenants' datasets and their adapters, whatever the user's
name, so the example fleet file names the same repos on every machine."""
DEFAULT_BRANCH = "main"


class RepoStore(BlobStore):
    """Every model and dataset repo of the local Hub stand-in (one SQLite file, one blob store)."""

    def __init__(self, hub_root: Path, cas: CasStore, namespace: str) -> None:
        self.cas = cas
        self.namespace = namespace
        self.hub_root = hub_root
        self.blobs = hub_root / "repos" / "blobs"
        self.blobs.mkdir(parents=True, exist_ok=True)
        self._db = sqldb.connect(hub_root / "repos.sqlite3", threads=True)
        self._db.executescript(
            """
            CREATE TABLE IF NOT EXISTS repos (
                type TEXT, id TEXT, private INTEGER, created_at REAL, PRIMARY KEY (type, id));
            CREATE TABLE IF NOT EXISTS commits (
                type TEXT, repo TEXT, oid TEXT, parent TEXT, title TEXT, message TEXT,
                created_at REAL, tree TEXT, PRIMARY KEY (type, repo, oid));
            CREATE TABLE IF NOT EXISTS refs (
                type TEXT, repo TEXT, kind TEXT, name TEXT, oid TEXT, PRIMARY KEY (type, repo, kind, name));
            CREATE TABLE IF NOT EXISTS renames (
                type TEXT, old TEXT COLLATE NOCASE, new TEXT, PRIMARY KEY (type, old));
            """ + DISCUSSIONS_SCHEMA
        )
        self._lock = threading.RLock()
        self._cache_lock = threading.Lock()
        self._commits: OrderedDict[tuple[str, str, str], Commit] = OrderedDict()
        self._cached_files = 0
        self._checked_out: set[tuple[str, str]] = set()
        """Repos whose checkout this process made whole (later commits change it by difference)."""

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _rollback(self) -> None:
        """Undo the open transaction (SQLite has undone it itself after a full disk)."""
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")

    def _q(self, sql: str, args: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, tuple(args)).fetchall()

    # -- repos ---------------------------------------------------------------------------

    def exists(self, repo_type: str, repo_id: str) -> bool:
        return bool(self._q("SELECT 1 FROM repos WHERE type = ? AND id = ?", (repo_type, repo_id)))

    def canonical(self, repo_type: str, repo_id: str, follow_renames: bool = False) -> str | None:
        """The stored id of a repo named in any case (repo ids are case-insensitive on the Hub), or None.
        With `follow_renames`, an id a repo had before it was moved names it too (as the Hub
        redirects reads of a renamed repo)."""
        if self.exists(repo_type, repo_id):
            return repo_id
        rows = self._q("SELECT id FROM repos WHERE type = ? AND id = ? COLLATE NOCASE ORDER BY id LIMIT 1",
                       (repo_type, repo_id))
        if rows:
            return rows[0][0]
        if follow_renames:
            rows = self._q("SELECT new FROM renames WHERE type = ? AND old = ?", (repo_type, repo_id))
            if rows:
                return self.canonical(repo_type, rows[0][0])
        return None

    def require(self, repo_type: str, repo_id: str) -> None:
        if not self.exists(repo_type, repo_id):
            raise HubError(404, f"{repo_type} repository {repo_id!r} not found", "RepoNotFound")

    def create(self, repo_type: str, repo_id: str, private: bool) -> bool:
        """Create a repo with its first commit (a .gitattributes); False if it exists."""
        check_repo_id(repo_id, f"{repo_type} repo")
        if repo_id.split("/")[0] not in (self.namespace, *HUB_ORGS):
            raise ApiError(403, f"organization: {repo_id.split('/')[0]!r} is not served here: this local "
                           f"server holds {self.namespace!r}'s repos and {', '.join(map(repr, HUB_ORGS))}'s")
        data = GITATTRIBUTES.encode()
        sha = self._put_blob(data)
        tree = {".gitattributes": Entry(sha, len(data), git_blob_oid(data), False)}
        now = time.time()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                taken = self._db.execute("SELECT 1 FROM repos WHERE type = ? AND id = ? COLLATE NOCASE",
                                         (repo_type, repo_id)).fetchall()
                cur = None if taken else self._db.execute("INSERT OR IGNORE INTO repos VALUES (?, ?, ?, ?)",
                                                          (repo_type, repo_id, int(private), now))
                if cur is None or cur.rowcount != 1:
                    self._db.execute("ROLLBACK")
                    return False
                self._db.execute("DELETE FROM renames WHERE type = ? AND old = ?", (repo_type, repo_id))
                oid = self._insert_commit(repo_type, repo_id, None, "initial commit", "", now, tree)
                self._db.execute("INSERT INTO refs VALUES (?, ?, 'branch', ?, ?)",
                                 (repo_type, repo_id, DEFAULT_BRANCH, oid))
                self._db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
            self._check_out(repo_type, repo_id, tree)
        return True

    def delete(self, repo_type: str, repo_id: str) -> None:
        """Delete a repo, its commits and refs (blobs stay: another repo may name them)."""
        with self._lock:
            self.require(repo_type, repo_id)
            self._db.execute("BEGIN IMMEDIATE")
            for table, col in (("refs", "repo"), ("commits", "repo"), ("repos", "id"), ("renames", "new"),
                               ("discussions", "repo"), ("discussion_events", "repo")):
                self._db.execute(f"DELETE FROM {table} WHERE type = ? AND {col} = ?", (repo_type, repo_id))
            self._db.execute("COMMIT")
            shutil.rmtree(self.checkout_dir(repo_type, repo_id), ignore_errors=True)

    def set_private(self, repo_type: str, repo_id: str, private: bool) -> None:
        with self._lock:
            self.require(repo_type, repo_id)
            self._db.execute("UPDATE repos SET private = ? WHERE type = ? AND id = ?",
                             (int(private), repo_type, repo_id))

    def move(self, repo_type: str, from_id: str, to_id: str) -> None:
        """Rename a repo (its commits, refs and checkout go with it); 409 if `to_id` is taken."""
        check_repo_id(to_id, f"{repo_type} repo")
        if to_id.split("/")[0] not in (self.namespace, *HUB_ORGS):
            raise ApiError(403, f"toRepo: {to_id.split('/')[0]!r} is not served here: this local server holds "
                           f"{self.namespace!r}'s repos and {', '.join(map(repr, HUB_ORGS))}'s")
        with self._lock:
            self.require(repo_type, from_id)
            clash = self._db.execute("SELECT id FROM repos WHERE type = ? AND id = ? COLLATE NOCASE",
                                     (repo_type, to_id)).fetchall()
            if clash and [r[0] for r in clash] != [from_id]:
                raise ApiError(409, f"A {repo_type} repository called {to_id} already exists")
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for table, col in (("refs", "repo"), ("commits", "repo"), ("repos", "id"), ("discussions", "repo"),
                                   ("discussion_events", "repo")):
                    self._db.execute(f"UPDATE {table} SET {col} = ? WHERE type = ? AND {col} = ?",
                                     (to_id, repo_type, from_id))
                # reads of the old id (and of ids that led to it) now lead to the new one
                self._db.execute("DELETE FROM renames WHERE type = ? AND old = ?", (repo_type, to_id))
                self._db.execute("UPDATE renames SET new = ? WHERE type = ? AND new = ?", (to_id, repo_type, from_id))
                self._db.execute("INSERT OR REPLACE INTO renames VALUES (?, ?, ?)", (repo_type, from_id, to_id))
                self._db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
            old, new = self.checkout_dir(repo_type, from_id), self.checkout_dir(repo_type, to_id)
            if old.exists() and old != new:
                new.parent.mkdir(parents=True, exist_ok=True)
                shutil.rmtree(new, ignore_errors=True)
                os.replace(old, new)

    def private(self, repo_type: str, repo_id: str) -> bool:
        rows = self._q("SELECT private FROM repos WHERE type = ? AND id = ?", (repo_type, repo_id))
        return bool(rows and rows[0][0])

    def created_at(self, repo_type: str, repo_id: str) -> float:
        rows = self._q("SELECT created_at FROM repos WHERE type = ? AND id = ?", (repo_type, repo_id))
        return float(rows[0][0]) if rows else 0.0

    # -- revisions -----------------------------------------------------------------------

    def _insert_commit(self, repo_type: str, repo_id: str, parent: str | None, title: str, message: str,
                       now: float, tree: Tree) -> str:
        dumped = tree_dump(tree)
        oid = hashlib.sha1(json.dumps([repo_type, repo_id, parent, title, message, now, dumped]).encode()).hexdigest()
        self._db.execute("INSERT INTO commits VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         (repo_type, repo_id, oid, parent, title, message, now, dumped))
        return oid

    def commit(self, repo_type: str, repo_id: str, oid: str) -> Commit:
        """A commit, read and parsed once: a commit never changes, so it is kept (the most recently
        used ones, up to `COMMIT_CACHE_FILES` tree entries in all) with the index its reads build."""
        key = (repo_type, repo_id, oid)
        with self._cache_lock:
            found = self._commits.get(key)
            if found is not None:
                self._commits.move_to_end(key)
                return found
        rows = self._q("SELECT oid, parent, title, message, created_at, tree FROM commits "
                       "WHERE type = ? AND repo = ? AND oid = ?", (repo_type, repo_id, oid))
        if not rows:
            raise HubError(404, f"revision {oid!r} not found in {repo_id!r}", "RevisionNotFound")
        r = rows[0]
        made = Commit(r[0], r[1], r[2], r[3], r[4], tree_load(r[5]))
        with self._cache_lock:
            if key not in self._commits:
                self._commits[key] = made
                self._cached_files += len(made.tree) + 1
                while self._cached_files > COMMIT_CACHE_FILES and len(self._commits) > 1:
                    _, gone = self._commits.popitem(last=False)
                    self._cached_files -= len(gone.tree) + 1
            return self._commits[key]

    def ref(self, repo_type: str, repo_id: str, kind: str, name: str) -> str | None:
        rows = self._q("SELECT oid FROM refs WHERE type = ? AND repo = ? AND kind = ? AND name = ?",
                       (repo_type, repo_id, kind, name))
        return rows[0][0] if rows else None

    def resolve(self, repo_type: str, repo_id: str, revision: str) -> Commit:
        """The commit a branch, tag, `refs/heads/x`, `refs/tags/x`, `refs/pr/N` or commit oid names."""
        return self.commit(repo_type, repo_id, self.revision_oid(repo_type, repo_id, revision))

    def kept(self, repo_type: str, repo_id: str, revision: str) -> Commit | None:
        """`resolve` if its commit is kept (no tree to read: quick enough for the event loop), else None."""
        return self._commits.get((repo_type, repo_id, self.revision_oid(repo_type, repo_id, revision)))

    def revision_oid(self, repo_type: str, repo_id: str, revision: str) -> str:
        """The oid of the commit `revision` names (see `resolve`)."""
        name, kinds = ref_kinds(revision)
        # the repo and the refs the revision may name, in one query (a resolve asks this for every file)
        rows = self._q(
            f"SELECT f.kind, f.oid FROM repos r LEFT JOIN refs f ON f.type = r.type AND f.repo = r.id "
            f"AND f.name = ? AND f.kind IN ({', '.join('?' * len(kinds))}) WHERE r.type = ? AND r.id = ?",
            (name, *kinds, repo_type, repo_id))
        if not rows:
            raise HubError(404, f"{repo_type} repository {repo_id!r} not found", "RepoNotFound")
        found = {kind: oid for kind, oid in rows if kind is not None}
        for kind in kinds:
            if kind in found:
                return found[kind]
        hex_digits = _HEX.fullmatch(revision) is not None
        if len(revision) == 40 and hex_digits:
            return revision
        if 7 <= len(revision) < 40 and hex_digits:
            rows = self._q("SELECT oid FROM commits WHERE type = ? AND repo = ? AND substr(oid, 1, ?) = ? LIMIT 2",
                           (repo_type, repo_id, len(revision), revision))
            if len(rows) == 1:  # a commit's short id, as git takes it when it names one commit only
                return rows[0][0]
        raise HubError(404, f"revision {revision[:200]!r} not found in {repo_type} repo {repo_id!r}",
                       "RevisionNotFound")

    def history(self, repo_type: str, repo_id: str, revision: str) -> list[Commit]:
        """The commits reachable from `revision`, newest first."""
        out = [self.resolve(repo_type, repo_id, revision)]
        while out[-1].parent:
            out.append(self.commit(repo_type, repo_id, out[-1].parent))
        return out

    def create_ref(self, repo_type: str, repo_id: str, kind: str, name: str, revision: str) -> None:
        """A new branch or tag at `revision` (RevisionNotFound first, as on the Hub); 409 if one of
        that name exists."""
        with self._lock:
            target = self.resolve(repo_type, repo_id, revision)
            check_ref_name(name, "branch" if kind == "branch" else "tag")
            if self.ref(repo_type, repo_id, kind, name) is not None:
                full = f"refs/{'heads' if kind == 'branch' else 'tags'}/{name}"
                raise ApiError(409, f"Reference {full} already exists")
            self._db.execute("INSERT INTO refs VALUES (?, ?, ?, ?, ?)", (repo_type, repo_id, kind, name, target.oid))

    def delete_ref(self, repo_type: str, repo_id: str, kind: str, name: str) -> None:
        with self._lock:
            self.require(repo_type, repo_id)
            if kind == "branch" and name == DEFAULT_BRANCH:
                raise ApiError(403, f"Cannot delete refs/heads/{DEFAULT_BRANCH}: it is the default branch")
            if self.ref(repo_type, repo_id, kind, name) is None:
                what = "branch" if kind == "branch" else "tag"
                raise HubError(404, f"Invalid rev id: {name[:200]} (no {what} of that name)", "RevisionNotFound")
            self._db.execute("DELETE FROM refs WHERE type = ? AND repo = ? AND kind = ? AND name = ?",
                             (repo_type, repo_id, kind, name))

    # -- commits -------------------------------------------------------------------------

    def upload_modes(self, repo_type: str, repo_id: str, revision: str, files: Any,
                     gitignore: Any = None) -> dict[str, Any]:
        """The preupload answer: each file's upload mode and the oid it has at `revision`, as the Hub
        gives it: LFS for a big or binary file or one the branch's `.gitattributes` puts under
        `filter=lfs`; `shouldIgnore` for one that `gitignore` (the `.gitignore` the commit brings)
        or else the branch's `.gitignore` excludes."""
        if not isinstance(files, list):
            raise ApiError(400, 'files: the body must be {"files": [{"path", "size", "sample"}, ...]}')
        if gitignore is not None and not isinstance(gitignore, str):
            raise ApiError(400, "gitIgnore: expected the text of a .gitignore")
        tree = self._head_tree(repo_type, repo_id, revision)
        attributes = self.text_of(tree.get(".gitattributes")) if tree is not None else None
        in_lfs = lfs_matcher(GITATTRIBUTES if attributes is None else attributes)
        if gitignore is None and tree is not None:
            gitignore = self.text_of(tree.get(".gitignore"))
        ignored = gitignore_matcher(gitignore or "")
        out, need = [], 0
        for i, item in enumerate(files):
            if not isinstance(item, dict):
                raise ApiError(400, f"files[{i}]: expected an object")
            path, size, sample = item.get("path"), item.get("size"), item.get("sample", "")
            if not isinstance(path, str):
                raise ApiError(400, f"files[{i}].path: expected a string")
            check_repo_path(path, f"files[{i}].path")
            check_storable_path(path, f"files[{i}].path")
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise ApiError(400, f"files[{i}].size: expected a whole number of bytes")
            check_claim(size, f"files[{i}].size")
            try:
                head = base64.b64decode(sample or "", validate=True)
            except (binascii.Error, TypeError, ValueError):
                raise ApiError(400, f"files[{i}].sample: not base64") from None
            lfs = size >= MAX_REGULAR_BYTES or b"\0" in head or in_lfs(path)
            entry = tree.get(path) if tree is not None else None
            known = None if entry is None else (entry.sha256 if entry.lfs else entry.oid)
            out.append({"path": path, "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": ignored(path),
                        "oid": known})
            need += size
        check_room(self.hub_root, need)
        return {"files": out, "commitOid": None}

    def text_of(self, entry: Entry | None) -> str | None:
        """A small regular file's text (a .gitattributes or .gitignore), or None."""
        if entry is None or entry.lfs or entry.size > 1024 * 1024:
            return None
        try:
            return self.blob_path(entry.sha256).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def _head_tree(self, repo_type: str, repo_id: str, revision: str) -> Tree | None:
        """The tree of branch `revision`, or None for a branch that a commit would create."""
        self.require(repo_type, repo_id)
        oid = self.ref(repo_type, repo_id, *ref_key(revision))
        return None if oid is None else self.commit(repo_type, repo_id, oid).tree

    def apply_commit(self, repo_type: str, repo_id: str, branch: str, lines: list[Any],
                     reconstruct: Reconstruct) -> str:
        """Check every operation, then fetch the LFS blobs, then write the commit: its oid.

        Nothing is written (no ref moves) unless every operation is valid."""
        self.require(repo_type, repo_id)
        kind, branch = ref_key(branch)
        if not lines or not isinstance(lines[0], dict) or lines[0].get("key") != "header":
            raise ApiError(400, "header: the commit's first line must be {\"key\": \"header\", ...}")
        header = lines[0].get("value")
        if not isinstance(header, dict):
            raise ApiError(400, "header.value: expected an object")
        summary, description = header.get("summary"), header.get("description", "")
        if not isinstance(summary, str) or not summary.strip():
            raise ApiError(400, "header.summary: the commit message must be a non-empty string")
        if not isinstance(description, str):
            raise ApiError(400, "header.description: expected a string")
        parent_commit = header.get("parentCommit")
        adds: dict[str, tuple[bytes | None, Entry]] = {}
        deletes: list[tuple[str, bool]] = []
        for i, line in enumerate(lines[1:], start=1):
            key = line.get("key") if isinstance(line, dict) else None
            value = line.get("value") if isinstance(line, dict) else None
            if not isinstance(value, dict) or not isinstance(value.get("path"), str):
                raise ApiError(400, f"line {i}: value.path: expected {{\"key\", \"value\": {{\"path\", ...}}}}")
            path = value["path"]
            if key in ("deletedFile", "deletedFolder"):
                path = path.rstrip("/")  # a folder may be named with its trailing slash
            try:
                check_repo_path(path)
            except ApiError:
                raise ApiError(422, f"line {i}: value.path: invalid path {path[:200]!r}") from None
            if key in ("file", "lfsFile"):
                check_storable_path(path, f"line {i}: value.path")
            if key == "file":
                content = value.get("content")
                if not isinstance(content, str):
                    raise ApiError(400, f"line {i}: value.content: expected a string")
                if value.get("encoding", "utf-8") == "base64":
                    try:
                        data = base64.b64decode(content, validate=True)
                    except (binascii.Error, ValueError):
                        raise ApiError(400, f"line {i}: value.content: not base64") from None
                else:
                    data = content.encode()
                adds[path] = (data, Entry(hashlib.sha256(data).hexdigest(), len(data), git_blob_oid(data), False))
            elif key == "lfsFile":
                oid, size = value.get("oid"), value.get("size")
                if value.get("algo", "sha256") != "sha256" or not isinstance(oid, str) or len(oid) != 64 \
                        or any(c not in "0123456789abcdef" for c in oid):
                    raise ApiError(400, f"line {i}: value.oid: expected a SHA-256 in hex")
                if size is None and self.blob_path(oid).exists():
                    size = self.blob_path(oid).stat().st_size
                if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                    raise ApiError(400, f"line {i}: value.size: expected a whole number of bytes")
                check_claim(size, f"line {i}: value.size")
                adds[path] = (None, Entry(oid, size, git_blob_oid(lfs_pointer(oid, size)), True))
            elif key in ("deletedFile", "deletedFolder"):
                deletes.append((path, key == "deletedFolder"))
            else:
                raise ApiError(400, f"line {i}: key: unknown operation {str(key)[:40]!r}")
        for data, entry in adds.values():
            if data is None:
                self._fetch_lfs_blob(entry.sha256, entry.size, reconstruct)
            else:
                self._put_blob(data)
        with self._lock:
            head = self.ref(repo_type, repo_id, kind, branch)
            if head is None:
                raise HubError(404, f"branch {branch[:200]!r} not found in {repo_type} repo {repo_id!r}",
                               "RevisionNotFound")
            if parent_commit is not None and parent_commit != head:
                raise ApiError(412, "The branch was updated since you opened this page. Please refresh and try "
                               f"again. (parentCommit {str(parent_commit)[:60]} is not the head of {branch!r}: {head})")
            before = self.commit(repo_type, repo_id, head)
            tree = dict(before.tree)
            for path, _folder in deletes:
                # a deletedFile naming a folder deletes the folder, as on the Hub
                gone = [p for p in (path, *before.under(before.paths, path + "/")) if p in tree]
                if not gone:
                    raise HubError(404, f"{path[:200]!r} not found in {repo_id!r} at {branch!r}", "EntryNotFound")
                for p in gone:
                    del tree[p]
            folders = set(before.folders) if not deletes else \
                {p[:i] for p in tree for i, ch in enumerate(p) if ch == "/"}
            for path, (_, entry) in adds.items():
                parents = [path[:i] for i, ch in enumerate(path) if ch == "/"]
                if path in folders or any(p in tree for p in parents):
                    raise ApiError(409, f"{path[:200]!r}: a file and a folder of one name cannot both exist")
                folders.update(parents)
                tree[path] = entry
            # the checkout first, then the commit: a commit that fails leaves both as they were
            on_main = kind == "branch" and branch == DEFAULT_BRANCH
            if on_main:
                self._check_out(repo_type, repo_id, tree, before.tree)
            self._db.execute("BEGIN IMMEDIATE")
            try:
                oid = self._insert_commit(repo_type, repo_id, head, summary, description, time.time(), tree)
                self._db.execute("UPDATE refs SET oid = ? WHERE type = ? AND repo = ? AND kind = ? AND name = ?",
                                 (oid, repo_type, repo_id, kind, branch))
                self._db.execute("COMMIT")
            except BaseException:
                self._rollback()
                if on_main:
                    self._restore_checkout(repo_type, repo_id, before.tree, tree)
                raise
        return oid

    # -- the checkout that volumes mount -------------------------------------------------

    def checkout_dir(self, repo_type: str, repo_id: str) -> Path:
        """``hub.local/{models,datasets}/<ns>/<name>/``: the files of the default branch, what a
        job's ``hf://models/...`` or ``hf://datasets/...`` volume mounts."""
        return self.hub_root / f"{repo_type}s" / repo_id

    def _check_out(self, repo_type: str, repo_id: str, tree: Tree, before: Tree | None = None) -> None:
        """Make the checkout folder hold `tree` (from `before`, by the files that differ); if that
        fails (a full disk), it is brought back to `before` and the error raised."""
        key = (repo_type, repo_id)
        whole = key not in self._checked_out  # once per repo and process, then by difference
        try:
            check_out(self.checkout_dir(repo_type, repo_id), tree, self.blob_path, None if whole else before)
        except BaseException:
            if before is not None:
                self._restore_checkout(repo_type, repo_id, before, None)
            raise
        self._checked_out.add(key)

    def _restore_checkout(self, repo_type: str, repo_id: str, tree: Tree, now: Tree | None) -> None:
        self._checked_out.discard((repo_type, repo_id))
        try:
            check_out(self.checkout_dir(repo_type, repo_id), tree, self.blob_path, now)
        except OSError as exc:  # the next commit to the branch checks out its whole tree again
            log.warning("the checkout of %s %s could not be restored: %s", repo_type, repo_id, exc)

    # -- listing -------------------------------------------------------------------------

    def tree_listing(self, commit: Commit, prefix: str, recursive: bool, xet: bool = True) -> list[dict[str, Any]]:
        """The tree at `prefix`; an LFS file carries its `xetHash` (with `xet`) where the CAS has it."""
        return tree_listing(commit, prefix, recursive, self.cas.file_for_sha256 if xet else None)

    def paths_info(self, commit: Commit, wanted: list[str], xet: bool = True) -> list[dict[str, Any]]:
        return paths_info(commit, wanted, self.cas.file_for_sha256 if xet else None)

def open_repo_store(hub: LocalHub, namespace: str) -> RepoStore:
    """The hub's model and dataset repo store (opened on first use)."""
    return hub.repo_store(lambda cas: RepoStore(paths.hub_dir(), cas, namespace))
