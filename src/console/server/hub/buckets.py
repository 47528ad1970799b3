"""Buckets of the local Hub stand-in: a folder of plain files per bucket, and its path -> Xet index.

A bucket ``ns/name`` is the folder ``artifacts/hub.local/buckets/ns/name/`` (what a job's volume
mounts) plus rows in ``artifacts/hub.local/index.sqlite3`` (path, Xet hash, size, mtime: what the
bucket API lists and what clients download through Xet). The folder is the truth about contents: a
job writing into a read-write volume changes it directly, and :meth:`BucketStore.reconcile` brings
the index up to date (uploading new or changed files to the CAS) before anything is listed or
served. A file a client uploads is reconstructed from the CAS into the folder when the batch call
adds it.

Blocking (disk, SQLite, hf_xet): call from a worker thread, not the event loop.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from console import sqldb
from console.server import paths
from console.server.hub.xetcas import EMPTY_FILE_HASH, HASH_RE, CasStore
from console.server.jobs.wire import ApiError, iso

Uploader = Callable[[Path], tuple[str, int]]
"""Uploads a file to the CAS: its (Xet hash, size)."""
Downloader = Callable[[str, int, Path], None]
"""Reconstructs a CAS file (hash, size) into a path."""

_NAME_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def check_repo_id(repo_id: str, what: str = "bucket") -> str:
    """`ns/name` with the characters the Hub allows; anything else is a 400."""
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(
        p and len(p) <= 96 and set(p) <= _NAME_OK and p not in (".", "..") for p in parts
    ):
        raise ApiError(400, f"invalid {what} id {repo_id!r}: expected namespace/name")
    return repo_id


def within(folder: Path, target: Path) -> bool:
    """Whether `target` (symlinks resolved) is inside `folder`: a job may leave symlinks in a
    read-write volume, and the server (which runs outside any sandbox) must not follow them out."""
    root = os.path.realpath(folder)
    return os.path.realpath(target).startswith(root + os.sep)


def check_path(path: str) -> str:
    """A file path inside a bucket: relative, no '..', no empty part."""
    parts = path.split("/")
    if not path or path.startswith("/") or "\0" in path or any(p in ("", ".", "..") for p in parts):
        raise ApiError(400, f"invalid path in bucket: {path!r}")
    return path


@dataclass
class FileRow:
    path: str
    xet_hash: str
    size: int
    mtime_ms: int
    uploaded_at: float

    def json(self) -> dict[str, Any]:
        return {
            "type": "file", "path": self.path, "size": self.size, "xetHash": self.xet_hash,
            "mtime": iso(self.mtime_ms / 1000), "uploadedAt": iso(self.uploaded_at),
        }


class BucketStore:
    """Every bucket of the local Hub stand-in (one SQLite index, one folder per bucket)."""

    def __init__(self, root: Path, cas: CasStore) -> None:
        self.root = root
        self.cas = cas
        self._db = sqldb.connect(root / "index.sqlite3", threads=True)
        self._db.executescript(
            """
            CREATE TABLE IF NOT EXISTS buckets (id TEXT PRIMARY KEY, private INTEGER, created_at REAL);
            CREATE TABLE IF NOT EXISTS files (
                bucket TEXT, path TEXT, xet_hash TEXT, size INTEGER, mtime_ms INTEGER,
                mtime_ns INTEGER, uploaded_at REAL, PRIMARY KEY (bucket, path));
            """
        )
        self._lock = threading.Lock()
        self._bucket_locks: dict[str, threading.Lock] = {}

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _q(self, sql: str, args: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, tuple(args)).fetchall()

    def folder(self, bucket_id: str) -> Path:
        return self.root / "buckets" / check_repo_id(bucket_id)

    def bucket_lock(self, bucket_id: str) -> threading.Lock:
        with self._lock:
            return self._bucket_locks.setdefault(bucket_id, threading.Lock())

    # -- buckets -------------------------------------------------------------------------

    def exists(self, bucket_id: str) -> bool:
        return bool(self._q("SELECT 1 FROM buckets WHERE id = ?", (bucket_id,)))

    def create(self, bucket_id: str, private: bool) -> bool:
        """Create a bucket; False if it already exists."""
        folder = self.folder(bucket_id)
        with self._lock:
            cur = self._db.execute(
                "INSERT OR IGNORE INTO buckets (id, private, created_at) VALUES (?, ?, ?)",
                (bucket_id, int(private), time.time()),
            )
        folder.mkdir(parents=True, exist_ok=True)
        return cur.rowcount == 1

    def require(self, bucket_id: str) -> None:
        if not self.exists(check_repo_id(bucket_id)):
            raise ApiError(404, f"bucket {bucket_id!r} not found", "RepoNotFound")

    def info(self, bucket_id: str) -> dict[str, Any]:
        rows = self._q("SELECT private, created_at FROM buckets WHERE id = ?", (bucket_id,))
        if not rows:
            raise ApiError(404, f"bucket {bucket_id!r} not found", "RepoNotFound")
        size, count = self._q("SELECT COALESCE(SUM(size), 0), COUNT(*) FROM files WHERE bucket = ?", (bucket_id,))[0]
        return {
            "id": bucket_id, "name": bucket_id.split("/", 1)[1], "private": bool(rows[0][0]),
            "createdAt": iso(rows[0][1]), "size": size, "totalFiles": count,
        }

    def list(self, namespace: str, search: str | None = None) -> list[dict[str, Any]]:
        """The namespace's buckets; with `search`, those whose name contains it (any case)."""
        ids = [r[0] for r in self._q("SELECT id FROM buckets WHERE id LIKE ? ORDER BY id", (f"{namespace}/%",))]
        if search:
            ids = [i for i in ids if search.lower() in i.split("/", 1)[1].lower()]
        return [self.info(i) for i in ids]

    def delete(self, bucket_id: str) -> None:
        self.require(bucket_id)
        with self._lock:
            self._db.execute("DELETE FROM files WHERE bucket = ?", (bucket_id,))
            self._db.execute("DELETE FROM buckets WHERE id = ?", (bucket_id,))
        shutil.rmtree(self.folder(bucket_id), ignore_errors=True)

    def set_private(self, bucket_id: str, private: bool) -> None:
        self.require(bucket_id)
        with self._lock:
            self._db.execute("UPDATE buckets SET private = ? WHERE id = ?", (int(private), bucket_id))

    def move(self, from_id: str, to_id: str, namespace: str) -> None:
        """Rename a bucket within `namespace` (its folder and index go with it); 409 if `to_id` exists."""
        for field, bid in (("fromRepo", from_id), ("toRepo", to_id)):
            if bid.split("/")[0] != namespace:
                raise ApiError(403, f"{field}: namespace {bid.split('/')[0]!r} is not served here: this local "
                               f"server holds {namespace!r}'s buckets")
        self.require(from_id)
        if from_id == to_id:
            return
        first, second = sorted((from_id, to_id))  # one order, so two moves cannot wait on each other
        with self.bucket_lock(first), self.bucket_lock(second):
            if self.exists(to_id):
                raise ApiError(409, f"A bucket called {to_id} already exists")
            old, new = self.folder(from_id), self.folder(to_id)
            new.parent.mkdir(parents=True, exist_ok=True)
            if old.exists():
                os.replace(old, new)
            else:
                new.mkdir(exist_ok=True)
            with self._lock:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.execute("UPDATE buckets SET id = ? WHERE id = ?", (to_id, from_id))
                    self._db.execute("UPDATE files SET bucket = ? WHERE bucket = ?", (to_id, from_id))
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    if new.exists() and not old.exists():
                        os.replace(new, old)
                    raise

    # -- files ---------------------------------------------------------------------------

    def _row(self, bucket_id: str, path: str) -> FileRow | None:
        rows = self._q(
            "SELECT path, xet_hash, size, mtime_ms, uploaded_at FROM files WHERE bucket = ? AND path = ?",
            (bucket_id, path),
        )
        return FileRow(*rows[0]) if rows else None

    def file(self, bucket_id: str, path: str) -> FileRow:
        row = self._row(bucket_id, check_path(path))
        if row is None:
            raise ApiError(404, f"{path!r} not found in bucket {bucket_id!r}")
        return row

    def _index(self, bucket_id: str, path: str, xet_hash: str, size: int, mtime_ms: int, mtime_ns: int) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?)",
                (bucket_id, path, xet_hash, size, mtime_ms, mtime_ns, time.time()),
            )

    def reconcile(self, bucket_id: str, upload: Uploader) -> None:
        """Bring the index up to date with the folder: files a job wrote, changed or removed."""
        folder = self.folder(bucket_id)
        with self.bucket_lock(bucket_id):
            rows = self._q("SELECT path, size, mtime_ns FROM files WHERE bucket = ?", (bucket_id,))
            known = {r[0]: (r[1], r[2]) for r in rows}
            seen = set()
            for dirpath, dirnames, filenames in os.walk(folder):
                dirnames[:] = [d for d in dirnames if not d.startswith(".console-")]
                for name in filenames:
                    full = Path(dirpath) / name
                    rel = full.relative_to(folder).as_posix()
                    try:
                        st = full.lstat()
                    except OSError:
                        continue
                    if not full.is_file() or full.is_symlink():
                        continue
                    seen.add(rel)
                    if known.get(rel) == (st.st_size, st.st_mtime_ns):
                        continue
                    xet_hash, size = upload(full) if st.st_size else (EMPTY_FILE_HASH, 0)
                    self._index(bucket_id, rel, xet_hash, size, st.st_mtime_ns // 1_000_000, st.st_mtime_ns)
            gone = [p for p in known if p not in seen]
            with self._lock:
                self._db.executemany("DELETE FROM files WHERE bucket = ? AND path = ?", [(bucket_id, p) for p in gone])

    def tree(self, bucket_id: str, prefix: str, recursive: bool) -> list[dict[str, Any]]:
        prefix = prefix.strip("/")
        rows = [FileRow(*r) for r in self._q(
            "SELECT path, xet_hash, size, mtime_ms, uploaded_at FROM files WHERE bucket = ? ORDER BY path",
            (bucket_id,),
        )]
        base = f"{prefix}/" if prefix else ""
        out: list[dict[str, Any]] = []
        folders: dict[str, float] = {}
        for row in rows:
            if row.path == prefix:
                out.append(row.json())
                continue
            if not row.path.startswith(base):
                continue
            rest = row.path[len(base):]
            if recursive or "/" not in rest:
                out.append(row.json())
            else:
                name = base + rest.split("/", 1)[0]
                folders[name] = max(folders.get(name, 0.0), row.uploaded_at)
        out += [{"type": "directory", "path": p, "uploadedAt": iso(t)} for p, t in sorted(folders.items())]
        return out

    def paths_info(self, bucket_id: str, wanted: list[str]) -> list[dict[str, Any]]:
        out = []
        for path in wanted:
            row = self._row(bucket_id, path) if isinstance(path, str) else None
            if row is not None:
                out.append(row.json())
        return out

    # -- batch ---------------------------------------------------------------------------

    def apply_batch(self, bucket_id: str, ops: list[dict[str, Any]], download: Downloader,
                    repo_exists: Callable[[str, str], bool] = lambda _type, _id: False) -> list[dict[str, Any]]:
        """Apply addFile / copyFile / deleteFile operations; the failed ones, with why. A copyFile
        names its source (`sourceRepoType` bucket, model, dataset or space, and `sourceRepoId`): a bucket
        must hold a file of that `xetHash`, a repo (`repo_exists`) must exist."""
        folder = self.folder(bucket_id)
        failed: list[dict[str, Any]] = []
        with self.bucket_lock(bucket_id):
            for op in ops:
                path = op.get("path") if isinstance(op, dict) else None
                try:
                    kind = op.get("type") if isinstance(op, dict) else None
                    if not isinstance(path, str):
                        raise ApiError(400, "operation without a path")
                    check_path(path)
                    if kind == "copyFile":
                        self._check_source(path, op, repo_exists)
                    if kind in ("addFile", "copyFile"):
                        self._add(bucket_id, folder, path, op, download)
                    elif kind == "deleteFile":
                        self._delete(bucket_id, folder, path)
                    else:
                        raise ApiError(400, f"unknown operation type {kind!r}")
                except ApiError as exc:
                    failed.append({"path": path, "error": exc.message})
                except OSError as exc:
                    failed.append({"path": path, "error": f"could not write the file: {exc}"})
        return failed

    def _check_source(self, path: str, op: dict[str, Any], repo_exists: Callable[[str, str], bool]) -> None:
        kind, source = op.get("sourceRepoType"), op.get("sourceRepoId")
        if kind not in ("bucket", "model", "dataset", "space"):
            raise ApiError(400, f"{path}: copyFile needs sourceRepoType (bucket, model, dataset or space), "
                           f"got {str(kind)[:40]!r}")
        if not isinstance(source, str) or not source:
            raise ApiError(400, f"{path}: copyFile needs sourceRepoId (namespace/name)")
        check_repo_id(source, f"sourceRepoId {kind}")
        xet_hash = str(op.get("xetHash") or "").lower()
        if kind != "bucket":
            if not repo_exists(kind, source):
                raise ApiError(404, f"{path}: sourceRepoId: {kind} repository {source!r} not found")
            return
        if not self.exists(source):
            raise ApiError(404, f"{path}: sourceRepoId: bucket {source!r} not found")
        if not self._q("SELECT 1 FROM files WHERE bucket = ? AND xet_hash = ? LIMIT 1", (source, xet_hash)):
            raise ApiError(404, f"{path}: xetHash: no file of bucket {source!r} has the Xet hash {xet_hash[:64]!r}")

    def _add(self, bucket_id: str, folder: Path, path: str, op: dict[str, Any], download: Downloader) -> None:
        xet_hash = str(op.get("xetHash") or "").lower()
        if not HASH_RE.match(xet_hash):
            raise ApiError(400, f"{path}: missing or malformed xetHash")
        size = self.cas.file_size(xet_hash)
        if size is None:
            raise ApiError(400, f"{path}: Xet file {xet_hash} was never uploaded to this server")
        target = folder / path
        if target.is_dir():
            raise ApiError(409, f"{path}: a folder of that name exists in the bucket")
        target.parent.mkdir(parents=True, exist_ok=True)
        if not within(folder, target.parent / "x") or target.is_symlink():
            raise ApiError(400, f"{path}: leads out of the bucket (a symlink in its folder)")
        tmp = folder.parent / f".console-incoming-{os.getpid()}-{threading.get_ident()}"
        try:
            if size:
                download(xet_hash, size, tmp)
            else:
                tmp.write_bytes(b"")
            mtime = op.get("mtime")
            if isinstance(mtime, (int, float)) and mtime > 0:
                os.utime(tmp, ns=(int(mtime * 1_000_000), int(mtime * 1_000_000)))
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        st = target.stat()
        self._index(bucket_id, path, xet_hash, size, st.st_mtime_ns // 1_000_000, st.st_mtime_ns)

    def _delete(self, bucket_id: str, folder: Path, path: str) -> None:
        target = folder / path
        if not within(folder, target.parent / "x"):
            raise ApiError(400, f"{path}: leads out of the bucket (a symlink in its folder)")
        if target.is_file() or target.is_symlink():
            target.unlink()
        with self._lock:
            self._db.execute("DELETE FROM files WHERE bucket = ? AND path = ?", (bucket_id, path))
        parent = target.parent
        while parent != folder and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent


class LocalHub:
    """The local Hub stand-in's Xet store and buckets, opened on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cas: CasStore | None = None
        self._buckets: BucketStore | None = None
        self._repos: Any = None

    @property
    def cas(self) -> CasStore:
        with self._lock:
            if self._cas is None:
                self._cas = CasStore(paths.hub_dir() / "xet")
            return self._cas

    @property
    def buckets(self) -> BucketStore:
        cas = self.cas
        with self._lock:
            if self._buckets is None:
                self._buckets = BucketStore(paths.hub_dir(), cas)
            return self._buckets

    def repo_store(self, make: Callable[[CasStore], Any]) -> Any:
        """The model and dataset repo store (:class:`console.server.hub.repos.RepoStore`), made by
        `make` on first use and closed with the hub."""
        cas = self.cas
        with self._lock:
            if self._repos is None:
                self._repos = make(cas)
            return self._repos

    def close(self) -> None:
        with self._lock:
            if self._buckets is not None:
                self._buckets.close()
                self._buckets = None
            if self._repos is not None:
                self._repos.close()
                self._repos = None
