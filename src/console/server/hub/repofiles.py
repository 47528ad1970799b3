"""The files of a repo commit: its tree (path -> blob), the paths a repo may hold, and the listings
(tree, paths-info) read from a commit's index, which is built once per commit: a commit never
changes, so a read costs the same in a repo of one file and of ten thousand.

Also the checkout a job's volume mounts (the default branch as links to the blobs), brought from
one tree to the next by the files that differ."""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import shutil
import threading
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import formatdate
from functools import cached_property
from pathlib import Path
from typing import Any

from starlette.responses import FileResponse, Response

from console.server.jobs.wire import ApiError

MAX_NAME_BYTES = 255
"""The longest file or folder name (UTF-8 bytes) a repo holds: what Linux filesystems store."""
MAX_PATH_BYTES = 1024
"""The longest path a repo holds (its checkout sits under the data folder, within PATH_MAX)."""
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Characters that reorder the text around them (a name that displays as another name)."""

class HubError(ApiError):
    """An ApiError with the Hub's `X-Error-Code` (RepoNotFound, RevisionNotFound, EntryNotFound)."""

    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(status, message, code)


XetOf = Callable[[str], "str | None"]
"""The Xet hash of an LFS blob (by its SHA-256), where the Xet store has one."""


def git_blob_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


@dataclass(frozen=True)
class Entry:
    """A file of a tree: its blob (SHA-256 of the bytes), size, git oid and whether it is LFS."""

    sha256: str
    size: int
    oid: str
    lfs: bool

    def json(self, path: str, xet_of: XetOf | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "file", "oid": self.oid, "size": self.size, "path": path}
        if self.lfs:
            out["lfs"] = {"oid": self.sha256, "size": self.size,
                          "pointerSize": len(lfs_pointer(self.sha256, self.size))}
            xet_hash = xet_of(self.sha256) if xet_of is not None else None
            if xet_hash is not None:
                out["xetHash"] = xet_hash
        return out


Tree = dict[str, Entry]


@dataclass(frozen=True)
class Commit:
    oid: str
    parent: str | None
    title: str
    message: str
    created_at: float
    tree: Tree

    @cached_property
    def paths(self) -> list[str]:
        """The tree's paths, sorted (built on first use, kept with the commit)."""
        return sorted(self.tree)

    @cached_property
    def folders(self) -> list[str]:
        """Every folder of the tree, sorted."""
        found: set[str] = set()
        for path in self.tree:
            cut = path.rfind("/")
            while cut > 0 and path[:cut] not in found:
                found.add(path[:cut])
                cut = path.rfind("/", 0, cut)
        return sorted(found)

    @cached_property
    def children(self) -> dict[str, tuple[list[str], list[str]]]:
        """Folder ("" for the root) -> (its folders, its files), each sorted."""
        out: dict[str, tuple[list[str], list[str]]] = {"": ([], [])}
        for folder in self.folders:
            out[folder] = ([], [])
        for folder in self.folders:
            out[folder.rpartition("/")[0]][0].append(folder)
        for path in self.paths:
            out[path.rpartition("/")[0]][1].append(path)
        return out

    def has_folder(self, path: str) -> bool:
        return path in self.children

    def under(self, sorted_items: list[str], base: str) -> list[str]:
        """The items of a sorted list that start with `base` (all of them for "")."""
        if not base:
            return sorted_items
        lo = bisect.bisect_left(sorted_items, base)
        hi = bisect.bisect_left(sorted_items, base[:-1] + chr(ord(base[-1]) + 1))
        return sorted_items[lo:hi]


def tree_dump(tree: Tree) -> str:
    return json.dumps({p: [e.sha256, e.size, e.oid, e.lfs] for p, e in sorted(tree.items())})


def tree_load(text: str) -> Tree:
    return {p: Entry(v[0], v[1], v[2], bool(v[3])) for p, v in json.loads(text).items()}


def check_repo_path(path: str, field: str = "path") -> str:
    """A file path in a repo: relative, no empty, `.` or `..` part, and not leading up from its
    start with a Windows separator either (`..\\x`); anything else is a 422, as on the Hub (which
    keeps a backslash later in a name as a character of it)."""
    parts = path.split("/")
    if not path or path.startswith("/") or "\0" in path or any(p in ("", ".", "..") for p in parts) \
            or path.startswith(("..\\", ".\\", "\\")):
        raise ApiError(422, f"{field}: invalid path {path[:200]!r}")
    return path


def check_storable_path(path: str, field: str = "path") -> str:
    """A path this server can hold and show for what it is, else a 400 naming it: no name over
    255 bytes, no control character, no bidi control, no `.git` folder or file, no blank name."""
    why = None
    for part in path.split("/"):
        if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            why = f"the name {part[:40]!r}... is over {MAX_NAME_BYTES} bytes"
        elif part.strip() == "":
            why = "a file or folder name is blank"
        elif part.lower() == ".git":
            why = "a .git folder or file is not stored in a repo"
        if why:
            break
    if why is None:
        if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in path):
            why = "it holds a control character"
        elif any(ch in BIDI_CONTROLS for ch in path):
            why = "it holds a bidirectional text control (the name would display as another)"
        elif len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
            why = f"the path is over {MAX_PATH_BYTES} bytes"
    if why:
        raise ApiError(400, f"{field}: path {path[:200]!r} refused: {why}")
    return path


def tree_listing(commit: Commit, prefix: str, recursive: bool, xet_of: XetOf | None = None) -> list[dict[str, Any]]:
    """The tree answer at `prefix`: its folders, then its files (all below it if `recursive`)."""
    prefix = prefix.strip("/")
    if prefix and prefix in commit.tree:
        return [commit.tree[prefix].json(prefix, xet_of)]
    if prefix and not commit.has_folder(prefix):
        raise HubError(404, f"{prefix[:200]!r} not found at revision {commit.oid}", "EntryNotFound")
    if recursive:
        base = f"{prefix}/" if prefix else ""
        folders, files = commit.under(commit.folders, base), commit.under(commit.paths, base)
    else:
        folders, files = commit.children[prefix]
    dirs = [{"type": "directory", "oid": hashlib.sha1(f"{commit.oid}:{p}".encode()).hexdigest(), "size": 0,
             "path": p} for p in folders]
    return dirs + [commit.tree[p].json(p, xet_of) for p in files]


def paths_info(commit: Commit, wanted: list[str], xet_of: XetOf | None = None) -> list[dict[str, Any]]:
    out = []
    for path in wanted:
        path = path.strip("/")
        if path in commit.tree:
            out.append(commit.tree[path].json(path, xet_of))
        elif path and commit.has_folder(path):
            out.append({"type": "directory", "oid": hashlib.sha1(f"{commit.oid}:{path}".encode()).hexdigest(),
                        "size": 0, "path": path})
    return out


def check_out(folder: Path, tree: Tree, blob_path: Callable[[str], Path], before: Tree | None = None) -> None:
    """Make `folder` hold `tree`, as links to the blobs where the filesystem allows (each file
    replaced atomically). With `before` (the tree the folder holds), only the files that differ
    are touched; without it, every file is, and files not in the tree are removed."""
    folder.mkdir(parents=True, exist_ok=True)
    if before is not None:
        for path in before.keys() - tree.keys():
            target = folder / path
            if target.is_file() or target.is_symlink():
                target.unlink()
            for parent in target.relative_to(folder).parents[:-1]:
                try:
                    (folder / parent).rmdir()
                except OSError:
                    break
    changed = tree.items() if before is None else [(p, e) for p, e in tree.items() if before.get(p) != e]
    for path, entry in changed:
        target = folder / path
        blob = blob_path(entry.sha256)
        for parent in reversed(target.relative_to(folder).parents[:-1]):
            p = folder / parent
            if p.is_symlink() or (p.exists() and not p.is_dir()):
                p.unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        try:
            if os.path.samefile(target, blob):
                continue
        except OSError:
            pass
        tmp = target.with_name(f".console-checkout-{os.getpid()}-{threading.get_ident()}")
        tmp.unlink(missing_ok=True)
        try:
            try:
                os.link(blob, tmp)
            except OSError:
                shutil.copyfile(blob, tmp)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    if before is not None:
        return
    for dirpath, dirnames, filenames in os.walk(folder, topdown=False):
        for name in filenames:
            full = Path(dirpath) / name
            if full.relative_to(folder).as_posix() not in tree:
                full.unlink()
        for name in dirnames:
            full = Path(dirpath) / name
            if full.is_symlink():
                full.unlink()
            elif not any(full.iterdir()):
                full.rmdir()


def ref_kinds(revision: str) -> tuple[str, tuple[str, ...]]:
    """The ref name a revision gives and the kinds of ref it may be: `refs/heads/x` a branch,
    `refs/tags/x` a tag, `refs/pr/N` a pull request, a bare name a branch, else a tag."""
    for prefix, kind in (("refs/heads/", "branch"), ("refs/tags/", "tag"), ("refs/pr/", "pr")):
        if revision.startswith(prefix):
            return revision[len(prefix):], (kind,)
    return revision, ("branch", "tag")


class BlobResponse(FileResponse):
    """A blob sent over HTTP in 1 MiB reads (Starlette's 64 KiB reads cost a thread hop each)."""

    chunk_size = 1 << 20


SMALL_BLOB = 64 << 10
"""A blob this size or under is read whole on the event loop (one read of the page cache): a
file's worker-thread hops (stat, open, read, close) cost more than the read itself, and a snapshot
of thousands of small files is mostly those hops."""


def blob_response(request: Any, path: Path, size: int, headers: dict[str, str]) -> Response:
    """The answer to a GET of a blob of `size` bytes at `path`: the bytes themselves when small and
    whole (no Range asked), else a `BlobResponse` that streams them and answers ranges."""
    if size > SMALL_BLOB or "range" in request.headers:
        return BlobResponse(path, headers=headers)
    with open(path, "rb") as f:
        modified = os.fstat(f.fileno()).st_mtime
        data = f.read()
    return Response(data, media_type="text/plain",
                    headers={"Last-Modified": formatdate(modified, usegmt=True), **headers})
